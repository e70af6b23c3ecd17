"""textkit: small, dependency-free text utilities."""

from textkit.case import camel_case, snake_case, title_case
from textkit.slug import slugify
from textkit.wrap import truncate, wrap

__all__ = ["camel_case", "slugify", "snake_case", "title_case", "truncate", "wrap"]
