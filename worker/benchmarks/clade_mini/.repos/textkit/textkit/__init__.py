"""textkit: small, dependency-free text utilities."""

from textkit.slug import slugify
from textkit.wrap import truncate, wrap

__all__ = ["slugify", "truncate", "wrap"]
