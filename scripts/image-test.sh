#!/usr/bin/env bash
# Run the BotCraft image with podman and check it from outside: health, a chat through the
# fake provider (forge-bash approved, forge-filesystem), Playwright's screenshot, users and
# capabilities, the attack probes inside the container, SIGTERM, a restart on the same
# volume. The checks are in scripts/image_test.py (its header lists them).
#
#   scripts/image.sh && scripts/image-test.sh [--image TAG] [--fake-llm PATH]
#
# Needs root's podman (the image's two users are real uids here) and target/debug/fake-llm
# (cargo build -p test-support --bin fake-llm).
set -euo pipefail
exec python3 "$(dirname "$0")/image_test.py" "$@"
