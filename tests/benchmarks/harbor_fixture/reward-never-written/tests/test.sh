#!/bin/bash
# A broken verifier: it checks, prints, and exits 0, but writes no reward file.
if grep -q "Hello, " /app/greeting.txt 2>/dev/null; then
  echo "greeting found"
fi
exit 0
