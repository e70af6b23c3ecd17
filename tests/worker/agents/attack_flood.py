"""Writes far past every output cap: 50 MB to stdout, 10 MB to stderr, a 20 MB trajectory
and a 20 MB file in the repository (a diff far over the patch cap)."""

from __future__ import annotations

import sys

from probe import OUT, REPO

line = "flood " * 170 + "\n"  # about 1 kB
for _ in range(50_000):
    sys.stdout.write(line)
for _ in range(10_000):
    sys.stderr.write(line)
sys.stdout.flush()
(OUT / "trajectory.json").write_text('{"steps": ["' + "x" * 20_000_000 + '"]}')
(REPO / "huge.txt").write_text(line * 20_000)
print("flood done", flush=True)
