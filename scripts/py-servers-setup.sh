#!/usr/bin/env bash
# Install the third-party Python MCP servers the tests use (pinned, from PyPI)
# into a virtualenv under .tools/ and print the venv's bin folder on stdout. uv (uvx) comes
# too: the registry import's PyPI packages run as `uvx NAME==VERSION`.
# Idempotent.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="${PY_SERVERS_VENV:-$root/.tools/py-servers}"
pins=(mcp-server-time==2026.10.19 mcp-server-git==2026.10.19 mcp-server-fetch==2026.10.24 uv==0.13.9)
if [ ! -x "$venv/bin/mcp-server-fetch" ] || [ ! -x "$venv/bin/mcp-server-git" ] || [ ! -x "$venv/bin/mcp-server-time" ] || [ ! -x "$venv/bin/uvx" ]; then
  echo "py-servers-setup: installing ${pins[*]} into $venv" >&2
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${pins[@]}" >&2
fi
echo "$venv/bin"
