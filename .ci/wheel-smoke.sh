#!/usr/bin/env bash
# The built wheel works on its own: build it (the dashboard and the seed agent go in, see setup.py),
# install it into a fresh venv, and from outside the checkout check that `clade up` serves the
# dashboard at / and that the packaged seed agent imports, into the archive and as Python.
# Needs a running Docker engine (the worker `clade up` starts connects to it) and a package index for
# the wheel's dependencies. Every wait has a deadline; the stack is stopped with SIGTERM, as Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
CHECKOUT=$(pwd)
WORK=$(mktemp -d /tmp/clade-wheel-smoke.XXXXXX)
UP_PID=""
cleanup() {
  if [ -n "$UP_PID" ] && kill -0 "$UP_PID" 2>/dev/null; then
    kill -TERM "$UP_PID" 2>/dev/null || true
    wait "$UP_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
  echo "wheel-smoke: $*" >&2
  for log in "$WORK"/up.log "$WORK"/data/logs/*.log; do
    [ -f "$log" ] && { echo "--- $log" >&2; tail -n 30 "$log" >&2; }
  done
  exit 1
}

# pip builds in the tree; a stale build/ could put modules since deleted into the wheel.
rm -rf build
python3 -m pip wheel -q --no-deps -w "$WORK/wheel" .
echo "wheel-smoke: wheel built (${SECONDS}s)"
WHEEL=$(ls "$WORK"/wheel/clade-*.whl)
python3 -m venv "$WORK/venv"
PY="$WORK/venv/bin/python"
"$PY" -m pip install -q "$WHEEL"
echo "wheel-smoke: installed $(basename "$WHEEL") into a fresh venv (${SECONDS}s)"

# From here on nothing may come from the checkout: run outside it, with no CLADE_* settings inherited.
cd "$WORK"
for name in $(env | sed -n 's/^\(CLADE_[A-Z_]*\)=.*/\1/p'); do unset "$name"; done
unset PYTHONPATH
PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export CLADE_DATA_DIR="$WORK/data" CLADE_SERVICE_URL="http://127.0.0.1:$PORT"

SEED=$("$PY" -c 'from cli.stack import SEED_AGENT_DIR; print(SEED_AGENT_DIR)')
DIST=$("$PY" -c 'from service.api.routers.dashboard import DEFAULT_DIST; print(DEFAULT_DIST)')
for dir in "$SEED" "$DIST"; do
  case "$dir" in "$WORK/venv/"*) ;; *) fail "$dir is not inside the installed wheel" ;; esac
  case "$dir" in "$CHECKOUT"*) fail "$dir is in the checkout" ;; esac
done
(cd "$SEED" && "$PY" -c 'import agent.loop, agent.tools') || fail "the packaged seed agent does not import"

"$WORK/venv/bin/clade" up --concurrency 1 >"$WORK/up.log" 2>&1 &
UP_PID=$!
# GET / must answer 200 with the built dashboard (not the "not built" page), and its script must load.
"$PY" - "$CLADE_SERVICE_URL" "$UP_PID" <<'EOF' || fail "clade up did not serve the dashboard"
import os, re, sys, time
import httpx

url, pid = sys.argv[1], int(sys.argv[2])
deadline = time.monotonic() + 120
while True:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit("clade up exited")
    try:
        page = httpx.get(url + "/", timeout=5)
        if page.status_code == 200:
            break
    except httpx.TransportError:
        pass
    if time.monotonic() > deadline:
        sys.exit("no answer at / within 120 s")
    time.sleep(0.5)
assert "<title>Clade</title>" in page.text, page.text[:300]
script = re.search(r'src="(/assets/[^"]+\.js)"', page.text)
assert script, "no script in the dashboard page"
asset = httpx.get(url + script.group(1), timeout=5)
assert asset.status_code == 200 and len(asset.content) > 10_000, asset.status_code
print(f"wheel-smoke: GET / -> 200, the dashboard page; {script.group(1)} -> 200")
EOF

# The worker must be up too: `clade up` prints its banner once the service answers, and would exit if
# a process it started died.
imported=$("$WORK/venv/bin/clade" seed import "$SEED" --name clade-seed) || fail "clade seed import failed"
echo "wheel-smoke: $imported (${SECONDS}s)"
case "$imported" in *"imported: "*) ;; *) fail "unexpected output of clade seed import" ;; esac
kill -0 "$UP_PID" 2>/dev/null || fail "clade up exited early"

kill -TERM "$UP_PID"
for _ in $(seq 1 120); do
  kill -0 "$UP_PID" 2>/dev/null || break
  sleep 0.5
done
kill -0 "$UP_PID" 2>/dev/null && fail "clade up still running 60 s after SIGTERM"
status=0
wait "$UP_PID" || status=$?
UP_PID=""
[ "$status" -eq 0 ] || fail "clade up exited with $status after SIGTERM"
left=$(pgrep -f "$WORK/venv/bin/" || true)
[ -z "$left" ] || fail "processes left behind by clade up: $left"
grep -q "stopping" "$WORK/up.log" || fail "clade up did not say it was stopping"
echo "wheel-smoke: clade up stopped cleanly; the wheel works on its own (${SECONDS}s)"
