"""The statuses of runs, steps, evaluations and run membership, and every change between them.

A status column is written here and nowhere else (tests/service/test_lifecycle.py checks the
code for other writes). Each change is one named transition below; applied to a row whose
status it does not start from, it raises `IllegalTransitionError` (a 409 from the API).

    run:         (new) -> running <-> paused;  running | paused -> cancelled;  running -> completed
    step:        (new) -> pending -> evaluating (it has a child) -> admitted | rejected
                 pending -> rejected (no child, or a child that failed validation)
                 pending -> failed (no worker answered);  pending | evaluating -> cancelled (run ended)
    evaluation:  (new) -> pending -> done | cancelled;  (new) -> done (a result reused, not run)
    membership:  (new) -> evaluating -> admitted | rejected;  (new) -> rejected (an invalid child)

The values are the strings stored in the database and shown by the API. A step's kind and an
evaluation's purpose are not statuses: `contracts.vocabulary` names them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, TypeVar

from contracts.errors import ConflictError
from service.db.models import Evaluation, Run, RunAgent, Step


class RunStatus(StrEnum):
    RUNNING = "running"
    PAUSED = "paused"
    COMPLETED = "completed"
    CANCELLED = "cancelled"


class StepStatus(StrEnum):
    PENDING = "pending"  # opened; a worker is (or will be) making its child
    EVALUATING = "evaluating"  # its child is being scored
    ADMITTED = "admitted"
    REJECTED = "rejected"
    FAILED = "failed"
    CANCELLED = "cancelled"


class EvaluationStatus(StrEnum):
    PENDING = "pending"
    DONE = "done"
    CANCELLED = "cancelled"


class MemberStatus(StrEnum):
    """An agent's standing in one run's archive."""

    EVALUATING = "evaluating"
    ADMITTED = "admitted"
    REJECTED = "rejected"


RUN_FINISHED = frozenset({RunStatus.COMPLETED, RunStatus.CANCELLED})
STEP_IN_FLIGHT = frozenset({StepStatus.PENDING, StepStatus.EVALUATING})
STEP_FINISHED = frozenset(StepStatus) - STEP_IN_FLIGHT


class IllegalTransitionError(ConflictError, ValueError):
    """A status change the lifecycle does not allow from the row's current status."""


Row = TypeVar("Row", Run, Step, Evaluation, RunAgent)


def describe(row: Run | Step | Evaluation | RunAgent) -> str:
    if isinstance(row, RunAgent):
        return f"agent {row.agent_id} in run {row.run_id}"
    kind = {Run: "run", Step: "step", Evaluation: "evaluation"}[type(row)]
    return f"{kind} {row.id}"


@dataclass(frozen=True)
class Transition(Generic[Row]):
    """One allowed change: from any of `sources` (None: a row not yet given a status) to `target`."""

    verb: str  # completes "cannot <verb> <row>: it is <status>"
    sources: frozenset[str | None]
    target: StrEnum

    def allows(self, row: Row) -> bool:
        return _status(row) in self.sources

    def check(self, row: Row) -> None:
        if not self.allows(row):
            raise IllegalTransitionError(f"cannot {self.verb} {describe(row)}: it is {_status(row) or 'new'}")

    def __call__(self, row: Row) -> None:
        self.check(row)
        row.status = self.target


def _status(row: Run | Step | Evaluation | RunAgent) -> str | None:
    # A row built but not yet given a status has None there, whatever its annotation says.
    status: str | None = row.status
    return status


def _from(*statuses: StrEnum | None) -> frozenset[str | None]:
    return frozenset(statuses)


NEW = None

# -- runs ----------------------------------------------------------------------------------
start_run = Transition[Run]("start", _from(NEW), RunStatus.RUNNING)
pause_run = Transition[Run]("pause", _from(RunStatus.RUNNING), RunStatus.PAUSED)
resume_run = Transition[Run]("resume", _from(RunStatus.PAUSED), RunStatus.RUNNING)
cancel_run = Transition[Run]("cancel", _from(RunStatus.RUNNING, RunStatus.PAUSED), RunStatus.CANCELLED)
complete_run = Transition[Run]("complete", _from(RunStatus.RUNNING), RunStatus.COMPLETED)
# What a user may ask of a run (each is an API route and a CLI command).
RUN_ACTIONS: dict[str, Transition[Run]] = {"pause": pause_run, "resume": resume_run, "cancel": cancel_run}

# -- steps ---------------------------------------------------------------------------------
open_step = Transition[Step]("open", _from(NEW), StepStatus.PENDING)
step_takes_child = Transition[Step]("attach a child to", _from(StepStatus.PENDING), StepStatus.EVALUATING)
admit_step = Transition[Step]("admit the child of", _from(StepStatus.EVALUATING), StepStatus.ADMITTED)
reject_step = Transition[Step](
    "reject", _from(StepStatus.PENDING, StepStatus.EVALUATING), StepStatus.REJECTED
)
fail_step = Transition[Step]("fail", _from(StepStatus.PENDING), StepStatus.FAILED)
cancel_step = Transition[Step]("cancel", _from(*STEP_IN_FLIGHT), StepStatus.CANCELLED)

# -- evaluations ---------------------------------------------------------------------------
queue_evaluation = Transition[Evaluation]("queue", _from(NEW), EvaluationStatus.PENDING)
finish_evaluation = Transition[Evaluation](
    "record a result for", _from(EvaluationStatus.PENDING), EvaluationStatus.DONE
)
copy_evaluation = Transition[Evaluation]("copy a result into", _from(NEW), EvaluationStatus.DONE)
cancel_evaluation = Transition[Evaluation](
    "cancel", _from(EvaluationStatus.PENDING), EvaluationStatus.CANCELLED
)

# -- run membership ------------------------------------------------------------------------
join_run = Transition[RunAgent]("add", _from(NEW), MemberStatus.EVALUATING)
join_rejected = Transition[RunAgent]("add", _from(NEW), MemberStatus.REJECTED)
admit_member = Transition[RunAgent]("admit", _from(MemberStatus.EVALUATING), MemberStatus.ADMITTED)
reject_member = Transition[RunAgent]("reject", _from(MemberStatus.EVALUATING), MemberStatus.REJECTED)
