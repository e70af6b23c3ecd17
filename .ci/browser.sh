#!/usr/bin/env bash
# What the dashboard's browser tests need: Debian's Chromium and Playwright for Python (which
# drives that Chromium; no browser is downloaded). Idempotent; run as root on Debian.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

if [ ! -x /usr/bin/chromium ]; then
  apt-get update -q
  apt-get install -y -q chromium
fi
if ! python3 -c "import playwright.sync_api" 2>/dev/null; then
  python3 -m pip install -q playwright
fi
echo "browser.sh: $(/usr/bin/chromium --version 2>/dev/null | head -n 1), playwright $(python3 -c 'from importlib.metadata import version; print(version("playwright"))')"
