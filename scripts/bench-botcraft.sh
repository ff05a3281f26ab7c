#!/usr/bin/env bash
# BotCraft's own figures for docs/benchmarks.md ("BotCraft host" section):
#  1. host overhead per chat turn and per step with a zero-latency fake provider
#     (cargo bench -p http-api --bench chat_overhead);
#  2. resident memory of `botcraft serve` with the five seeded servers started,
#     and of each server's process tree (Playwright needs /usr/bin/chromium).
# usage: scripts/bench-botcraft.sh [overhead|memory|all]   (default: all)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
what=${1:-all}
echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r)"

if [ "$what" = overhead ] || [ "$what" = all ]; then
  cargo bench --locked -q -p http-api --bench chat_overhead -- 200 2>/dev/null
fi

rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
tree_kib() { # a pid and every descendant
  local total=0 pid
  for pid in $1 $(pgrep -P "$1" 2>/dev/null); do
    if [ "$pid" != "$1" ]; then total=$((total + $(tree_kib "$pid"))); else total=$((total + $(rss_kib "$pid"))); fi
  done
  echo "$total"
}

if [ "$what" = memory ] || [ "$what" = all ]; then
  cargo build --release --locked -q -p bot-craft -p forge-bash -p forge-filesystem -p forge-discovery -p forge-typesense
  data=$(mktemp -d "${TMPDIR:-/tmp}/botcraft-bench.XXXXXX")
  log="$data/serve.log"
  BOTCRAFT_DATA_DIR="$data" BOTCRAFT_API_KEY=bench RUST_LOG=warn \
    "$root/target/release/botcraft" serve --addr 127.0.0.1:0 2>"$log" &
  serve=$!
  trap 'kill -TERM $serve 2>/dev/null; wait $serve 2>/dev/null; rm -rf "$data"' EXIT
  for _ in $(seq 100); do grep -q "listening on" "$log" && break; sleep 0.1; done
  url=$(sed -n 's/.*listening on //p' "$log")
  idle=$(rss_kib "$serve")
  for server in forge-bash forge-discovery forge-typesense forge-filesystem playwright; do
    BOTCRAFT_URL="$url" BOTCRAFT_API_KEY=bench "$root/target/release/botcraft" servers start "$server" || true
  done
  BOTCRAFT_URL="$url" BOTCRAFT_API_KEY=bench "$root/target/release/botcraft" servers status
  echo
  echo "| process | RSS MiB |"
  echo "|---|---|"
  printf '| botcraft serve, before starting lazy servers (always-on running) | %.1f |\n' "$(echo "$idle/1024" | bc -l)"
  printf '| botcraft serve, all servers running | %.1f |\n' "$(echo "$(rss_kib "$serve")/1024" | bc -l)"
  for pid in $(pgrep -P "$serve"); do
    name=$(tr '\0' ' ' <"/proc/$pid/cmdline" | awk '{print $1" "$2}')
    printf '| %s (with descendants) | %.1f |\n' "$name" "$(echo "$(tree_kib "$pid")/1024" | bc -l)"
  done
  printf '| everything (botcraft + every server tree) | %.1f |\n' "$(echo "$(tree_kib "$serve")/1024" | bc -l)"
fi
