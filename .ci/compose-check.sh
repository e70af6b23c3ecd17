#!/usr/bin/env bash
# Checks compose.yaml: `docker compose config` (the plugin) or Debian's `docker-compose config`
# (.ci/docker.sh installs it where the plugin is missing). Only parses and resolves the file,
# with placeholder values for the variables it requires; nothing is built or started.
set -euo pipefail
cd "$(dirname "$0")/.."

if docker compose version >/dev/null 2>&1; then
  compose=(docker compose)
elif command -v docker-compose >/dev/null; then
  compose=(docker-compose)
else
  echo "compose-check.sh: neither 'docker compose' nor 'docker-compose' is installed (run .ci/docker.sh)" >&2
  exit 1
fi

resolved=$(
  CLADE_ADMIN_TOKEN=ci-admin CLADE_WORKER_TOKEN=ci-worker CLADE_LLM_BASE_URL=http://llm.invalid/v1 \
    "${compose[@]}" --project-directory . -f compose.yaml config
)
# What the file promises: healthchecks on Postgres and Redis, and the worker's Docker socket.
for expected in "pg_isready" "redis-cli" "/var/run/docker.sock" "service_healthy"; do
  grep -q -- "$expected" <<<"$resolved" || { echo "compose-check.sh: '$expected' missing from compose.yaml" >&2; exit 1; }
done
echo "compose-check.sh: compose.yaml is valid (${compose[*]})"
