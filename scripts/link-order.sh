#!/usr/bin/env bash
# Lays `botcraft`'s code out by use. Runs its stdio faces under callgrind (`mcp-stdio --local`
# then the bridge `mcp-stdio` → `serve`'s /mcp, each started and given calls at 1 and 32 in
# flight, as scripts/callgrind-faces.sh drives them) and writes the functions they ran, most
# run first, to apps/bot-craft/link-order.txt, which apps/bot-craft/build.rs hands the linker
# for optimised builds. Symbol names carry a hash of the build's profile, so each PROFILE
# given (default: release, what the benchmarks build, and serve, what scripts/run.sh and the
# image build) is built and profiled, and their lists are joined (about 4,000 functions
# each). Run it again when the faces' code has changed much: `check` says how many listed
# functions a build still has (a function the list does not name is laid out as it would be
# without the list).
#
# usage: scripts/link-order.sh [PROFILE...]
#        scripts/link-order.sh check [PROFILE]   (default: release)
# needs: valgrind, python3, nm (binutils).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
order="$root/apps/bot-craft/link-order.txt"
if [ "${1:-}" = check ]; then
  exec python3 scripts/link_order.py check "target/${2:-release}/botcraft" "$order"
fi
source scripts/await-line.sh
source scripts/bench-serve.sh
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 1; }
# The packages scripts/run.sh builds together. Symbol names also carry a hash of the features
# each crate was built with, which cargo unifies over the packages of one invocation: built
# with another set (`cargo build -p bot-craft` alone, or beside test-support), botcraft has
# other names, and follows little of the list. So the builds that ask for the layout
# (scripts/run.sh, the Dockerfile, bench-faces.sh, callgrind-faces.sh) use this set, in an
# invocation of their own.
packages=(-p bot-craft -p forge-bash -p forge-filesystem -p forge-discovery -p forge-typesense)
profiles=("$@")
[ ${#profiles[@]} -gt 0 ] || profiles=(release serve)
bench_setup link-order
load=(load --warmup 50 --calls 300 --depth 1,32 --args '{"text":"hello"}' --label order --tool fake__echo)

# The run fails here, not as an empty list, when a face did not answer its calls.
answered() {
  grep -q '"calls":300' "$1" || { echo "$2 did not answer its calls: $(head -c 400 "$1")" >&2; exit 1; }
}

lists=()
for profile in "${profiles[@]}"; do
  BOTCRAFT_LINK_ORDER=on cargo build --profile "$profile" --locked -q "${packages[@]}"
  botcraft="$root/target/$profile/botcraft"
  data="$work/$profile"
  mkdir -p "$data"
  start_serve "$data/botcraft"
  stop_serve
  "$bench" "${load[@]}" -- valgrind --tool=callgrind --demangle=no \
    --callgrind-out-file="$work/$profile.local.cg" \
    "$botcraft" mcp-stdio --bot bench --local --data-dir "$data/botcraft" >"$work/$profile.local.out"
  answered "$work/$profile.local.out" "mcp-stdio --local ($profile)"
  start_serve "$data/serve"
  printf '%s\n' '{"bot": "bench", "instructions": "", "tools": [{"name": "fake__echo", "description": "fake tool echo", "inputSchema": {"type": "object"}}]}' >"$data/manifest.json"
  "$bench" "${load[@]}" --env "BOTCRAFT_URL=$url" --env "BOTCRAFT_API_KEY=$bot_key" \
    --env "BOTCRAFT_MCP_CACHE_DIR=$data/stdio-cache" -- \
    valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/$profile.bridge.cg" \
    "$botcraft" mcp-stdio --bot bench --manifest "$data/manifest.json" --no-refresh \
    >"$work/$profile.bridge.out"
  answered "$work/$profile.bridge.out" "mcp-stdio → /mcp ($profile)"
  stop_serve
  python3 scripts/link_order.py make "$botcraft" "$work/$profile.order" \
    "$work/$profile.local.cg" "$work/$profile.bridge.cg"
  lists+=("$work/$profile.order")
done
# One list: each profile's in turn, a name listed once.
awk '!seen[$0]++' "${lists[@]}" >"$order"
echo "$order: $(wc -l <"$order") functions"
for profile in "${profiles[@]}"; do
  python3 scripts/link_order.py check "target/$profile/botcraft" "$order"
done
