#!/bin/bash
# A broken verifier: a helper it needs is missing, and `set -e` ends it before any reward.
set -e
mkdir -p /logs/verifier
/tests/check-greeting /app/greeting.txt
echo 1 > /logs/verifier/reward.txt
