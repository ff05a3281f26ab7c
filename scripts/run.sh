#!/usr/bin/env bash
# Run BotCraft on this machine: builds the binaries (botcraft and the forge
# servers, side by side in target/serve: the release profile without debug
# info, the shortest build of optimised code), installs what the seeded servers
# need, then `botcraft serve` with the embedded SQLite store in ./.botcraft,
# seeded with the first-party servers and the `forge` bot on first run.
#
# What it installs, in the background while cargo builds (each step is skipped
# when already done; their output goes to .botcraft/install.log):
#   - a workspace for forge-filesystem and forge-discovery: .botcraft/workspace
#     (with docs/welcome.md), unless BOTCRAFT_WORKSPACE_ROOT says otherwise;
#     BOTCRAFT_REPO_ROOT defaults to the same folder;
#   - Playwright MCP, pinned (scripts/playwright-mcp/package-lock.json), into
#     .tools/playwright-mcp, seeded as BOTCRAFT_PLAYWRIGHT_COMMAND; Debian's
#     Chromium when running as root (otherwise it says how);
#   - the embedding model of tool_search (scripts/embedding-model-setup.sh).
#
# Settings come from the environment (see `botcraft serve --help`):
#   BOTCRAFT_ADDR (127.0.0.1:3000), BOTCRAFT_API_KEY (default: a key generated
#   into .botcraft/api-key), OPENAI_API_KEY / OPENAI_BASE_URL,
#   ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL, BOTCRAFT_DEFAULT_MODEL, DATABASE_URL,
#   BOTCRAFT_DATA_DIR (.botcraft), BOTCRAFT_WORKSPACE_ROOT, BOTCRAFT_REPO_ROOT,
#   BOTCRAFT_PLAYWRIGHT_COMMAND, BOTCRAFT_EMBEDDING_MODEL (set it to "" for
#   BM25F-only search), BOTCRAFT_RUN_PROFILE (cargo profile: serve),
#   BOTCRAFT_PREBUILT_BIN_DIR (use the binaries there; build nothing),
#   BOTCRAFT_BROWSER_ALLOW (hosts of this machine or its networks the browser may
#   open, e.g. localhost:5173: it reaches the public internet only otherwise).
# Seeding happens once, into an empty store: later changes to these settings
# apply to servers created afterwards (or edit them with `botcraft servers`).
# Extra arguments go to `botcraft serve`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
say() { printf 'run.sh: %s\n' "$*" >&2; }

if [ -n "${BOTCRAFT_PREBUILT_BIN_DIR:-}" ]; then
  # Binaries built already (the first-run test passes its own); nothing is compiled.
  bin="$BOTCRAFT_PREBUILT_BIN_DIR"
  for name in botcraft forge-bash forge-filesystem forge-discovery forge-typesense; do
    [ -x "$bin/$name" ] || { say "$bin/$name is missing"; exit 1; }
  done
elif ! command -v cargo >/dev/null; then
  say "cargo is missing: install Rust 1.95+ (https://rustup.rs)"
  exit 1
fi
data_dir="${BOTCRAFT_DATA_DIR:-$root/.botcraft}"
export BOTCRAFT_DATA_DIR="$data_dir"

# The workspace the file tools are confined to.
if [ -z "${BOTCRAFT_WORKSPACE_ROOT:-}" ]; then
  export BOTCRAFT_WORKSPACE_ROOT="$data_dir/workspace"
  if [ ! -d "$BOTCRAFT_WORKSPACE_ROOT" ]; then
    mkdir -p "$BOTCRAFT_WORKSPACE_ROOT/docs"
    cat >"$BOTCRAFT_WORKSPACE_ROOT/docs/welcome.md" <<'EOF'
# Welcome

This folder is the workspace of BotCraft's `forge` bot: forge-filesystem reads
and writes here, forge-bash runs commands here. Put your files in it, or point
BOTCRAFT_WORKSPACE_ROOT at another folder before the first run.
EOF
    say "workspace created: $BOTCRAFT_WORKSPACE_ROOT"
  fi
fi
export BOTCRAFT_REPO_ROOT="${BOTCRAFT_REPO_ROOT:-$BOTCRAFT_WORKSPACE_ROOT}"

