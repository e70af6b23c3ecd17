#!/bin/bash
# The verifier runs the agent's program on numbers it has never seen.
mkdir -p /logs/verifier
printf '7\n-2\n40\n' > /tmp/check.txt
if [ "$(python3 /app/total.py /tmp/check.txt 2>/dev/null)" = "45" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
exit 0
