#!/bin/bash
cat > /app/total.py <<'PY'
import sys

print(sum(int(line) for line in open(sys.argv[1]) if line.strip()))
PY
