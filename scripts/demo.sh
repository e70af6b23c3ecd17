#!/usr/bin/env bash
# The main job on a fresh machine: Docker (Debian's docker.io), Clade itself, then `clade demo`:
# a small evolution run on clade-mini with embedded defaults (SQLite, the file broker, and the
# scripted offline model unless CLADE_LLM_BASE_URL points at a real OpenAI-compatible endpoint).
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/docker.sh
python3 -m pip install -q -e .
bash web/build.sh || echo "demo: dashboard not built (needs Node.js and npm); the API works without it"
echo "demo: while it runs, the dashboard is at ${CLADE_SERVICE_URL:-http://127.0.0.1:8420}/"
exec clade demo "$@"
