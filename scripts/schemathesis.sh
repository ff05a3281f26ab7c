#!/usr/bin/env bash
# schemathesis (PyPI, pinned below) against a fresh `botcraft serve`: it reads
# /api/openapi.json and sends generated requests to every operation, once with an
# admin key and once with a chat key. A run fails on any 5xx, on a status code,
# content type or body the document does not describe, and, with the chat key,
# on any 2xx from an admin route (scripts/schemathesis/hooks.py). The one 5xx allowed is
# /api/health/ready's 503 (scripts/schemathesis/schemathesis.toml says why).
#
# Bounded: a fixed number of examples per operation, one worker. Left out: the
# operations that start processes or need a model provider (chat, a server's
# start/restart/tools/test call, a resource read), which the crates' own tests cover
# with fakes;
# the store is empty (--no-seed), so nothing generated can run a command.
#
#   cargo build -p bot-craft && scripts/schemathesis.sh
#
# Environment: BOTCRAFT_BIN (default target/debug/botcraft), ST_MAX_EXAMPLES (30).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=4.32.5
venv="$root/.tools/schemathesis"
bin="${BOTCRAFT_BIN:-$root/target/debug/botcraft}"
say() { printf 'schemathesis.sh: %s\n' "$*" >&2; }

if [ "$("$venv/bin/st" --version 2>/dev/null)" != "st, version $version" ]; then
  say "installing schemathesis $version into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --disable-pip-version-check --quiet "schemathesis==$version"
fi
[ -x "$bin" ] || { say "$bin is missing: cargo build -p bot-craft"; exit 1; }

work=$(mktemp -d)
admin="st-admin-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
chat="st-chat-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
# botcraft's stderr comes through a FIFO: its "listening on" line is the readiness signal.
mkfifo "$work/stderr"
env -i PATH="$PATH" HOME="$work" BOTCRAFT_API_KEY="$admin" BOTCRAFT_CHAT_KEYS="$chat" \
  BOTCRAFT_EMBEDDING_MODEL="" RUST_LOG=warn \
  "$bin" serve --addr 127.0.0.1:0 --no-seed --data-dir "$work/data" 2>"$work/stderr" &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$work"' EXIT
exec 3<"$work/stderr"
url=
while IFS= read -r -t 60 line <&3; do
  printf '%s\n' "$line" >>"$work/serve.log"
  case "$line" in
    *"listening on http://127.0.0.1:"*) url="http://${line##*http://}"; break ;;
  esac
done
[ -n "$url" ] || { cat "$work/serve.log" >&2; say "botcraft serve did not listen"; exit 1; }
# Keep draining its stderr (a full pipe would block it).
cat <&3 >>"$work/serve.log" &

for role in admin chat; do
  key=$admin; [ "$role" = chat ] && key=$chat
  say "$role key against $url/api/openapi.json"
  BOTCRAFT_ST_ROLE=$role SCHEMATHESIS_HOOKS=hooks PYTHONPATH="$root/scripts/schemathesis" \
    "$venv/bin/st" --config-file "$root/scripts/schemathesis/schemathesis.toml" \
      run "$url/api/openapi.json" \
      --header "Authorization: Bearer $key" \
      --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,chat_key_never_passes_an_admin_route \
      --phases examples,coverage,fuzzing \
      --max-examples "${ST_MAX_EXAMPLES:-30}" \
      --workers 1 \
      --exclude-path /api/ai/chat \
      --exclude-path-regex '^/api/servers/\{server\}/(start|restart|tools|resource)' \
      --suppress-health-check all \
      --no-color
done
say "passed with both keys"
