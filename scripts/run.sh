#!/usr/bin/env bash
# Run BotCraft on this machine: builds the release binaries (botcraft and the
# forge servers, side by side in target/release), then `botcraft serve` with
# the embedded SQLite store in ./.botcraft, seeded with the first-party servers
# and the `forge` bot on first run.
#
# Settings come from the environment (see `botcraft serve --help`):
#   BOTCRAFT_ADDR (127.0.0.1:3000), BOTCRAFT_API_KEY (default: a key generated
#   into .botcraft/api-key), OPENAI_API_KEY / OPENAI_BASE_URL,
#   ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL, BOTCRAFT_DEFAULT_MODEL, DATABASE_URL,
#   BOTCRAFT_EMBEDDING_MODEL (default: all-MiniLM-L6-v2, installed under .tools/
#   by scripts/embedding-model-setup.sh; set it to "" for BM25F-only search).
# Extra arguments go to `botcraft serve`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if ! command -v cargo >/dev/null; then
  echo "cargo is missing: install Rust 1.95+ (https://rustup.rs)" >&2
  exit 1
fi
cargo build --release --locked -p bot-craft -p forge-bash -p forge-filesystem -p forge-discovery -p forge-typesense
if [ -z "${BOTCRAFT_EMBEDDING_MODEL+set}" ]; then
  if model=$(scripts/embedding-model-setup.sh); then
    export BOTCRAFT_EMBEDDING_MODEL="$model"
  else
    echo "run.sh: the embedding model could not be installed; tool_search runs BM25F only" >&2
  fi
fi
exec "$root/target/release/botcraft" serve "$@"
