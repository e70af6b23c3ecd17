#!/usr/bin/env bash
# The test command: installs and starts PostgreSQL, Redis and Docker (Debian packages; needs root
# on a fresh machine), installs Clade, then runs the whole suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/services.sh
bash .ci/docker.sh
python3 -m pip install -q -e '.[dev]'
python3 -m pytest -q "$@"
