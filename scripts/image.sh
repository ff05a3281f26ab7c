#!/usr/bin/env bash
# Build the BotCraft image from the repository's Dockerfile with podman, and print its size.
#
#   scripts/image.sh                   binaries built here (cargo build --profile serve), put in the
#                                      image by the Dockerfile's own COPY --from=build
#   scripts/image.sh --binaries DIR    binaries already built in DIR (CI: target/debug; they
#                                      are stripped on the way in)
#   scripts/image.sh --full            the whole Dockerfile, its Rust stage included: what
#                                      `docker build -t botcraft .` does with registry access
#
# The Dockerfile is not changed for the first two: podman's `--build-context build=DIR`
# stands in for the stage named `build` (and `--build-context model=DIR` for `model`, with
# the model scripts/embedding-model-setup.sh installs), so those stages are skipped and
# their base images are not needed.
#
# No image registry is reachable on the machines this runs on, so a base image the build
# needs and podman does not have is made here: `debian:trixie-slim` with mmdebstrap from
# the Debian archive (`podman import`); for --full also `rust:1.95-trixie` (that Debian,
# a C toolchain from Debian, and this machine's Rust toolchain) and `python:3.11-slim-trixie`
# (that Debian and Debian's python3). docs/deployment.md says what differs from the images
# of Docker Hub.
#
# Environment:
#   BOTCRAFT_IMAGE        the tag (default localhost/botcraft:latest)
#   BOTCRAFT_IMAGE_CACHE  where the base root filesystem is kept (default .tools/image)
#   BOTCRAFT_IMAGE_CA     a CA bundle the build's registry clients (cargo, pip, npm) must
#                         trust, mounted for the build only, never copied into the image;
#                         default: this machine's bundle when it trusts local CAs (a
#                         TLS-inspecting proxy), none otherwise
# Progress goes to stderr; the last line of stdout is the image's tag.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
image=${BOTCRAFT_IMAGE:-localhost/botcraft:latest}
cache=${BOTCRAFT_IMAGE_CACHE:-$root/.tools/image}
mode=release
binaries=""
while [ $# -gt 0 ]; do
  case "$1" in
    --full) mode=full ;;
    --binaries) mode=prebuilt; binaries=${2:?--binaries needs a folder}; shift ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "image.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

# The Dockerfile's own pins.
arg() { sed -n "s/^ARG $1=//p" Dockerfile | head -n1; }
rust_version=$(arg RUST_VERSION)
release=$(arg DEBIAN_RELEASE)
shipped=(botcraft forge-bash forge-filesystem forge-discovery forge-typesense)

# runc: crun fails on this kernel's hybrid cgroups; runc wants explicit limits.
podman_flags=(--runtime runc)
limits=(--ulimit nofile=20000:20000 --ulimit nproc=1000:1000)
log() { printf 'image.sh: %s\n' "$*" >&2; }

have_image() { podman image exists "$1"; }

# debian:<release>-slim, pulled when a registry answers, else made with mmdebstrap.
debian_base() {
  local tag=docker.io/library/debian:$release-slim
  have_image "$tag" && return 0
  if timeout 60 podman pull -q "$tag" >/dev/null 2>&1; then return 0; fi
  log "no registry: making $tag with mmdebstrap (minbase, deb.debian.org)"
  command -v mmdebstrap >/dev/null || { log "mmdebstrap is missing (apt-get install mmdebstrap)"; exit 1; }
  mkdir -p "$cache"
  local tar=$cache/debian-$release-minbase.tar
  if [ ! -s "$tar" ]; then
    # --format: the name's extension would otherwise choose it (.partial: a folder).
    mmdebstrap --quiet --variant=minbase --format=tar "$release" "$tar.partial" \
      http://deb.debian.org/debian >&2
    mv "$tar.partial" "$tar"
  fi
  podman import -q "$tar" "$tag" >/dev/null
}

