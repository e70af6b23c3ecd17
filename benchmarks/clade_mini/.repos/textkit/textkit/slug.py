"""URL slugs."""

import re
import unicodedata


def _ascii(text: str) -> str:
    """Drop accents: "é" -> "e". Characters with no ASCII form are removed."""
    decomposed = unicodedata.normalize("NFKD", text)
    return decomposed.encode("ascii", "ignore").decode("ascii")


def slugify(text: str, sep: str = "-", max_length: int | None = None) -> str:
    """Turn `text` into a lowercase ASCII slug for URLs.

    Letters and digits are kept; every run of other characters becomes a single
    `sep`, and the slug never starts or ends with `sep`. With `max_length`, the
    slug is cut to at most that many characters (and does not end with `sep`).
    """
    slug = _ascii(text).lower()
    slug = re.sub(r"[^a-z0-9]", sep, slug).strip(sep)
    if max_length is not None:
        slug = slug[:max_length].rstrip(sep)
    return slug
