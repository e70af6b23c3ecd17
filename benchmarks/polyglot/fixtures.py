"""Where the exercises shipped with Clade live: the `fixtures/` folder next to this module.

`fixtures/` holds Python exercises in the Aider polyglot layout
(`python/exercises/practice/<exercise>/`, see its README). They are data, not Clade
code, and are kept away from the linters:

- ruff: `fixtures/ruff.toml` excludes everything under it;
- mypy: this module has the folder's name, so `benchmarks.polyglot.fixtures`
  resolves to this file and mypy (like Python) never walks into the folder as a
  namespace package. Do not rename one without the other.
"""

from __future__ import annotations

from pathlib import Path

FIXTURES_DIR = Path(__file__).with_suffix("")