# A base made from debian_base and a few lines of Containerfile, in context $3.
derived_base() {
  local tag=$1 containerfile=$2 context=$3
  have_image "$tag" && return 0
  if timeout 60 podman pull -q "$tag" >/dev/null 2>&1; then return 0; fi
  log "no registry: making $tag from debian:$release-slim"
  printf '%s\n' "$containerfile" >"$context/Containerfile"
  podman build "${podman_flags[@]}" "${limits[@]}" --pull=never --network host -q \
    -f "$context/Containerfile" -t "$tag" "$context" >/dev/null
}

# A TLS-inspecting proxy between the build and the registries: its CA, for the build only.
ca=${BOTCRAFT_IMAGE_CA:-}
if [ -z "$ca" ] && compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
  ca=/etc/ssl/certs/ca-certificates.crt
fi
ca_flags=()
if [ -n "$ca" ]; then
  log "the build trusts $ca (mounted at /run/build-ca.crt during RUN steps only)"
  ca_flags=(-v "$ca:/run/build-ca.crt:ro" --build-arg CARGO_HTTP_CAINFO=/run/build-ca.crt
    --build-arg PIP_CERT=/run/build-ca.crt --build-arg NODE_EXTRA_CA_CERTS=/run/build-ca.crt)
fi

stage=$(mktemp -d "${TMPDIR:-/tmp}/botcraft-image.XXXXXX")
trap 'rm -rf "$stage"' EXIT
debian_base
contexts=()
case "$mode" in
  release)
    log "cargo build --profile serve (${shipped[*]}), the profile the Dockerfile builds"
    cargo build --profile serve --locked $(printf -- '--bin %s ' "${shipped[@]}") >&2
    binaries=$root/target/serve
    ;;
esac
if [ "$mode" != full ]; then
  # The `build` stage's /out, and the `model` stage's /models.
  mkdir -p "$stage/build/out" "$stage/model/models"
  for bin in "${shipped[@]}"; do
    [ -x "$binaries/$bin" ] || { log "$binaries/$bin is missing (cargo build first)"; exit 1; }
    cp "$binaries/$bin" "$stage/build/out/$bin"
    # Debug builds (CI) carry line tables: not needed in the image.
    if command -v strip >/dev/null; then strip --strip-debug "$stage/build/out/$bin"; fi
  done
  model=$(scripts/embedding-model-setup.sh)
  cp -r "$model" "$stage/model/models/"
  contexts=(--build-context "build=$stage/build" --build-context "model=$stage/model")
else
  mkdir -p "$stage/rust" "$stage/python"
  sysroot=$(rustc --print sysroot)
  have=$(rustc --version | cut -d' ' -f2)
  [ "${have%.*}" = "$rust_version" ] || log "warning: this machine's rustc is $have, the Dockerfile names $rust_version"
  if ! have_image "docker.io/library/rust:$rust_version-$release"; then
    cp -a "$sysroot" "$stage/rust/toolchain"
  fi
  derived_base "docker.io/library/rust:$rust_version-$release" "FROM docker.io/library/debian:$release-slim
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\
      ca-certificates gcc g++ make libc6-dev pkg-config git && rm -rf /var/lib/apt/lists/*
COPY toolchain /usr/local/rust
ENV CARGO_HOME=/usr/local/cargo PATH=/usr/local/cargo/bin:/usr/local/rust/bin:/usr/sbin:/usr/bin:/sbin:/bin" "$stage/rust"
  derived_base "docker.io/library/python:3.11-slim-$release" "FROM docker.io/library/debian:$release-slim
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\
      ca-certificates python3 python3-pip && rm -rf /var/lib/apt/lists/* \\
 && ln -s /usr/bin/python3 /usr/local/bin/python" "$stage/python"
fi

log "podman build ($mode) → $image"
started=$SECONDS
# docker format: OCI images carry no HEALTHCHECK.
podman build "${podman_flags[@]}" "${limits[@]}" --pull=never --network host --format docker \
  "${ca_flags[@]}" "${contexts[@]}" -t "$image" -f Dockerfile . >&2
log "built in $((SECONDS - started)) s"
bytes=$(podman image inspect --format '{{.Size}}' "$image")
log "image size: $((bytes / 1024 / 1024)) MiB ($bytes bytes)"
echo "$image"
