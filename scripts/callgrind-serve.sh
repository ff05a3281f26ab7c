#!/usr/bin/env bash
# Instructions per `tools/call` through `botcraft serve`'s /mcp, counted by callgrind, and the
# share of the Origin check (`OriginPolicy::allows`, the request carrying the page's own
# `Origin`), the key check (`GatewayAuth::configured_bot`) and the session owner's check
# (`held_by_another`); 0 for one the compiler inlined into its caller. The same backend as
# scripts/bench-faces.sh (test-support's fake-mcp-server, tool `echo`, always on, bot `bench`),
# driven by `mcp-bench load` at depth 1 over one session. `serve` runs under valgrind twice
# (SMALL and LARGE timed calls after the same set-up and warm-up); the difference of the two
# totals divided by LARGE - SMALL is the cost of one call, start-up cancelled out.
#
# usage: scripts/callgrind-serve.sh [SMALL] [LARGE]   (default: 300 1300)
# needs: valgrind (apt-get install valgrind).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/await-line.sh
small=${1:-300}
large=${2:-1300}
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 1; }
cargo build --release --locked -q -p bench -p bot-craft -p test-support \
  --bin mcp-bench --bin botcraft --bin fake-mcp-server
bench="$root/target/release/mcp-bench"
botcraft="$root/target/release/botcraft"
fake="$root/target/release/fake-mcp-server"

work=$(mktemp -d "${TMPDIR:-/tmp}/callgrind-serve.XXXXXX")
pid=
cleanup() {
  [ -n "$pid" ] && kill -KILL -- "-$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
admin_key="callgrind-admin-$RANDOM$RANDOM"
bot_key="callgrind-bot-$RANDOM$RANDOM"

run() { # CALLS: serve's callgrind file after CALLS timed calls through /mcp
  local calls=$1 out="$work/callgrind.$1" line url
  BOTCRAFT_BOT_KEYS="bench=$bot_key" RUST_LOG=warn setsid setpriv --pdeathsig KILL \
    valgrind --tool=callgrind --callgrind-out-file="$out" \
    "$botcraft" serve --no-seed --addr 127.0.0.1:0 --data-dir "$work/data.$calls" \
    --api-key "$admin_key" >"$work/serve.$calls.log" 2>&1 &
  pid=$!
  line=$(await_line "$work/serve.$calls.log" 'listening on http://' 600 "$pid")
  url=${line##*listening on }
  local cli=(--url "$url" --api-key "$admin_key")
  "$botcraft" servers add fake --command "$fake" --always-on "${cli[@]}" >/dev/null
  "$botcraft" bots add bench --model openai:none "${cli[@]}" >/dev/null
  "$botcraft" bots bind bench fake "${cli[@]}" >/dev/null
  "$botcraft" servers start fake "${cli[@]}" >/dev/null
  "$bench" load --calls "$calls" --warmup 100 --depth 1 --args '{"text":"hello"}' \
    --label callgrind --tool fake__echo --url "$url/mcp" \
    --header "Authorization: Bearer $bot_key" --header "Origin: $url" >/dev/null
  # serve ends on TERM (its drain), and valgrind writes the counts as it exits.
  kill -TERM "$pid"
  timeout 120 tail --pid="$pid" -f /dev/null
  kill -KILL -- "-$pid" 2>/dev/null || true
  pid=
  echo "$out"
}
total() { awk '/^summary:/ {print $2}' "$1"; }
# The inclusive count of the functions whose name ends in $2 (0 when inlined away).
inclusive() {
  callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null |
    awk -v f="$2" 'index($0, f) { gsub(",", "", $1); if ($1 + 0 > best) best = $1 + 0 } END { print best + 0 }'
}
a=$(run "$small")
b=$(run "$large")
n=$((large - small))
echo "botcraft serve, /mcp tools/call, depth 1: $(( ($(total "$b") - $(total "$a")) / n )) instructions per call ($small calls: $(total "$a"), $large calls: $(total "$b"))"
# The checks themselves (their middlewares wrap the rest of the request, so their own
# inclusive counts would include it): the Origin rule, the key, the session's owner.
for f in "OriginPolicy::allows" "GatewayAuth::configured_bot" "::held_by_another"; do
  echo "  $f: $(( ($(inclusive "$b" "$f") - $(inclusive "$a" "$f")) / n )) instructions per call (inclusive; 0 if inlined into its caller)"
done
