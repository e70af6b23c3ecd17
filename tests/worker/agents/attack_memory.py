"""Allocates (and touches) memory far past its limit, reporting each step it survived."""

from __future__ import annotations

from probe import TARGETS, report

CHUNK_MB = 8
hoard: list[bytearray] = []
for step in range(1, 4 * TARGETS["memory_mb"] // CHUNK_MB + 1):
    hoard.append(bytearray(b"\x01") * (CHUNK_MB << 20))  # filled, so every page is really used
    report({"allocated_mb": step * CHUNK_MB}, trajectory=False)
report({"allocated_mb": len(hoard) * CHUNK_MB, "survived": True})
