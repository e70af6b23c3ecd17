#!/usr/bin/env bash
# Makes sure a Docker engine answers and debootstrap is present (for building the
# sandbox base image), and a compose tool for .ci/compose-check.sh (Debian's docker-compose
# where the plugin is missing). Idempotent; run as root on Debian bookworm.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v debootstrap >/dev/null || need+=(debootstrap)
docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null || need+=(docker-compose)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -q
  apt-get install -y -q "${need[@]}"
fi

if ! docker info >/dev/null 2>&1; then
  echo "docker.sh: starting dockerd (log: /var/log/dockerd-ci.log)"
  nohup dockerd >/var/log/dockerd-ci.log 2>&1 &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
fi

if ! docker info >/dev/null 2>&1; then
  echo "docker.sh: the Docker engine did not answer within 60 s" >&2
  tail -n 50 /var/log/dockerd-ci.log >&2 2>/dev/null || true
  exit 1
fi
echo "docker.sh: engine $(docker version --format '{{.Server.Version}}') ready"
