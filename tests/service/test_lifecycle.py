"""The lifecycle module: which status changes are allowed, and that nothing else writes a status."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path

import pytest

from contracts.errors import ConflictError
from service import lifecycle
from service.db.models import Evaluation, Run, RunAgent, Step
from service.lifecycle import (
    EvaluationStatus,
    IllegalTransitionError,
    MemberStatus,
    RunStatus,
    StepStatus,
    Transition,
)

ROOT = Path(__file__).resolve().parents[2]
# Only these may import the database models (import-linter keeps the others below or beside them).
PACKAGES = ("service", "cli")
ROWS = {"Run": Run, "Step": Step, "Evaluation": Evaluation, "RunAgent": RunAgent}
ENUM_OF: dict[type[object], type[StrEnum]] = {
    Run: RunStatus,
    Step: StepStatus,
    Evaluation: EvaluationStatus,
    RunAgent: MemberStatus,
}

# Every transition, as (row type, sources, target); "new" is a row not yet given a status.
EXPECTED = {
    "start_run": (Run, {"new"}, "running"),
    "pause_run": (Run, {"running"}, "paused"),
    "resume_run": (Run, {"paused"}, "running"),
    "cancel_run": (Run, {"running", "paused"}, "cancelled"),
    "complete_run": (Run, {"running"}, "completed"),
    "open_step": (Step, {"new"}, "pending"),
    "step_takes_child": (Step, {"pending"}, "evaluating"),
    "admit_step": (Step, {"evaluating"}, "admitted"),
    "reject_step": (Step, {"pending", "evaluating"}, "rejected"),
    "fail_step": (Step, {"pending"}, "failed"),
    "cancel_step": (Step, {"pending", "evaluating"}, "cancelled"),
    "queue_evaluation": (Evaluation, {"new"}, "pending"),
    "finish_evaluation": (Evaluation, {"pending"}, "done"),
    "copy_evaluation": (Evaluation, {"new"}, "done"),
    "cancel_evaluation": (Evaluation, {"pending"}, "cancelled"),
    "join_run": (RunAgent, {"new"}, "evaluating"),
    "join_rejected": (RunAgent, {"new"}, "rejected"),
    "admit_member": (RunAgent, {"evaluating"}, "admitted"),
    "reject_member": (RunAgent, {"evaluating"}, "rejected"),
}


AnyTransition = Transition[Run] | Transition[Step] | Transition[Evaluation] | Transition[RunAgent]


def transitions() -> dict[str, AnyTransition]:
    return {name: value for name, value in vars(lifecycle).items() if isinstance(value, Transition)}


def row_in(kind: type[Run | Step | Evaluation | RunAgent], status: str) -> Run | Step | Evaluation | RunAgent:
    """A row of `kind` in `status`, built in memory (no database needed to test a transition)."""
    row = RunAgent(run_id="r1", agent_id="a" * 40) if kind is RunAgent else kind(id="x1")
    if status != "new":
        row.status = status
    return row


def test_the_stored_values_are_the_ones_users_already_see() -> None:
    assert [s.value for s in RunStatus] == ["running", "paused", "completed", "cancelled"]
    assert [s.value for s in StepStatus] == [
        "pending",
        "evaluating",
        "admitted",
        "rejected",
        "failed",
        "cancelled",
    ]
    assert [s.value for s in EvaluationStatus] == ["pending", "done", "cancelled"]
    assert [s.value for s in MemberStatus] == ["evaluating", "admitted", "rejected"]
    assert set(lifecycle.RUN_ACTIONS) == {"pause", "resume", "cancel"}


def test_every_transition_is_listed_here() -> None:
    found = {name: (t.target.__class__, t.target.value) for name, t in transitions().items()}
    assert found == {name: (ENUM_OF[kind], target) for name, (kind, _, target) in EXPECTED.items()}


def cases() -> Iterator[tuple[str, str, bool]]:
    for name, (kind, sources, _) in EXPECTED.items():
        for status in ["new", *ENUM_OF[kind]]:
            yield name, str(status), status in sources


@pytest.mark.parametrize(("name", "status", "allowed"), list(cases()))
def test_a_transition_moves_only_from_its_sources(name: str, status: str, allowed: bool) -> None:
    kind, _, target = EXPECTED[name]
    transition = transitions()[name]
    row = row_in(kind, status)
    if allowed:
        transition(row)  # type: ignore[arg-type]
        assert row.status == target
        return
    with pytest.raises(IllegalTransitionError) as caught:
        transition(row)  # type: ignore[arg-type]
    assert row.status == (None if status == "new" else status)  # unchanged
    assert f"cannot {transition.verb} " in str(caught.value) and str(caught.value).endswith(f"it is {status}")


def test_an_illegal_transition_is_a_conflict_and_a_value_error_with_a_clear_message() -> None:
    run = row_in(Run, "cancelled")
    assert isinstance(run, Run)
    with pytest.raises(IllegalTransitionError, match=r"^cannot pause run x1: it is cancelled$") as caught:
        lifecycle.pause_run(run)
    assert isinstance(caught.value, ConflictError) and isinstance(caught.value, ValueError)
    member = row_in(RunAgent, "rejected")
    assert isinstance(member, RunAgent)
    with pytest.raises(ValueError, match=rf"^cannot admit agent {'a' * 40} in run r1: it is rejected$"):
        lifecycle.admit_member(member)


def test_a_step_goes_from_opened_to_admitted_and_stays_there() -> None:
    step = Step(id="s1")
    lifecycle.open_step(step)
    assert not lifecycle.fail_step.allows(Step(id="s2"))  # a step is opened before anything else
    lifecycle.step_takes_child(step)
    with pytest.raises(IllegalTransitionError, match="cannot attach a child to step s1: it is evaluating"):
        lifecycle.step_takes_child(step)  # one child per step
    lifecycle.admit_step(step)
    assert step.status == "admitted" and step.status in lifecycle.STEP_FINISHED
    for late in (lifecycle.cancel_step, lifecycle.reject_step, lifecycle.fail_step):
        with pytest.raises(IllegalTransitionError):
            late(step)


# -- no status is written outside service/lifecycle.py ---------------------------------------


def status_writes(source: str) -> list[int]:
    """Lines of `source` that set a status: `x.status = ...` (also in tuples, `+=`, annotated),
    `setattr(x, "status", ...)`, `Step(..., status=...)` for a row class, `.values(status=...)`."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        flat = [t for target in targets for t in (target.elts if isinstance(target, ast.Tuple) else [target])]
        if any(isinstance(t, ast.Attribute) and t.attr == "status" for t in flat):
            lines.append(node.lineno)
        if isinstance(node, ast.Call):
            func = node.func
            name = ast.unparse(func).rsplit(".", 1)[-1]
            keyword = any(k.arg == "status" for k in node.keywords)
            if (name in ROWS or name == "values") and keyword:
                lines.append(node.lineno)
            args = node.args
            if name == "setattr" and len(args) > 1 and ast.literal_eval(args[1]) == "status":
                lines.append(node.lineno)
    return sorted(lines)


def test_the_check_finds_each_kind_of_status_write() -> None:
    source = "\n".join(
        [
            "step.status = 'x'",
            "step.status, step.reason = 'x', None",
            "member.status += 'x'",
            "session.add(RunAgent(run_id=r, status='x'))",
            "session.execute(update(Step).values(status='x'))",
            "setattr(row, 'status', 'x')",
            "ok = step.status == 'x'",
            "response.status_code = 200",
        ]
    )
    assert status_writes(source) == [1, 2, 3, 4, 5, 6]


def test_no_status_is_written_outside_the_lifecycle_module() -> None:
    allowed = ROOT / "service" / "lifecycle.py"
    stray = [
        f"{path.relative_to(ROOT)}:{line}"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != allowed
        for line in status_writes(path.read_text())
    ]
    assert stray == [], "status written outside service/lifecycle.py; use a transition there"
