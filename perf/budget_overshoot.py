"""Budget overshoot at parallelism 4: how far a run's spend goes past max_usd / max_tokens.

Runs the simulated parallel run of tests/service/budget_sim.py (the real run driver over SQLite,
each job's calls through a real gateway to the scripted model at a dear price, the jobs of one
tick side by side, each calling until refused) and prints spend, limit, overshoot and the
costliest single call (the goal: overshoot at most one call).

    python perf/budget_overshoot.py                   # this checkout
    python perf/budget_overshoot.py --code /work/main # the same simulation on another checkout's code
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
SCENARIOS: list[tuple[str, dict[str, float], int]] = [
    ("max_usd $1, first stage", {"max_usd": 1.0}, 12),
    ("max_usd $3, through children", {"max_usd": 3.0}, 6),
    ("max_tokens 5000", {"max_tokens": 5000}, 12),
]


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--code", type=Path, default=HERE, help="the checkout whose Clade is measured")
    args = parser.parse_args()
    sys.path.insert(0, str(args.code.resolve()))
    spec = importlib.util.spec_from_file_location("budget_sim", HERE / "tests" / "service" / "budget_sim.py")
    assert spec is not None and spec.loader is not None
    sim = importlib.util.module_from_spec(spec)
    sys.modules["budget_sim"] = sim
    spec.loader.exec_module(sim)
    print(f"code: {args.code}")
    for name, limits, calls in SCENARIOS:
        with tempfile.TemporaryDirectory(prefix="clade-budget-") as tmp:
            out = sim.simulate(Path(tmp), parallelism=4, calls_per_job=calls, **limits)
        if out.max_usd is not None:
            figures = f"spent ${out.spent_usd:.4f} of ${out.max_usd:.2f}: overshoot ${out.overshoot_usd:+.4f}"
            calls_over = out.overshoot_usd / out.worst_call_usd
        else:
            figures = f"spent {out.spent_tokens} of {out.max_tokens} tokens:"
            figures += f" overshoot {out.overshoot_tokens:+d}"
            calls_over = out.overshoot_tokens / out.worst_call_tokens
        print(f"{name:30} {figures} ({calls_over:+.1f} calls; {out.jobs} jobs) | {out.stop_reason}")


if __name__ == "__main__":
    main()
