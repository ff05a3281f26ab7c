#!/usr/bin/env python3
"""Run the BotCraft image (scripts/image.sh) with podman and check it from outside.

Each check prints `ok` or `FAIL` with what it saw; the run fails when any check fails.

1. The image's HEALTHCHECK passes and GET /api/health is healthy with the seeded servers
   (start-to-healthy time printed).
2. A chat through a scripted model (test-support's fake-llm, OpenAI wire format) finds and
   calls forge-bash's `run` (the seeded bot asks first: the test approves, as the chat page
   does), then forge-filesystem's `read_text_file` reads what the command wrote.
3. Playwright MCP in the image loads a page served from outside and takes a screenshot (a
   PNG, kept in target/image-artifacts/).
4. Every process: BotCraft (and tini) as uid 10001; every MCP server and what it runs as
   uid 10002 with no capability (inheritable, permitted, effective, ambient) left.
5. The attack suite's probes (apps/bot-craft/tests/suite/attack.rs), run by forge-bash and
   forge-filesystem in the container: the environment, /proc of PID 1 and of BotCraft (its
   environ and memory), the data folder and its key files, hard and symbolic links to them,
   a search of the readable file system. No secret in any output or in the container's log.
6. `podman stop` (SIGTERM) exits 0 within the drain time, the log says BotCraft stopped its
   servers, and no process of either user is left on the host (stop time printed).
7. A new container on the same volume keeps the servers, bots and keys made before.

Usage: scripts/image-test.sh [--image TAG] [--fake-llm PATH] [--env KEY=VALUE ...]
"""

import argparse
import base64
import http.server
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PODMAN = ["podman", "--runtime", "runc"]
# runc here wants explicit limits (../shared/DEPS.md).
LIMITS = ["--ulimit", "nofile=20000:20000", "--ulimit", "nproc=1000:1000"]
BOTCRAFT_UID = 10001
TOOL_UID = 10002
DATA = "/var/lib/botcraft"
# BotCraft's own shutdown budget (serve's --drain-seconds 10 + --stop-seconds 15) and a margin.
STOP_TIMEOUT = 40
LIMIT = 120  # seconds any single wait may take

failures = []


def say(line):
    print(line, flush=True)


def check(name, ok, detail=""):
    say(f"{'ok  ' if ok else 'FAIL'} {name}" + (f": {detail}" if detail else ""))
    if not ok:
        failures.append(name)
    return ok


def die_with_parent():
    """In a child before exec: SIGKILL when this script dies, however it dies."""
    import ctypes
    import signal
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def podman(*args, check_rc=True, timeout=LIMIT):
    done = subprocess.run(
        PODMAN + list(args), capture_output=True, text=True, timeout=timeout
    )
    if check_rc and done.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args)}: {done.returncode}: {done.stderr.strip()}")
    return done


class Api:
    def __init__(self, base, key):
        self.base = base
        self.key = key

    def send(self, method, path, body=None, key=None, timeout=LIMIT):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("authorization", f"Bearer {key or self.key}")
        if data is not None:
            request.add_header("content-type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as reply:
                return reply.status, reply.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def json(self, method, path, body=None, key=None):
        status, text = self.send(method, path, body, key)
        if status >= 300:
            raise RuntimeError(f"{method} {path}: {status} {text[:300]}")
        return json.loads(text) if text else None

    def call(self, server, tool, arguments):
        status, text = self.send(
            "POST", f"/api/servers/{server}/tools/{tool}/call", {"arguments": arguments}
        )
        return status, text

    def chat(self, body):
        status, text = self.send("POST", "/api/ai/chat", body)
        if status != 200:
            raise RuntimeError(f"chat: {status} {text[:300]}")
        chunks = []
        for line in text.splitlines():
            if line.startswith("data: ") and line != "data: [DONE]":
                chunks.append(json.loads(line[len("data: "):]))
        return chunks


def wait_for_line(process, pattern, what):
    """The first line of `process`'s stdout that matches (a readiness signal, not a timer)."""
    deadline = time.monotonic() + LIMIT
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"{what} ended before printing {pattern}")
        found = re.search(pattern, line)
        if found:
            return found
    raise RuntimeError(f"{what} did not print {pattern} within {LIMIT} s")


