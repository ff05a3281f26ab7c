#!/usr/bin/env bash
# The cost of tracing (issue 37), off and on in one run: a release `botcraft serve` with
# traces off, then the same with OTLP export on (BOTCRAFT_TRACE_CONTENT=on: the most work),
# exporting to a local sink, ROUNDS interleaved rounds. Measured on each:
#  - `/mcp` `tools/call` of test-support's fake-mcp-server (`mcp-bench load`, 1 in flight):
#    p50 latency and BotCraft's CPU per call;
#  - a 2-step chat turn through test-support's fake-llm (a tool call to the same server, then
#    text), one at a time over a kept-alive connection: p50 latency and BotCraft's CPU per turn.
# Prints the markdown for docs/benchmarks.md (medians over the rounds, on/off as ratios).
#
# usage: scripts/bench-traces.sh [ROUNDS] [CALLS] [TURNS]   (default: 3 3000 400)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/await-line.sh
rounds=${1:-3}
calls=${2:-3000}
turns=${3:-400}
cargo build --release --locked -q -p bench -p bot-craft -p test-support \
  --bin mcp-bench --bin botcraft --bin fake-mcp-server --bin fake-llm
bench="$root/target/release/mcp-bench"
botcraft="$root/target/release/botcraft"
fake="$root/target/release/fake-mcp-server"
fake_llm="$root/target/release/fake-llm"

work=$(mktemp -d "${TMPDIR:-/tmp}/bench-traces.XXXXXX")
pids=()
stop() { # PID: end a service's group and wait for it
  kill -TERM -- "-$1" 2>/dev/null || true
  timeout 15 tail --pid="$1" -f /dev/null 2>/dev/null || kill -KILL -- "-$1" 2>/dev/null || true
}
cleanup() {
  for pid in "${pids[@]}"; do stop "$pid"; done
  rm -rf "$work"
}
trap cleanup EXIT

# The OTLP sink: answers every export 200 and counts what it got.
setsid setpriv --pdeathsig KILL python3 - "$work/sink.count" >"$work/sink.log" 2>&1 <<'PY' &
import http.server, sys
count = {"posts": 0, "bytes": 0}
class Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        count["posts"] += 1; count["bytes"] += len(body)
        open(sys.argv[1], "w").write("%d %d\n" % (count["posts"], count["bytes"]))
        self.send_response(200); self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0"); self.end_headers()
    def log_message(self, *args): pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
