"""Clade's per-evaluation overhead, and sandbox start to first command, measured side by side.

Each evaluation goes through the real path (tests/worker/harness.py): a live service
(SQLite), a trivial seed agent imported over HTTP (one scripted model call, one edit:
it resolves clade-mini__textkit-1), a run created over HTTP, its evaluation opened by
the run driver's code, then `worker.evaluate.evaluate(ctx, job)` with a WorkerContext
built by `build_context`, and a scripted OpenAI-compatible server as the model.

    overhead = evaluation wall time (evaluate() called -> result stored by the service)
               - the agent's own run (its command in the sandbox: `durations.agent_s`)
               - the tests' own run (the test command in the grading sandbox)

The tests' own run is not in the result (`grade_s` and GradeReport.duration_s also hold
the grading sandbox's start and removal, the repository copy and the patches), so the
worker's sandbox backend is wrapped in a stopwatch that records each sandbox's start,
each command's duration as the backend reports it (ExecResult.duration_s) and each
removal; the same numbers give the breakdown printed below the figures.

Sandbox start to first command is measured as perf/sandbox_start.py does (start a sandbox
from the base image, run `true`, stop the clock when the result is back), one after
each evaluation, on the same engine and backend.

    python perf/evaluation_overhead.py [--runs 10] [--warmup 1] [--profile 3]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from perf.sandbox_start import GOAL_S as SANDBOX_GOAL_S
from perf.sandbox_start import percentile
from sandbox.base import LABEL_PREFIX, ExecResult, Sandbox, SandboxBackend, SandboxSpec
from tests.worker.harness import EvaluationStack, evaluation_stack, make_agent

OVERHEAD_GOAL_S = 1.5
GRADE_PURPOSE = f"{LABEL_PREFIX}.purpose"


@dataclass
class Stopwatch:
    """Seconds per labelled span ("agent.start", "grade.exec", ...) since the last reset."""

    spans: dict[str, list[float]] = field(default_factory=dict)

    def add(self, label: str, seconds: float) -> None:
        self.spans.setdefault(label, []).append(seconds)

    def total(self, label: str) -> float:
        return sum(self.spans.get(label, []))

    def reset(self) -> None:
        self.spans = {}


class TimedSandbox:
    def __init__(self, inner: Sandbox, watch: Stopwatch, role: str) -> None:
        self._inner, self._watch, self._role = inner, watch, role

    @property
    def id(self) -> str:
        return self._inner.id

    def exec(
        self,
        command: list[str],
        *,
        timeout_s: float,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> ExecResult:
        result = self._inner.exec(command, timeout_s=timeout_s, env=env, cwd=cwd)
        self._watch.add(f"{self._role}.exec", result.duration_s)
        return result

    def write_file(self, path: str, data: bytes) -> None:
        self._inner.write_file(path, data)

    def read_file(self, path: str, *, max_bytes: int = 10_000_000) -> bytes:
        return self._inner.read_file(path, max_bytes=max_bytes)

    def close(self) -> None:
        began = time.perf_counter()
        self._inner.close()
        self._watch.add(f"{self._role}.close", time.perf_counter() - began)


class TimedBackend:
    """The worker's real backend, with a stopwatch around sandbox start, commands and removal."""

    def __init__(self, inner: SandboxBackend, watch: Stopwatch) -> None:
        self._inner, self._watch = inner, watch
        self.name = inner.name

    def start(self, spec: SandboxSpec) -> Sandbox:
        role = "grade" if spec.labels.get(GRADE_PURPOSE) == "grade" else "agent"
        began = time.perf_counter()
        sandbox = self._inner.start(spec)
        self._watch.add(f"{role}.start", time.perf_counter() - began)
        return TimedSandbox(sandbox, self._watch, role)

    def remove_orphans(self, owner: str | None = None) -> list[str]:
        return self._inner.remove_orphans(owner)

    def remove_abandoned(self) -> list[str]:
        return self._inner.remove_abandoned()


