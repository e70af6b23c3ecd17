#!/usr/bin/env bash
# The images the suite needs, built before the tests start: never inside a test, where a fresh
# machine's first build (many minutes) would run under the test's timeout. Each image is tagged
# by a hash of its inputs and reused when present, so this takes about a second once they exist.
# Needs the Docker engine (.ci/docker.sh) and Clade installed (pip install -e '.[dev]').
set -euo pipefail
cd "$(dirname "$0")/.."
# Clade's base image, the agent runtime and the Polyglot toolchain image.
python3 -m cli.main images build --benchmark polyglot
# The test-only task images (tests/worker/foreign_images.py).
python3 -m tests.images
