#!/usr/bin/env bash
# Instructions per `tools/call` through a BotCraft face, counted by callgrind (user-space
# instructions: stable on a noisy machine, unlike time). The same backend as
# scripts/bench-faces.sh (test-support's fake-mcp-server, tool `echo`, bot `bench`), driven by
# `mcp-bench load`. The face runs under valgrind twice, for SMALL and for LARGE timed calls after
# the same set-up and warm-up; the difference of the two totals divided by LARGE - SMALL is the
# cost of one call, start-up cancelled out.
#
#   local: `botcraft mcp-stdio --local`, at DEPTH calls in flight.
#   serve: `botcraft serve`'s /mcp at depth 1, each request with the bot key and the page's own
#          `Origin`; also the share of the Origin check (`OriginPolicy::allows`), the key check
#          (`GatewayAuth::configured_bot`) and the session owner's check (`held_by_another`),
#          each 0 when the compiler inlined it into its caller.
#   bridge: `botcraft mcp-stdio` forwarding to a `serve` (not counted) at DEPTH: the bridge's
#          own instructions per call.
#
# usage: scripts/callgrind-faces.sh local [DEPTH] [SMALL] [LARGE]   (default: 1 500 2500)
#        scripts/callgrind-faces.sh serve [SMALL] [LARGE]           (default: 300 1300)
#        scripts/callgrind-faces.sh bridge [DEPTH] [SMALL] [LARGE]  (default: 1 300 1300)
# CALLGRIND_KEEP=DIR keeps both callgrind files there (for callgrind_annotate).
# needs: valgrind (apt-get install valgrind).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/await-line.sh
source scripts/bench-serve.sh
face=${1:-}
case "$face" in
  local) depth=${2:-1}; small=${3:-500}; large=${4:-2500} ;;
  serve) depth=1; small=${2:-300}; large=${3:-1300} ;;
  bridge) depth=${2:-1}; small=${3:-300}; large=${4:-1300} ;;
  *) echo "usage: $0 local [DEPTH] [SMALL] [LARGE] | serve [SMALL] [LARGE] | bridge [DEPTH] [SMALL] [LARGE]" >&2; exit 2 ;;
esac
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 1; }
# botcraft laid out by use, with the package set its list was made for (scripts/link-order.sh).
BOTCRAFT_LINK_ORDER=on cargo build --release --locked -q -p bot-craft -p forge-bash -p forge-filesystem \
  -p forge-discovery -p forge-typesense
botcraft="$root/target/release/botcraft"
bench_setup callgrind-faces
cleanup() {
  if [ -n "${CALLGRIND_KEEP:-}" ] && [ -d "$work" ]; then
    mkdir -p "$CALLGRIND_KEEP" && cp "$work"/callgrind.* "$CALLGRIND_KEEP"/ 2>/dev/null || true
  fi
  bench_cleanup
}
trap cleanup EXIT
load=(load --warmup 200 --depth "$depth" --args '{"text":"hello"}' --label callgrind --tool fake__echo)

run() { # CALLS: the face's callgrind file after CALLS timed calls
  local calls=$1 out="$work/callgrind.$1"
  case "$face" in
    local)
      "$bench" "${load[@]}" --calls "$calls" -- \
        valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$botcraft" mcp-stdio --bot bench --local --data-dir "$work/botcraft" >/dev/null ;;
    serve)
      start_serve "$work/data.$calls" valgrind --tool=callgrind --callgrind-out-file="$out"
      "$bench" "${load[@]}" --calls "$calls" --url "$url/mcp" \
        --header "Authorization: Bearer $bot_key" --header "Origin: $url" >/dev/null
      stop_serve ;;
    bridge)
      start_serve "$work/data.$calls"
      printf '%s\n' '{"bot": "bench", "instructions": "", "tools": [{"name": "fake__echo", "description": "fake tool echo", "inputSchema": {"type": "object"}}]}' >"$work/manifest.json"
      "$bench" "${load[@]}" --calls "$calls" --env "BOTCRAFT_URL=$url" \
        --env "BOTCRAFT_API_KEY=$bot_key" --env "BOTCRAFT_MCP_CACHE_DIR=$work/stdio-cache" -- \
        valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$botcraft" mcp-stdio --bot bench --manifest "$work/manifest.json" --no-refresh >/dev/null
      stop_serve ;;
  esac
}
# A run that crashed or wrote no counts fails here, not as a figure of 0.
total() {
  local n
  n=$(awk '/^summary:/ {print $2}' "$1" 2>/dev/null)
  [ -n "$n" ] || { echo "no callgrind summary in $1: the run failed" >&2; exit 1; }
  echo "$n"
}
# The inclusive count of the functions whose name holds $2 (0 when inlined away).
inclusive() {
  callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null |
    awk -v f="$2" 'index($0, f) { gsub(",", "", $1); if ($1 + 0 > best) best = $1 + 0 } END { print best + 0 }'
}

if [ "$face" = local ]; then
  # The data folder --local reads, written through a short-lived serve (no valgrind).
  mkdir -p "$work/botcraft"
  start_serve "$work/botcraft"
  stop_serve
fi
run "$small"
run "$large"
a=$(total "$work/callgrind.$small")
b=$(total "$work/callgrind.$large")
n=$((large - small))
echo "$face, depth $depth: $(( (b - a) / n )) instructions per call ($small calls: $a, $large calls: $b)"
if [ "$face" = serve ]; then
  for f in "OriginPolicy::allows" "GatewayAuth::configured_bot" "::held_by_another"; do
    fa=$(inclusive "$work/callgrind.$small" "$f")
    fb=$(inclusive "$work/callgrind.$large" "$f")
    echo "  $f: $(( (fb - fa) / n )) instructions per call (inclusive; 0 if inlined into its caller)"
  done
fi