def health(api):
    try:
        status, text = api.send("GET", "/api/health", timeout=5)
    except OSError:
        return None
    return json.loads(text) if status in (200, 503) else None


class Container:
    """One `podman run` of the image on the volume, host network, BotCraft on `port`."""

    def __init__(self, image, name, volume, port, env):
        self.name = name
        args = ["run", "-d", "--name", name, *LIMITS, "--network", "host",
                "--stop-timeout", str(STOP_TIMEOUT), "-v", f"{volume}:{DATA}",
                "-e", f"BOTCRAFT_ADDR=127.0.0.1:{port}"]
        for key, value in env.items():
            args += ["-e", f"{key}={value}"]
        self.started = time.monotonic()
        podman(*args, image)

    def wait_healthy(self, api):
        """Seconds from `podman run` to the image's HEALTHCHECK passing and /api/health
        healthy with the seeded servers listed. BotCraft's log says when it listens; the
        health check itself is run by podman (`podman healthcheck run`)."""
        logs = subprocess.Popen(PODMAN + ["logs", "-f", self.name], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        try:
            wait_for_line(logs, r"botcraft: listening on", "botcraft serve")
        finally:
            logs.kill()
            logs.wait()
        # Listening: health answers now; the seeded servers' tools may still be listing
        # (a bounded wait on the server's own state).
        deadline = time.monotonic() + LIMIT
        report = health(api)
        while (report is None or report["status"] != "healthy"
               or report.get("toolsNotListed", 0) > 0) and time.monotonic() < deadline:
            time.sleep(0.2)  # polling BotCraft's own health report, bounded by LIMIT
            report = health(api)
        took = time.monotonic() - self.started
        hc = podman("healthcheck", "run", self.name, check_rc=False)
        return took, report, hc

    def processes(self):
        """(pid, uids, caps, cmdline) of every process in the container, read as root."""
        # The marker is made at run time, so this script's own command line does not hold it.
        script = ('M=@@; for d in /proc/[0-9]*; do [ -r "$d/status" ] || continue; '
                  'echo "$M$M ${d#/proc/}"; cat "$d/status"; echo "@cmd $(tr "\\0" " " < "$d/cmdline")"; '
                  'done 2>/dev/null')
        out = podman("exec", "--user", "0", self.name, "sh", "-c", script).stdout
        found = []
        for block in out.split("@@@@ ")[1:]:
            lines = block.splitlines()
            fields = dict(line.split(":", 1) for line in lines[1:] if ":" in line and not line.startswith("@cmd"))
            cmd = next((line[5:] for line in lines if line.startswith("@cmd ")), "").strip()
            uids = [int(u) for u in fields.get("Uid", "").split()]
            caps = {k: int(fields[k].strip(), 16) for k in ("CapInh", "CapPrm", "CapEff", "CapAmb") if k in fields}
            found.append((int(lines[0]), uids, caps, cmd, fields.get("Name", "").strip()))
        return found

    def logs(self):
        done = podman("logs", self.name, check_rc=False)
        return done.stdout + done.stderr

    def remove(self):
        podman("rm", "-f", "-t", "0", self.name, check_rc=False)


def serve_page(folder):
    """A page for Playwright, served from the host on 127.0.0.1."""
    (folder / "index.html").write_text(
        "<!doctype html><title>botcraft image page</title>"
        "<h1 style='font-size:64px;color:#0a6'>Seen from the image</h1>"
    )
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(folder), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def text_of(result_json):
    """The text content of a tools/call answer of the admin API."""
    try:
        result = json.loads(result_json)
    except ValueError:
        return result_json
    parts = result.get("content", []) if isinstance(result, dict) else []
    return "\n".join(p.get("text", "") for p in parts if p.get("type") == "text") or result_json


def ui_parts(chunks, approved):
    """The assistant message an AI SDK client keeps from a turn's chunks, with every call
    that asked for approval answered `approved`."""
    parts, by_id = [], {}
    for chunk in chunks:
        kind = chunk.get("type")
        if kind == "start-step":
            parts.append({"type": "step-start"})
        elif kind == "tool-input-available":
            part = {"type": "dynamic-tool", "toolName": chunk["toolName"],
                    "toolCallId": chunk["toolCallId"], "state": "input-available",
                    "input": chunk["input"]}
            by_id[chunk["toolCallId"]] = part
            parts.append(part)
        elif kind == "tool-output-available":
            part = by_id[chunk["toolCallId"]]
            part.update(state="output-available", output=chunk["output"])
        elif kind == "tool-approval-request":
            part = by_id[chunk["toolCallId"]]
            part.update(state="approval-responded",
                        approval={"id": chunk["approvalId"], "approved": approved})
    return parts


def outputs(chunks):
    return {c["toolCallId"]: json.dumps(c["output"]) for c in chunks
            if c.get("type") == "tool-output-available"}


# Sets P to BotCraft's pid: up the command's ancestors (forge-bash's keeper, forge-bash,
# BotCraft) to the first named `botcraft` (as apps/bot-craft/tests/suite/attack.rs does).
FIND_BOTCRAFT = ('P=$PPID; while [ "$P" -gt 1 ] && [ "$(cat /proc/$P/comm)" != botcraft ]; '
                 "do P=$(cut -d' ' -f4 /proc/$P/stat); done")


def probes(base):
    """The attack suite's probes, for the image's paths, each run as the tool user:
    (name, server, tool, arguments, a text the answer must hold: the refusal)."""
    mem = (f"{FIND_BOTCRAFT}; A=$(grep -m1 heap /proc/$P/maps | cut -d- -f1); "
           "dd if=/proc/$P/mem bs=4096 skip=$((0x${A:-0}/4096)) count=512 2>&1 "
           "| tr -c '[:print:]' '\\n' | grep -aE 'sk-|bck_|canary' | head")

    def run(name, command, expect=""):
        return (name, "forge-bash", "run", {"command": command}, expect)

    denied = "Permission denied"
    return [
        run("env", "env", "PATH="),
        run("printenv", "printenv", "PATH="),
        run("PID 1's environ (tini)", "cat /proc/1/environ | tr '\\0' '\\n'", denied),
        run("the parent's environ (forge-bash's keeper)", "cat /proc/$PPID/environ | tr '\\0' '\\n'"),
        run("botcraft's environ", f"{FIND_BOTCRAFT}; echo pid=$P; cat /proc/$P/environ", denied),
        run("botcraft's memory", mem, denied),
        run("signal botcraft", f"{FIND_BOTCRAFT}; kill -STOP $P; echo rc=$?", "rc=1"),
        run("list the data folder", f"ls -la {DATA}", denied),
        run("the data folder's key file", f"cat {DATA}/api-key", denied),
        run("the sealing and signing key", f"cat {DATA}/secret.key", denied),
        run("the database", f"head -c 200 {DATA}/botcraft.db", denied),
        run("a hard link to the key file", f"ln {DATA}/secret.key stolen; cat stolen", denied),
        run("a symbolic link to the key file", f"ln -sf {DATA}/secret.key linked-key; cat linked-key", denied),
        ("the file tools through that link", "forge-filesystem", "read_text_file", {"path": "linked-key"}, ""),
        ("the file tools outside the workspace", "forge-filesystem", "read_text_file",
         {"path": f"{DATA}/secret.key"}, "outside"),
        run("the deployment's variables file", "tr '\\0' '\\n' < /run/botcraft/deployment.env"),
        run("every readable file holding a given key",
            "echo found $(grep -rIlE 'sk-image-canary-|sk-ant-image-canary-|bck_canary_admin_' "
            "/etc /home /run /tmp /var /workspace /root /opt /usr/local 2>/dev/null | wc -l) files",
            "found 0 files"),
        run("reconfigure BotCraft over HTTP",
            f"curl -s -o /dev/null -w 'status %{{http_code}}' -X POST {base}/api/servers "
            "-H 'content-type: application/json' -d '{\"name\": \"evil\", \"command\": \"/bin/sh\"}'",
            "status 401"),
        run("/mcp from a foreign Origin",
            f"curl -s -o /dev/null -w 'status %{{http_code}}' -X POST {base}/mcp "
            "-H 'Origin: http://evil.example' -H 'content-type: application/json' -d '{}'",
            "status 403"),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", default=os.environ.get("BOTCRAFT_IMAGE", "localhost/botcraft:latest"))
    parser.add_argument("--fake-llm", default=os.environ.get("FAKE_LLM_BIN", str(ROOT / "target/debug/fake-llm")))
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="one more variable for the container (to see a check fail, e.g. "
                             "BOTCRAFT_TOOL_USER= runs the tools as BotCraft's user)")
    args = parser.parse_args()

    artifacts = ROOT / "target/image-artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="botcraft-image-test."))
    tag = secrets.token_hex(4)
    name, volume = f"botcraft-image-test-{tag}", f"botcraft-image-test-{tag}"
    # Canaries: every secret the container is given.
    admin_key = f"bck_canary_admin_{secrets.token_hex(12)}"
    openai_key = f"sk-image-canary-{secrets.token_hex(12)}"
    anthropic_key = f"sk-ant-image-canary-{secrets.token_hex(12)}"
    size = int(podman("image", "inspect", "--format", "{{.Size}}", args.image).stdout.strip())
    say(f"image {args.image}: {size / 1024 / 1024:.0f} MiB")

    script = [
        {"toolCalls": [{"id": "search-1", "name": "tool_search",
                        "arguments": json.dumps({"query": "run a shell command"})}]},
        {"toolCalls": [{"id": "bash-1", "name": "forge-bash__run", "arguments": json.dumps(
            {"command": "echo written-by-bash > image-test.txt; id -u; id -g; "
                        "grep -E '^Cap(Inh|Prm|Eff|Amb)' /proc/self/status"})}]},
        {"toolCalls": [{"id": "search-2", "name": "tool_search",
                        "arguments": json.dumps({"query": "read a text file"})}]},
        {"toolCalls": [{"id": "fs-1", "name": "forge-filesystem__read_text_file",
                        "arguments": json.dumps({"path": "image-test.txt"})}]},
        {"text": "The file says written-by-bash."},
    ]
    (work / "script.json").write_text(json.dumps(script))
    llm = subprocess.Popen([args.fake_llm, str(work / "script.json"), str(work / "requests.jsonl")],
                           stdout=subprocess.PIPE, text=True, preexec_fn=die_with_parent)
    page = serve_page(work)
    containers = []
    try:
        openai_base = wait_for_line(llm, r"listening on (http://\S+)", "fake-llm").group(1)
        port = free_port()
        api = Api(f"http://127.0.0.1:{port}", admin_key)
        env = {"BOTCRAFT_API_KEY": admin_key, "OPENAI_API_KEY": openai_key,
               "OPENAI_BASE_URL": openai_base, "ANTHROPIC_API_KEY": anthropic_key,
               # The page Playwright loads is on this host, which the browser's egress proxy
               # refuses unless allowed.
               "BOTCRAFT_BROWSER_ALLOW": f"127.0.0.1:{page.server_address[1]}"}
        env.update(entry.split("=", 1) for entry in args.env)
        podman("volume", "create", volume)
        first = Container(args.image, name, volume, port, env)
        containers.append(first)

        # 1. Health.
        took, report, hc = first.wait_healthy(api)
        check("HEALTHCHECK (podman healthcheck run)", hc.returncode == 0, (hc.stdout + hc.stderr).strip() or "healthy")
        seeded = sorted((report or {}).get("mcpServers", {}))
        check("/api/health healthy with the seeded servers",
              report is not None and report["status"] == "healthy"
              and {"forge-bash", "forge-filesystem", "forge-discovery", "playwright"} <= set(seeded),
              f"{(report or {}).get('status')}, servers {seeded}, sandbox {(report or {}).get('sandbox')}")
        say(f"     start to healthy: {took:.1f} s")

        # 2. A chat: forge-bash (approved), then forge-filesystem.
        question = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "note something, then read it"}]}
        chunks = api.chat({"botId": "forge", "messages": [question]})
        asked = [c for c in chunks if c.get("type") == "tool-approval-request"]
        check("the seeded bot asks before forge-bash runs", [c["toolCallId"] for c in asked] == ["bash-1"],
              f"{[c.get('type') for c in chunks]}")
        answer = {"id": chunks[0]["messageId"], "role": "assistant", "parts": ui_parts(chunks, True)}
        more = api.chat({"botId": "forge", "messages": [question, answer]})
        done = outputs(more)
        bash = done.get("bash-1", "")
        check("forge-bash ran the approved command as uid:gid 10002:10002 with no capability",
              f"{TOOL_UID}\\n{TOOL_UID}" in bash
              and all(f"{cap}:\\t0000000000000000" in bash for cap in ("CapInh", "CapPrm", "CapEff", "CapAmb")),
              bash[:400])
        check("forge-filesystem read what the command wrote", "written-by-bash" in done.get("fs-1", ""),
              done.get("fs-1", f"no output; chunks {[c.get('type') for c in more]}")[:300])
        text = "".join(c.get("delta", "") for c in more if c.get("type") == "text-delta")
        check("the model answered after both calls", text == "The file says written-by-bash.", text)

        # 3. Playwright in the image.
        url = f"http://127.0.0.1:{page.server_address[1]}/index.html"
        status, navigated = api.call("playwright", "browser_navigate", {"url": url})
        check("Playwright loads a page", status == 200 and "Page Title: botcraft image page" in navigated,
              f"{status} {text_of(navigated)[:200]}")
        status, shot = api.call("playwright", "browser_take_screenshot", {})
        images = [p for p in (json.loads(shot).get("content", []) if status == 200 else []) if p.get("type") == "image"]
        png = base64.b64decode(images[0]["data"]) if images else b""
        if png:
            (artifacts / "playwright-in-image.png").write_bytes(png)
        check("Playwright takes a screenshot", png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 2000,
              f"{status}, {len(png)} bytes PNG → target/image-artifacts/playwright-in-image.png")

        # 4. Users and capabilities of every process.
        procs = [p for p in first.processes() if not p[3].startswith("sh -c M=@@")]
        botcraft = [p for p in procs if p[3].startswith("botcraft serve")]
        tini = [p for p in procs if p[0] == 1]
        tools = [p for p in procs if p[0] != 1 and p not in botcraft]
        names = sorted({p[4] for p in tools})
        check("BotCraft runs as uid 10001 (tini as PID 1 too)",
              len(botcraft) == 1 and set(botcraft[0][1]) == {BOTCRAFT_UID}
              and tini and "tini" in tini[0][3] and set(tini[0][1]) == {BOTCRAFT_UID},
              f"botcraft {[p[1] for p in botcraft]}, PID 1 {tini[0][3] if tini else None!r}")
        wrong = [(p[0], p[4], p[1], p[2]) for p in tools
                 if set(p[1]) != {TOOL_UID} or any(p[2].values())]
        check("every tool process runs as uid 10002 with no capability",
              not wrong and {"forge-bash", "forge-filesyste"} <= set(names) and any("chrom" in n for n in names),
              f"{len(tools)} processes ({', '.join(names)}); wrong: {wrong}")

        # 5. The attack probes, inside the real container.
        data_files = podman("exec", "--user", "0", first.name, "sh", "-c",
                            f"ls -la {DATA} >&2; for f in {DATA}/secret.key {DATA}/api-key; do if [ -f $f ]; then cat $f; echo; fi; done").stdout
        kept = [line.strip() for line in data_files.splitlines() if len(line.strip()) >= 16]
        secret_values = [admin_key, openai_key, anthropic_key, *kept]
        say(f"     secrets looked for: the three keys given, {len(kept)} from the data folder's key files")
        transcripts = []
        for label, server, tool, arguments, expect in probes(api.base):
            status, answer_text = api.call(server, tool, arguments)
            transcripts.append(answer_text)
            leaked = [s[:12] + "…" for s in secret_values if s in answer_text]
            body = text_of(answer_text)
            shown = body.replace("\n", " ⏎ ")[:160]
            check(f"probe: {label}", status == 200 and not leaked and expect in body,
                  f"leaked {leaked}" if leaked else f"{status}: {shown}")
        env_out = text_of(transcripts[0])
        check("the probes ran (the env probe saw PATH)", "PATH=" in env_out, env_out[:120])
        all_chat = json.dumps(chunks) + json.dumps(more)
        log = first.logs()
        for where, text in (("the chat streams", all_chat), ("the container's log", log)):
            leaked = [s[:12] + "…" for s in secret_values if s in text]
            check(f"no secret in {where}", not leaked, f"leaked {leaked}" if leaked else f"{len(text)} bytes")

        # Things to keep across the restart.
        api.json("POST", "/api/servers", {"name": "image-test-server", "command": "forge-bash"})
        api.json("POST", "/api/bots", {"name": "image-test-bot", "model": "openai:gpt-4.1-mini"})
        made = api.json("POST", "/api/keys", {"name": "image-test-key", "role": "chat"})
        chat_key = made["secret"]

        # 6. SIGTERM.
        stop_started = time.monotonic()
        podman("stop", "-t", str(STOP_TIMEOUT), first.name, timeout=STOP_TIMEOUT + 30)
        stop_took = time.monotonic() - stop_started
        code = podman("inspect", "--format", "{{.State.ExitCode}}", first.name).stdout.strip()
        log = first.logs()
        check("podman stop: exit 0 within the drain time", code == "0" and stop_took < STOP_TIMEOUT,
              f"exit {code} after {stop_took:.1f} s")
        check("BotCraft stopped its servers before exiting",
              "botcraft: stopping MCP servers" in log and "botcraft: stopped" in log,
              "; ".join([line for line in log.splitlines() if "botcraft: " in line][-3:])[:300])
        left = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    status_text = (entry / "status").read_text()
                except OSError:
                    continue
                uid = int(re.search(r"^Uid:\s+(\d+)", status_text, re.M).group(1))
                if uid in (BOTCRAFT_UID, TOOL_UID):
                    left.append((entry.name, uid))
        check("no process of either user left on the host", not left, f"{left}")
        say(f"     stop time: {stop_took:.1f} s")

        # 7. A new container on the same volume.
        first.remove()
        containers.remove(first)
        second = Container(args.image, name + "-again", volume, port, env)
        containers.append(second)
        took, report, hc = second.wait_healthy(api)
        check("the new container is healthy", hc.returncode == 0 and report and report["status"] == "healthy",
              f"{took:.1f} s")
        servers = [s["name"] for s in api.json("GET", "/api/servers")]
        bots = [b["name"] for b in api.json("GET", "/api/bots")]
        status, _ = api.send("GET", "/api/whoami", key=chat_key)
        check("servers, bots and keys kept on the volume",
              "image-test-server" in servers and "image-test-bot" in bots and status == 200,
              f"servers {servers}, bots {bots}, the chat key → {status}")
    except Exception as error:  # a harness failure is a failed run, said as such
        check("the run completed", False, repr(error))
    finally:
        for container in containers:
            if failures:
                (artifacts / f"{container.name}.log").write_text(container.logs())
            container.remove()
        # Also a container whose `podman run` failed half way.
        for leftover in (name, name + "-again"):
            podman("rm", "-f", "-t", "0", leftover, check_rc=False)
        podman("volume", "rm", "-f", volume, check_rc=False)
        llm.kill()
        page.shutdown()
    if failures:
        say(f"image test: {len(failures)} check(s) failed: {failures}")
        return 1
    say("image test: every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
