#!/usr/bin/env bash
# Issue 33's figures (docs/benchmarks.md, "Bounded under hostile input"): a 10 GB sparse
# file's head, a FIFO, 500 unread chat streams, forge-bash's cancellation. Release builds.
#
# usage: scripts/bench-bounds.sh [sparse|fifo|streams|cancel|all]   (default: all)
# needs: e2e/node_modules (npm ci in e2e/) for the reference filesystem server.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cargo build --release --locked -q -p bot-craft -p forge-filesystem -p forge-bash -p test-support \
  --bin botcraft --bin forge-filesystem --bin forge-bash --bin fake-llm
echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r); $(date -u +%F)"
exec python3 scripts/bench-bounds.py "$root" "${1:-all}"
