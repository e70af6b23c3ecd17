#!/usr/bin/env bash
# Installs and starts what the tests talk to: PostgreSQL, Redis, Docker. Idempotent; run as root.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

need=()
command -v pg_ctlcluster >/dev/null || need+=(postgresql)
command -v redis-server >/dev/null || need+=(redis-server)
command -v git >/dev/null || need+=(git)
# `ip netns` and `ss`: the several-hosts test builds its hosts from network namespaces.
command -v ip >/dev/null || need+=(iproute2)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -q
  apt-get install -y -q "${need[@]}"
fi

# PostgreSQL: the newest installed version's cluster, and a role the tests use.
version=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
pg_lsclusters -h | awk '{print $1" "$2}' | grep -q "^$version main$" || pg_createcluster "$version" main
pg_ctlcluster "$version" main start 2>/dev/null || pg_ctlcluster "$version" main status >/dev/null
for _ in $(seq 1 30); do
  su postgres -c "psql -qtAc 'select 1'" >/dev/null 2>&1 && break
  sleep 1
done
su postgres -c "psql -qtAc \"select 1 from pg_roles where rolname='clade'\"" | grep -q 1 ||
  su postgres -c "psql -qc \"create role clade login superuser password 'clade'\""

# Redis on its default port.
redis-cli ping >/dev/null 2>&1 || redis-server --daemonize yes --port 6379 --save '' --appendonly no
for _ in $(seq 1 30); do redis-cli ping >/dev/null 2>&1 && break; sleep 0.5; done
redis-cli ping
