"""`clade sim` speed and memory: simulated steps per minute and peak memory on this checkout
and on another, side by side.

Each round runs the same simulated runs (preset, landscape, seeds, budget) once with each
checkout's code, in a fresh interpreter each, alternating, so that both see the same machine
load; it prints each side's steps per minute and peak resident memory, whether both gave the
same runs, and the ratios. `--tasks N` widens the landscape's pool, where an agent's memory shows.

    python perf/sim_speed.py --other /path/to/older/checkout     # e.g. a `git worktree add` of main
    python perf/sim_speed.py --other ../main --rounds 3 --budget 1000 --seeds 2
    python perf/sim_speed.py --other ../main --preset clade-above-seed-3 --tasks 10000 --seeds 1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
CHILD = """
import dataclasses, json, resource, sys, time
from service.simulation.landscape import LANDSCAPES
from service.simulation.presets import PRESETS
from service.simulation.runner import simulate
preset, landscape, seeds, budget = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
tasks = int(sys.argv[5])
config = LANDSCAPES[landscape]
if tasks:
    config = dataclasses.replace(config, name=f"{landscape}-{tasks}", tasks=tasks)
started = time.perf_counter()
runs = [simulate(PRESETS[preset], config, seed, budget) for seed in range(seeds)]
print(json.dumps({
    "seconds": time.perf_counter() - started,
    "steps": sum(r.steps for r in runs),
    "peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    "finals": [[r.final.evaluations, r.final.picked, r.final.best] for r in runs],
}))
"""


def measure(code: Path, args: argparse.Namespace) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(code)}
    command = [
        sys.executable,
        "-c",
        CHILD,
        args.preset,
        args.landscape,
        str(args.seeds),
        str(args.budget),
        str(args.tasks),
    ]
    done = subprocess.run(
        command, cwd=code, env=env, capture_output=True, text=True, check=True, timeout=3600
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--other", type=Path, required=True, help="the checkout to compare with")
    parser.add_argument("--preset", default="dgm")
    parser.add_argument("--landscape", default="default")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--budget", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=0, help="the landscape's pool size (0: as built in)")
    args = parser.parse_args()
    sides = {"this": HERE, "other": args.other.resolve()}
    totals = {name: [0.0, 0] for name in sides}
    finals: dict[str, object] = {}
    peak = dict.fromkeys(sides, 0)
    for round_number in range(args.rounds):
        order = list(sides) if round_number % 2 == 0 else list(reversed(sides))  # neither always first
        for name in order:
            out = measure(sides[name], args)
            totals[name][0] += float(out["seconds"])  # type: ignore[arg-type]
            totals[name][1] += int(out["steps"])  # type: ignore[call-overload]
            finals[name] = out["finals"]
            kib = int(out["peak_kib"])  # type: ignore[call-overload]
            peak[name] = max(peak[name], kib)
            took = f"{out['steps']} steps in {out['seconds']:.1f} s, peak {kib // 1024} MiB"
            print(f"round {round_number + 1} {name:5} {sides[name]}: {took}")
    rate = {name: steps / seconds * 60 for name, (seconds, steps) in totals.items()}
    for name in sides:
        print(f"{name:5} {sides[name]}: {rate[name]:,.0f} steps/minute, peak {peak[name] // 1024} MiB")
    print(f"same runs on both sides: {finals['this'] == finals['other']}")
    print(
        f"this / other: {rate['this'] / rate['other']:.2f}x the speed, "
        f"{peak['this'] / peak['other']:.2f}x the peak memory"
    )


if __name__ == "__main__":
    main()
