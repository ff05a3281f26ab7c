#!/usr/bin/env bash
# Instructions per `tools/call` through `botcraft mcp-stdio --local`, counted by callgrind
# (user-space instructions: stable on a noisy machine, unlike time). The same backend as
# scripts/bench-faces.sh (test-support's fake-mcp-server, tool `echo`), driven by `mcp-bench
# load` at one depth; the --local process runs under valgrind, twice (SMALL and LARGE timed
# calls after the same warm-up), and the difference of the two totals divided by LARGE - SMALL
# is the cost of one call, start-up and warm-up cancelled out.
#
# usage: scripts/callgrind-local.sh [DEPTH] [SMALL] [LARGE]   (default: 1 500 2500)
# CALLGRIND_KEEP=DIR keeps both callgrind files there (for callgrind_annotate).
# needs: valgrind (apt-get install valgrind).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/await-line.sh
depth=${1:-1}
small=${2:-500}
large=${3:-2500}
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 1; }
cargo build --release --locked -q -p bench -p bot-craft -p test-support \
  --bin mcp-bench --bin botcraft --bin fake-mcp-server
bench="$root/target/release/mcp-bench"
botcraft="$root/target/release/botcraft"
fake="$root/target/release/fake-mcp-server"

work=$(mktemp -d "${TMPDIR:-/tmp}/callgrind-local.XXXXXX")
bc_pid=
cleanup() {
  [ -n "$bc_pid" ] && kill -TERM -- "-$bc_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# A data folder with server `fake` bound to bot `bench`, written through a short-lived serve.
admin_key="callgrind-admin-$RANDOM$RANDOM"
RUST_LOG=warn setsid setpriv --pdeathsig KILL "$botcraft" serve --no-seed --addr 127.0.0.1:0 \
  --data-dir "$work/botcraft" --api-key "$admin_key" >"$work/botcraft.log" 2>&1 &
bc_pid=$!
line=$(await_line "$work/botcraft.log" 'listening on http://' 60 "$bc_pid")
cli=(--url "${line##*listening on }" --api-key "$admin_key")
"$botcraft" servers add fake --command "$fake" "${cli[@]}" >/dev/null
"$botcraft" bots add bench --model openai:none "${cli[@]}" >/dev/null
"$botcraft" bots bind bench fake "${cli[@]}" >/dev/null
"$botcraft" servers start fake "${cli[@]}" >/dev/null
kill -TERM -- "-$bc_pid"
timeout 30 tail --pid="$bc_pid" -f /dev/null
bc_pid=

run() { # CALLS: the --local process's total instructions over a run of CALLS timed calls
  local calls=$1 out="$work/callgrind.$1"
  "$bench" load --calls "$calls" --warmup 200 --depth "$depth" --args '{"text":"hello"}' \
    --label callgrind --tool fake__echo -- \
    valgrind --tool=callgrind --callgrind-out-file="$out" \
    "$botcraft" mcp-stdio --bot bench --local --data-dir "$work/botcraft" >/dev/null
  awk '/^summary:/ {print $2}' "$out"
}
a=$(run "$small")
b=$(run "$large")
if [ -n "${CALLGRIND_KEEP:-}" ]; then
  mkdir -p "$CALLGRIND_KEEP" && cp "$work"/callgrind.* "$CALLGRIND_KEEP"/
fi
echo "mcp-stdio --local, depth $depth: $(( (b - a) / (large - small) )) instructions per call ($small calls: $a, $large calls: $b)"