print("sink listening on http://127.0.0.1:%d" % server.server_address[1], flush=True)
server.serve_forever()
PY
sink_pid=$!
pids+=("$sink_pid")
sink_line=$(await_line "$work/sink.log" 'sink listening on http://' 30 "$sink_pid")
sink_url=${sink_line##*listening on }

# The fake provider: a tool call to fake__echo, then text, for every turn of every run.
python3 - "$work/script.json" $(( (turns + 20) * 2 * rounds * 2 )) <<'PY'
import json, sys
steps = int(sys.argv[2]) // 2
call = {"toolCalls": [{"id": "c1", "name": "fake__echo", "arguments": "{\"text\": \"hello\"}"}]}
json.dump([call, {"text": "done"}] * steps, open(sys.argv[1], "w"))
PY
setsid setpriv --pdeathsig KILL "$fake_llm" "$work/script.json" >"$work/llm.log" 2>&1 &
llm_pid=$!
pids+=("$llm_pid")
llm_line=$(await_line "$work/llm.log" 'fake LLM listening on http://' 30 "$llm_pid")
llm_url=${llm_line##*listening on }

out="$work/traces.jsonl"
: >"$out"
run() { # MODE ROUND: one BotCraft, measured, stopped
  local mode=$1 round=$2 data="$work/$1-$2"
  local admin_key="bench-admin-$RANDOM$RANDOM" bot_key="bench-bot-$RANDOM$RANDOM"
  local trace_env=()
  if [ "$mode" = on ]; then
    trace_env=(OTEL_EXPORTER_OTLP_ENDPOINT="$sink_url" OTEL_SERVICE_NAME=botcraft-bench
      BOTCRAFT_TRACE_CONTENT=on)
  fi
  env "${trace_env[@]}" BOTCRAFT_BOT_KEYS="bench=$bot_key" OPENAI_API_KEY=bench-provider-key \
    OPENAI_BASE_URL="$llm_url" RUST_LOG=warn BOTCRAFT_LIST_TOOLS=off \
    setsid setpriv --pdeathsig KILL "$botcraft" serve --no-seed --addr 127.0.0.1:0 \
    --data-dir "$data" --api-key "$admin_key" >"$data.log" 2>&1 &
  local bc_pid=$!
  pids+=("$bc_pid")
  local line
  line=$(await_line "$data.log" 'listening on http://' 60 "$bc_pid")
  local url=${line##*listening on }
  local cli=(--url "$url" --api-key "$admin_key")
  "$botcraft" servers add fake --command "$fake" --always-on "${cli[@]}" >/dev/null
  "$botcraft" bots add bench --model openai:gpt-bench "${cli[@]}" >/dev/null
  "$botcraft" bots bind bench fake "${cli[@]}" >/dev/null
  "$botcraft" servers start fake "${cli[@]}" >/dev/null
  "$bench" load --calls "$calls" --warmup 300 --depth 1 --args '{"text":"hello"}' \
    --label "/mcp tools/call" --tool fake__echo --url "$url/mcp" \
    --header "Authorization: Bearer $bot_key" --tree-pid "$bc_pid" --rss-pid "$bc_pid" |
    sed "s/^{/{\"mode\":\"$mode\",\"round\":$round,/" >>"$out"
  python3 - "$url" "$admin_key" "$turns" "$bc_pid" "$mode" "$round" >>"$out" <<'PY'
import http.client, json, os, statistics, sys, time, urllib.parse
url, key, turns, pid, mode, rnd = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], int(sys.argv[6])
tick = os.sysconf("SC_CLK_TCK")
def cpu_us():
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1e6 / tick
parsed = urllib.parse.urlparse(url)
conn = http.client.HTTPConnection(parsed.hostname, parsed.port)
body = json.dumps({"botId": "bench", "messages": [
    {"id": "u", "role": "user", "parts": [{"type": "text", "text": "echo hello"}]}]})
headers = {"authorization": "Bearer " + key, "content-type": "application/json"}
def turn():
    started = time.perf_counter()
    conn.request("POST", "/api/ai/chat", body, headers)
    answer = conn.getresponse()
    text = answer.read().decode()
    if answer.status != 200 or not text.endswith("data: [DONE]\n\n") or '"type":"error"' in text \
            or '"tool-output-available"' not in text:
        sys.exit("a turn failed: %d %s" % (answer.status, text[-500:]))
    return time.perf_counter() - started
for _ in range(20):
    turn()
before = cpu_us()
samples = sorted(turn() for _ in range(turns))
spent = cpu_us() - before
print(json.dumps({"mode": mode, "round": rnd, "label": "chat turn (2 steps)", "depth": 1,
                  "calls": turns, "p50_us": samples[len(samples) // 2] * 1e6,
                  "p99_us": samples[int(len(samples) * 0.99)] * 1e6,
                  "cpu_us_per_call": spent / turns}))
PY
  stop "$bc_pid"
}
echo "# machine: $(nproc) cores, $(uname -r); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq 1 "$rounds"); do
  run off "$round"
  run on "$round"
done
read -r posts bytes <"$work/sink.count" || { echo "the sink got no export: tracing on exported nothing" >&2; exit 1; }
python3 - "$out" "$rounds" "$posts" "$bytes" <<'PY'
import json, statistics, sys
from collections import defaultdict
rows = defaultdict(list)
for line in open(sys.argv[1]):
    row = json.loads(line)
    rows[(row["label"], row["mode"])].append(row)
def med(label, mode, key):
    return statistics.median(r[key] for r in rows[(label, mode)])
print("| path | p50 off ms | p50 on ms | on/off | CPU off µs | CPU on µs | on/off |")
print("|---|---|---|---|---|---|---|")
for label in ["/mcp tools/call", "chat turn (2 steps)"]:
    p_off, p_on = med(label, "off", "p50_us"), med(label, "on", "p50_us")
    c_off, c_on = med(label, "off", "cpu_us_per_call"), med(label, "on", "cpu_us_per_call")
    print("| %s | %.3f | %.3f | %.2f× | %.1f | %.1f | %.2f× |" % (
        label, p_off / 1000, p_on / 1000, p_on / p_off, c_off, c_on, c_on / c_off))
print("\nmedians of %s rounds; with tracing on the sink received %s exports, %.1f MiB" % (
    sys.argv[2], sys.argv[3], int(sys.argv[4]) / 1048576))
PY
