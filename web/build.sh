#!/usr/bin/env bash
# Builds the dashboard into web/dist/, which the service serves at /. Idempotent.
# Needs Node.js >= 20.19 with npm, and the project installed (`pip install -e .`): the API
# types are generated from the service's OpenAPI schema, dumped without a running server.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${PYTHON:-python3}"

if ! command -v npm >/dev/null; then
  echo "web/build.sh: npm is missing (install Node.js 20 or newer)" >&2
  exit 1
fi
# npm ci installs exactly package-lock.json; skipped when node_modules already matches it.
if [ ! -f node_modules/.package-lock.json ] || ! cmp -s package-lock.json node_modules/.clade-lock; then
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json node_modules/.clade-lock
fi
(cd .. && "$PYTHON" -m service.api.openapi --out web/openapi.json)
npx --no-install openapi-typescript openapi.json --output src/api/schema.d.ts --silent
npx --no-install tsc --noEmit
npx --no-install vite build --logLevel warn
echo "web/build.sh: built $(pwd)/dist"