# What the seeded servers need, installed in the background while cargo builds
# (downloads against compiling): Playwright MCP, pinned, the Chromium it drives,
# and the embedding model of tool_search. Their output goes to install.log; the
# settings they produce come back through $installed.
install_log="$data_dir/install.log"
mkdir -p "$data_dir"
installed=$(mktemp)
install_playwright() {
  local dest="$root/.tools/playwright-mcp"
  if ! command -v npm >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      say "installing Node.js and npm (Debian)"
      (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm) >>"$install_log" 2>&1 || return 1
    else
      say "npm is missing: install Node.js 18+ (sudo apt-get install nodejs npm) for the playwright server"
      return 1
    fi
  fi
  mkdir -p "$dest"
  cp scripts/playwright-mcp/package.json scripts/playwright-mcp/package-lock.json "$dest/"
  if ! cmp -s "$dest/package-lock.json" "$dest/node_modules/.package-lock.json" 2>/dev/null; then
    say "installing Playwright MCP (scripts/playwright-mcp/package-lock.json) into $dest"
    (cd "$dest" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error) >>"$install_log" 2>&1 || return 1
  fi
  printf '%s\n' "$dest/node_modules/.bin/playwright-mcp"
}
install_everything() {
  if [ -z "${BOTCRAFT_PLAYWRIGHT_COMMAND+set}" ]; then
    if program=$(install_playwright); then
      printf 'export BOTCRAFT_PLAYWRIGHT_COMMAND=%q\n' "$program" >>"$installed"
    else
      say "Playwright MCP is not installed (see $install_log); the playwright server falls back to npx"
    fi
  fi
  if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      say "installing Chromium (Debian) for the playwright server"
      (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >>"$install_log" 2>&1 \
        || say "Chromium could not be installed (see $install_log)"
    else
      say "Chromium is missing: the playwright server fails until it is installed (sudo apt-get install chromium)"
    fi
  fi
  if [ -z "${BOTCRAFT_EMBEDDING_MODEL+set}" ]; then
    if model=$(scripts/embedding-model-setup.sh 2>>"$install_log"); then
      printf 'export BOTCRAFT_EMBEDDING_MODEL=%q\n' "$model" >>"$installed"
    else
      say "the embedding model could not be installed (see $install_log); tool_search runs BM25F only"
    fi
  fi
}
# The installs run as a process group of their own (job control on for that one launch), so
# that an interrupted run.sh ends them with everything they started (apt, npm, pip).
set -m
install_everything &
installs=$!
set +m
build=""
trap 'kill -TERM -- "-$installs" 2>/dev/null || true; [ -z "$build" ] || kill -TERM -- "-$build" 2>/dev/null || true; rm -f "$installed"; exit 130' INT TERM HUP

if [ -z "${BOTCRAFT_PREBUILT_BIN_DIR:-}" ]; then
  profile="${BOTCRAFT_RUN_PROFILE:-serve}"
  case "$profile" in dev) out=debug ;; *) out="$profile" ;; esac
  say "building the binaries (cargo, profile $profile); the installs run meanwhile"
  # A process group of its own too, waited for, so that a signal reaches the trap above at
  # once and ends cargo with its rustc processes.
  # botcraft's code laid out by use (apps/bot-craft/build.rs) where Rust links with its own
  # LLD (rustup's toolchains on x86-64 Linux) and no RUSTFLAGS may ask for another linker.
  layout=off
  if [ -z "${RUSTFLAGS:-}${CARGO_ENCODED_RUSTFLAGS:-}" ] &&
    [ -e "$(rustc --print sysroot 2>/dev/null)/lib/rustlib/x86_64-unknown-linux-gnu/bin/gcc-ld/ld.lld" ]; then
    layout=on
  fi
  set -m
  BOTCRAFT_LINK_ORDER=$layout cargo build --profile "$profile" --locked -p bot-craft -p forge-bash -p forge-filesystem -p forge-discovery -p forge-typesense &
  build=$!
  set +m
  if ! wait "$build"; then
    say "the build failed; waiting for the installs to finish before exiting"
    wait "$installs" || true
    exit 1
  fi
  bin="${CARGO_TARGET_DIR:-$root/target}/$out"
fi

wait "$installs" || say "an install step failed (see $install_log)"
trap - INT TERM HUP
# shellcheck disable=SC1090
. "$installed"
rm -f "$installed"
exec "$bin/botcraft" serve "$@"