@dataclass
class Sample:
    wall: float
    agent: float
    tests: float
    parts: dict[str, float]

    @property
    def overhead(self) -> float:
        return self.wall - self.agent - self.tests


def evaluate_once(stack: EvaluationStack, agent: Path, watch: Stopwatch) -> Sample:
    watch.reset()
    evaluated = stack.evaluate(agent)
    result = evaluated.result
    if not result.resolved:
        raise SystemExit(
            f"the trivial agent did not resolve its task: {result.failure or result.grade_reason}"
        )
    d = result.durations
    tests = watch.total("grade.exec")
    grade_sandbox = watch.total("grade.start") + watch.total("grade.close")
    parts = {
        "workspace, repository copy, gateway start": d.setup_s - watch.total("agent.start"),
        "agent sandbox: create + start": watch.total("agent.start"),
        "agent sandbox: remove": watch.total("agent.close"),
        "fetch code + image lookup; gateway stop + git diff + cleanup": d.total_s
        - d.setup_s
        - d.agent_s
        - watch.total("agent.close")
        - d.grade_s,
        "grading outside its sandbox: repository copy, patches, results": d.grade_s - tests - grade_sandbox,
        "grading sandbox: create + start": watch.total("grade.start"),
        "grading sandbox: remove": watch.total("grade.close"),
        "submit the result to the service": evaluated.wall_s - d.total_s,
    }
    return Sample(wall=evaluated.wall_s, agent=d.agent_s, tests=tests, parts=parts)


def launch_floor(stack: EvaluationStack, root: Path, runs: int) -> list[float]:
    """`agent_s` of an agent whose solve command is `true`: the forwarder's start and the shell
    that Clade runs before the agent's command, which `agent_s` (hence "the agent's own run") holds."""
    noop = root / "agents" / "noop"
    noop.mkdir(parents=True)
    (noop / "agent.toml").write_text('name = "noop"\nsolve = "true"\n')
    return [stack.evaluate(noop).result.durations.agent_s for _ in range(runs)]


def sandbox_start_once(backend: SandboxBackend, image: str) -> float:
    """As perf/sandbox_start.py: start, run `true`, stop the clock when the result is back."""
    began = time.perf_counter()
    sandbox = backend.start(SandboxSpec(image=image))
    try:
        result = sandbox.exec(["true"], timeout_s=30)
        ready = time.perf_counter()
    finally:
        sandbox.close()
    if result.exit_code != 0:
        raise SystemExit(f"first command failed: {result}")
    return ready - began


def figure(name: str, values: list[float], goal: float) -> tuple[str, bool]:
    median, p90 = statistics.median(values), percentile(values, 0.9)
    verdict = "meets" if median < goal else "MISSES"
    line = (
        f"{name:<34} median {median:6.3f} s  p90 {p90:6.3f} s  | goal: median under {goal:.1f} s"
        f"  | ratio {median / goal:.2f}  {verdict}"
    )
    return line, median < goal


