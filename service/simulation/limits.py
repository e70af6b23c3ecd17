"""Bounds on a sitting, shared by `clade sim`'s options and the `runs.json` it reads back.

They keep a typo from hanging the command: a 100,000-evaluation run takes minutes alone (a run
slows as its books grow), and 10,000 seeds a preset is far past any comparison's need.
"""

from __future__ import annotations

MIN_BUDGET = 100
MAX_BUDGET = 100_000
MAX_SEEDS = 10_000
