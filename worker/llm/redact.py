"""Cutting the real API key out of text an upstream sent back, before the sandbox sees it.

An upstream (or a proxy in front of it) may quote the key in an error: the whole
`Authorization: Bearer <key>` header, part of it, URL-encoded in a link, JSON-escaped in a
body. A fixed-width cut of the text can leave any prefix of it. So every run of
MIN_RUN or more consecutive characters of the key, in each of those encodings, is replaced,
and only then is the text cut to size.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from urllib.parse import quote

MIN_RUN = 8
REDACTED = "[redacted]"
_SCAN_BEYOND_CUT = 10_000  # far longer than any encoding of a key


class Redactor:
    def __init__(self, secrets: Iterable[str], min_run: int = MIN_RUN) -> None:
        self._secrets = [s for s in secrets if s]
        self._min_run = min_run
        forms = {form for secret in self._secrets for form in _encodings(secret)}
        # Every window of `min_run` characters of every form: a longer run is a chain of them.
        self._windows = {
            form[i : i + min_run]
            for form in forms
            if len(form) >= min_run
            for i in range(len(form) - min_run + 1)
        }

    def __call__(self, text: str) -> str:
        for secret in self._secrets:  # keys shorter than a window: at least the whole key
            text = text.replace(secret, REDACTED)
        if not self._windows:
            return text
        n = self._min_run
        covered = [False] * len(text)
        for start in range(len(text) - n + 1):
            if text[start : start + n] in self._windows:
                covered[start : start + n] = [True] * n
        if not any(covered):
            return text
        out: list[str] = []
        for index, char in enumerate(text):
            if not covered[index]:
                out.append(char)
            elif index == 0 or not covered[index - 1]:
                out.append(REDACTED)
        return "".join(out)

    def cut(self, text: str, max_chars: int) -> str:
        """Redacted first, then at most `max_chars` (a cut never leaves part of a key behind).
        Text far past the cut is dropped first: it cannot reach the result, and a page of
        megabytes would be slow to scan."""
        return self(text[: max_chars + _SCAN_BEYOND_CUT])[:max_chars]


def _encodings(secret: str) -> set[str]:
    return {
        secret,
        quote(secret, safe=""),
        quote(secret),
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=True)[1:-1],
    }