def profile(stack: EvaluationStack, agent: Path, runs: int) -> None:
    """Where the time goes inside evaluate(), by function (cumulative seconds per evaluation)."""
    profiler = cProfile.Profile()
    for _ in range(runs):
        profiler.enable()
        stack.evaluate(agent)
        profiler.disable()
    stats = pstats.Stats(profiler)
    wanted = {
        ("worker/evaluate.py", "evaluate"),
        ("worker/service_client.py", "agent_code"),
        ("worker/service_client.py", "submit_result"),
        ("worker/manifests.py", "manifest_from_tar"),
        ("worker/context.py", "for_agent"),
        ("worker/context.py", "base"),
        ("worker/agent_runner.py", "run_agent"),
        ("worker/workspace.py", "unpack_agent"),
        ("worker/workspace.py", "hand_over"),
        ("worker/workspace.py", "diff"),
        ("worker/workspace.py", "close"),
        ("benchmarks/clade_mini/__init__.py", "prepare_repo"),
        ("benchmarks/clade_mini/__init__.py", "grade"),
        ("benchmarks/pytest_grading.py", "grade_pytest"),
        ("benchmarks/gitops.py", "apply_patch"),
        ("benchmarks/gitops.py", "reset_paths"),
        ("worker/llm/gateway.py", "__enter__"),
        ("worker/llm/gateway.py", "__exit__"),
        ("sandbox/docker_backend.py", "start"),
        ("sandbox/docker_sandbox.py", "exec"),
        ("sandbox/docker_sandbox.py", "close"),
    }
    rows = []
    for (filename, _line, function), (_cc, calls, _tt, cumulative, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        if any(filename.endswith(path) and function == name for path, name in wanted):
            short = filename.split("/work/main/")[-1] if "/work/main/" in filename else filename
            rows.append((cumulative / runs, calls / runs, f"{short}:{function}"))
    print(f"\nprofile over {runs} evaluations (cProfile; cumulative seconds per evaluation):")
    for seconds, calls, name in sorted(rows, reverse=True):
        print(f"  {seconds:7.3f} s  {calls:5.1f} calls  {name}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="measured evaluations (default 10)")
    parser.add_argument("--warmup", type=int, default=1, help="evaluations run first, not measured")
    parser.add_argument("--profile", type=int, default=0, help="extra evaluations under cProfile")
    args = parser.parse_args()

    watch = Stopwatch()
    with tempfile.TemporaryDirectory(prefix="clade-perf-eval-") as tmp:
        root = Path(tmp)
        secret = f"sk-perf-{uuid.uuid4().hex}"
        owner = f"perf-evaluation-{uuid.uuid4().hex[:8]}"
        with evaluation_stack(root, secret=secret, owner=owner) as stack:
            real_backend = stack.ctx.backend
            stack.ctx.backend = TimedBackend(real_backend, watch)
            image = stack.ctx.images.base()
            agent = make_agent(root / "agents" / "trivial", "well_behaved")
            for _ in range(args.warmup):
                evaluate_once(stack, agent, watch)
                sandbox_start_once(real_backend, image)
            samples: list[Sample] = []
            starts: list[float] = []
            for _ in range(args.runs):
                samples.append(evaluate_once(stack, agent, watch))
                starts.append(sandbox_start_once(real_backend, image))
            launches = launch_floor(stack, root, max(3, args.runs // 2))
            if args.profile:
                profile(stack, agent, args.profile)

    print(
        f"\n{args.runs} evaluations of a trivial agent on clade-mini__textkit-1 (after {args.warmup} warm-up)"
    )
    print(f"  evaluation wall time    median {statistics.median(s.wall for s in samples):.3f} s")
    print(f"  agent's own run         median {statistics.median(s.agent for s in samples):.3f} s")
    print(f"  tests' own run          median {statistics.median(s.tests for s in samples):.3f} s")
    print("  breakdown of the overhead (medians; they need not add up to the median overhead):")
    for part in samples[0].parts:
        print(f"    {statistics.median(s.parts[part] for s in samples):6.3f} s  {part}")
    launch = statistics.median(launches)
    overheads = [s.overhead for s in samples]
    print(f"  within agent_s, Clade's launch (forwarder start, shell): median {launch:.3f} s")
    with_launch = statistics.median(overheads) + launch
    print(f"  overhead counting that launch as Clade's too: median {with_launch:.3f} s")
    print()
    lines = [
        figure("evaluation overhead", overheads, OVERHEAD_GOAL_S),
        figure("sandbox start -> first command", starts, SANDBOX_GOAL_S),
    ]
    for line, _ok in lines:
        print(line)
    return 0 if all(ok for _line, ok in lines) else 1


if __name__ == "__main__":
    sys.exit(main())
