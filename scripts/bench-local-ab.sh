#!/usr/bin/env bash
# Two or more builds of botcraft compared on `mcp-stdio --local`, the face whose cost is its
# own process alone, in interleaved rounds: each round runs direct (the fake server alone)
# and then each build, one after the other, so that the machine's drift over the hour falls
# on every build alike. Each run is `mcp-bench load` at 1, 8 and 32 calls in flight against
# test-support's fake-mcp-server (tool `echo`), as in scripts/bench-faces.sh. Prints each
# build's medians over the rounds, then each build against the first, round by round: the
# median change and in how many rounds it was better. The raw JSON lines are kept in OUT.
#
# usage: scripts/bench-local-ab.sh ROUNDS CALLS OUT LABEL=BOTCRAFT_BINARY...
#   e.g. scripts/bench-local-ab.sh 20 3000 /tmp/ab.jsonl plain=/tmp/botcraft-a laid=/tmp/botcraft-b
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/await-line.sh
source scripts/bench-serve.sh
[ $# -ge 4 ] || { sed -n '2,11p' "$0" >&2; exit 2; }
rounds=$1 calls=$2 out=$3
shift 3
for build in "$@"; do
  [ -x "${build#*=}" ] || { echo "not an executable: ${build#*=} (from $build)" >&2; exit 2; }
done
bench_setup bench-local-ab

# The store of every build's `--local`: server `fake` bound to bot `bench`, written by the
# first build's serve, which then ends (`--local` runs the manager in its own process).
botcraft=${1#*=}
start_serve "$work/botcraft"
stop_serve

: >"$out"
load=(load --calls "$calls" --warmup 500 --args '{"text":"hello"}')
for round in $(seq 1 "$rounds"); do
  "$bench" "${load[@]}" --label direct --tool echo -- "$fake" | sed "s/^{/{\"round\":$round,/" >>"$out"
  for build in "$@"; do
    "$bench" "${load[@]}" --label "${build%%=*}" --tool fake__echo -- "${build#*=}" mcp-stdio \
      --bot bench --local --data-dir "$work/botcraft" | sed "s/^{/{\"round\":$round,/" >>"$out"
  done
done

# Each label must have answered every round at every depth: a build that failed its calls is
# an error here, not a shorter table.
python3 - "$out" "$rounds" "$@" <<'PY'
import collections, json, statistics, sys

path, rounds, builds = sys.argv[1], int(sys.argv[2]), [b.split("=", 1)[0] for b in sys.argv[3:]]
rows = [json.loads(line) for line in open(path, encoding="utf-8")]
by = collections.defaultdict(dict)
for row in rows:
    by[(row["depth"], row["round"])][row["label"]] = row
depths = sorted({depth for depth, _ in by})
for depth in depths:
    for label in ["direct"] + builds:
        runs = [by[(depth, r)].get(label) for r in range(1, rounds + 1)]
        if any(run is None for run in runs):
            sys.exit(f"{label} at depth {depth}: {sum(r is None for r in runs)} rounds missing")
if not depths:
    sys.exit("no runs")
print("| depth | build | p50 µs | p99 µs | req/s | CPU µs per call | peak RSS MiB |")
print("|---|---|---|---|---|---|---|")
for depth in depths:
    for label in ["direct"] + builds:
        runs = [by[(depth, r)][label] for r in range(1, rounds + 1)]
        med = lambda key: statistics.median(run[key] for run in runs)
        print(f"| {depth} | {label} | {med('p50_us'):.1f} | {med('p99_us'):.1f} | "
              f"{med('per_second'):,.0f} | {med('cpu_us_per_call'):.1f} | "
              f"{med('peak_rss_kib') / 1024:.1f} |")
print()
first = builds[0]
for label in builds[1:]:
    for depth in depths:
        cells = []
        for key, lower_is_better in (("p50_us", True), ("per_second", False), ("cpu_us_per_call", True)):
            changes = [(by[(depth, r)][label][key] - by[(depth, r)][first][key]) / by[(depth, r)][first][key]
                       for r in range(1, rounds + 1)]
            better = sum(1 for c in changes if (c < 0) == lower_is_better and c != 0)
            cells.append(f"{key} {100 * statistics.median(changes):+.1f} % (better in {better}/{rounds})")
        print(f"{label} against {first}, depth {depth}: " + ", ".join(cells))
PY
