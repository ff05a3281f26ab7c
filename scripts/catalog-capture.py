#!/usr/bin/env python3
"""Capture one MCP server's tools/list answer for the tool-search evaluation catalog.

Speaks MCP over stdio to COMMAND: `initialize` (protocol 2025-06-18, no client
capabilities), `notifications/initialized`, then `tools/list`, following
`nextCursor` until the last page. Prints one JSON document on stdout:

  {"server", "package": {"registry", "name", "version"}, "command",
   "protocolVersion", "serverInfo", "instructions", "tools"}

`tools` is exactly what the server answered, every field kept, in its order.
The child runs in its own process group with a small environment (PATH,
HOME, TMPDIR, LANG, plus the --env values, which are dummies, never secrets);
its stderr goes to --log (or is discarded); the whole group is killed at the end.

Usage:
  catalog-capture.py --server NAME --registry npm|pypi|forge --package PKG
      --version VER [--env KEY=VALUE]... [--timeout 60] [--log FILE]
      [--home DIR] -- COMMAND [ARG]...

Standard library only (Python 3.11).
"""

import argparse
import json
import os
import selectors
import signal
import subprocess
import sys
import time

PROTOCOL_VERSION = "2025-06-18"
CLIENT_INFO = {"name": "botcraft-catalog-capture", "version": "1"}


class CaptureError(Exception):
    pass


class Session:
    def __init__(self, argv, env, log, timeout):
        self.deadline = time.monotonic() + timeout
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=env,
            start_new_session=True,
        )
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.proc.stdout, selectors.EVENT_READ)
        self.buf = b""
        self.next_id = 1
        self.noise = 0

    def send(self, msg):
        data = (json.dumps(msg, separators=(",", ":")) + "\n").encode()
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except BrokenPipeError as e:
            raise CaptureError(f"server closed stdin ({self.exit_note()})") from e

    def exit_note(self):
        rc = self.proc.poll()
        return "still running" if rc is None else f"exit code {rc}"

    def read_message(self):
        """Next JSON-RPC message from stdout; non-JSON lines are skipped."""
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                line = line.strip()
                if not line:
                    continue
                try:
                    msg = json.loads(line)
                except ValueError:
                    self.noise += 1
                    continue
                if isinstance(msg, dict):
                    return msg
                self.noise += 1
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise CaptureError("timed out waiting for the server")
            if not self.sel.select(timeout=left):
                continue
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                raise CaptureError(f"server closed stdout ({self.exit_note()})")
            self.buf += chunk

    def request(self, method, params):
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            msg = self.read_message()
            if "method" in msg:
                if "id" in msg:  # a request from the server: we offer nothing
                    self.send({
                        "jsonrpc": "2.0",
                        "id": msg["id"],
                        "error": {"code": -32601, "message": "Method not found"},
                    })
                continue  # notifications (logging, list_changed, ...) are ignored
            if msg.get("id") != rid:
                continue
            if "error" in msg:
                raise CaptureError(f"{method} failed: {json.dumps(msg['error'])}")
            result = msg.get("result")
            if not isinstance(result, dict):
                raise CaptureError(f"{method}: result is not an object")
            return result

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        for sig, wait in ((signal.SIGTERM, 3), (signal.SIGKILL, 3)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                continue
            # the leader is gone; make sure the rest of its group is too
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            break
        self.proc.stdout.close()


def capture(argv, env, log, timeout):
    s = Session(argv, env, log, timeout)
    try:
        init = s.request("initialize", {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": CLIENT_INFO,
        })
        s.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools, cursor, seen = [], None, set()
        while True:
            page = s.request("tools/list", {"cursor": cursor} if cursor else {})
            got = page.get("tools")
            if not isinstance(got, list):
                raise CaptureError("tools/list: result has no tools array")
            tools.extend(got)
            cursor = page.get("nextCursor")
            if not cursor:
                break
            if cursor in seen:
                raise CaptureError(f"tools/list: cursor {cursor!r} repeats")
            seen.add(cursor)
        return init, tools
    finally:
        s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", required=True)
    ap.add_argument("--registry", required=True, choices=["npm", "pypi", "forge"])
    ap.add_argument("--package", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--log", help="file for the server's stderr (default: discarded)")
    ap.add_argument("--home", help="HOME for the server (default: inherited)")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    argv = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not argv:
        ap.error("no command given")

    env = {k: os.environ[k] for k in ("PATH", "LANG", "TMPDIR") if k in os.environ}
    env.setdefault("LANG", "C.UTF-8")
    env["HOME"] = a.home or os.environ.get("HOME", "/tmp")
    for kv in a.env:
        key, sep, value = kv.partition("=")
        if not sep or not key:
            ap.error(f"--env wants KEY=VALUE, got {kv!r}")
        env[key] = value

    log = open(a.log, "wb") if a.log else subprocess.DEVNULL
    try:
        init, tools = capture(argv, env, log, a.timeout)
    except (CaptureError, OSError) as e:
        print(f"catalog-capture: {a.server}: {e}", file=sys.stderr)
        return 1
    finally:
        if a.log:
            log.close()

    doc = {
        "server": a.server,
        "package": {"registry": a.registry, "name": a.package, "version": a.version},
        "command": list(a.env) + argv,
        "protocolVersion": init.get("protocolVersion"),
        "serverInfo": init.get("serverInfo"),
        "instructions": init.get("instructions") or "",
        "tools": tools,
    }
    json.dump(doc, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
