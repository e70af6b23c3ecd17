#!/usr/bin/env bash
# The test command: installs and starts PostgreSQL, Redis, Docker and Chromium (Debian packages; needs root
# on a fresh machine), installs Clade, builds the dashboard and the sandbox images (scripts/test-images.sh:
# before the tests, never under a test's timeout; about a second when they exist) and the real model
# server of the real-model tier (scripts/llama-server.sh: about ten minutes the first time, at once
# after), then runs the whole suite. Extra arguments go to pytest. The quick path, no Docker: python3 -m pytest -q -m "not docker".
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/services.sh
bash .ci/docker.sh
python3 -m pip install -q -e '.[dev]'
bash .ci/browser.sh
bash web/build.sh
bash scripts/test-images.sh
bash scripts/llama-server.sh >/dev/null
python3 -m pytest -q "$@"
