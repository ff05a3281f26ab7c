#!/usr/bin/env python3
"""Memory of /mcp sessions: a release `botcraft serve` (forge servers from BINDIR), sessions
opened with `initialize` and left open, botcraft's RSS before and after. Three runs: a cap
above the count (2,000 and 10,000 sessions: memory per live session), and the default cap
(256 per bot) with 10,000 sessions (memory bounded).

    cargo build --release -p bot-craft && cargo build -p forge-bash -p forge-filesystem
    scripts/bench-mcp-sessions.py target/release/botcraft target/debug
"""
import http.client, json, os, re, subprocess, sys, tempfile, time


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])  # KiB

def run(cap, sessions, binary, bindir):
    data = tempfile.mkdtemp()
    env = {"PATH": os.environ["PATH"], "HOME": data, "BOTCRAFT_API_KEY": "mem-admin",
           "BOTCRAFT_BOT_KEYS": "forge=mem-bot-key", "BOTCRAFT_BIN_DIR": bindir,
           "BOTCRAFT_EMBEDDING_MODEL": "", "RUST_LOG": "warn",
           "BOTCRAFT_WORKSPACE_ROOT": data, "BOTCRAFT_REPO_ROOT": data}
    p = subprocess.Popen([binary, "serve", "--addr", "127.0.0.1:0", "--data-dir", data,
                          "--mcp-max-sessions-per-bot", str(cap)], env=env,
                         stderr=subprocess.PIPE, text=True)
    port = None
    for line in p.stderr:
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if m:
            port = int(m.group(1)); break
    body = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "m", "version": "0"}}})
    headers = {"Authorization": "Bearer mem-bot-key", "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}
    conn = http.client.HTTPConnection("127.0.0.1", port)
    def one():
        conn.request("POST", "/mcp", body, headers)
        r = conn.getresponse(); r.read()
        assert r.status == 200, r.status
    for _ in range(50):
        one()
    # A measurement pause, not a wait for an event: let the allocator and the session tasks
    # settle before RSS is read (the figure is documented as "1 s after the last one").
    time.sleep(1)
    before = rss(p.pid)
    for _ in range(sessions):
        one()
    time.sleep(1)
    after = rss(p.pid)
    p.terminate(); p.wait()
    return before, after

binary, bindir = sys.argv[1], sys.argv[2]
for cap, n in [(100000, 2000), (100000, 10000), (256, 10000)]:
    b, a = run(cap, n, binary, bindir)
    print(f"cap {cap}, {n} sessions opened and left: RSS {b/1024:.1f} MiB -> {a/1024:.1f} MiB, {(a-b)/n:.1f} KiB per session opened")
