"""The sizes a git binary patch declares, read without applying it.

`git apply` inflates each binary hunk into a buffer of the size its header declares, and a
delta hunk into the target size written at the start of the delta. A patch of a few kilobytes
can declare gigabytes; reading the declarations first refuses it before git allocates anything.
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib
from collections.abc import Iterator

_HUNK = re.compile(r"^(literal|delta) (\d+)$")
# The first bytes of a delta: two little-endian base-128 numbers, the source and target sizes.
_DELTA_HEADER_BYTES = 20


def declared_sizes(patch: str) -> Iterator[int]:
    """Every size the binary hunks of `patch` declare: inflated hunk sizes and delta targets."""
    lines = patch.splitlines()
    for index, line in enumerate(lines):
        match = _HUNK.match(line)
        if match is None:
            continue
        yield int(match.group(2))
        if match.group(1) == "delta":
            target = _delta_target(lines, index + 1)
            if target is not None:
                yield target


def _delta_target(lines: list[str], start: int) -> int | None:
    """The target size of the delta whose base85 lines begin at `start` (None if unreadable:
    git refuses such a hunk itself)."""
    inflater = zlib.decompressobj()
    head = b""
    for line in lines[start:]:
        decoded = _decode_line(line)
        if decoded is None:
            return None
        try:
            head += inflater.decompress(decoded, _DELTA_HEADER_BYTES - len(head))
        except zlib.error:
            return None
        if len(head) >= _DELTA_HEADER_BYTES or inflater.eof:
            break
    numbers = _varints(head, 2)
    return numbers[1] if len(numbers) == 2 else None


def _decode_line(line: str) -> bytes | None:
    """One line of git's base85: a length letter (A-Z 1-26, a-z 27-52), then the data."""
    if not line:
        return None
    letter = line[0]
    if "A" <= letter <= "Z":
        length = ord(letter) - ord("A") + 1
    elif "a" <= letter <= "z":
        length = ord(letter) - ord("a") + 27
    else:
        return None
    try:
        return base64.b85decode(line[1:])[:length]
    except (ValueError, binascii.Error):
        return None


def _varints(data: bytes, count: int) -> list[int]:
    numbers: list[int] = []
    value = shift = 0
    for byte in data:
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            numbers.append(value)
            if len(numbers) == count:
                break
            value = shift = 0
    return numbers
