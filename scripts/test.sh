#!/usr/bin/env bash
# The test command: installs and starts PostgreSQL, Redis, Docker and Chromium (Debian packages; needs root
# on a fresh machine), installs Clade, builds the dashboard, then runs the whole suite.
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/services.sh
bash .ci/docker.sh
python3 -m pip install -q -e '.[dev]'
bash .ci/browser.sh
bash web/build.sh
python3 -m pytest -q "$@"
