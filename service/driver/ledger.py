"""The run ledger over the database: what the policy hooks read and write of a run, in the tick's
transaction (the protocol and its views: `service.selection.ledger`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service import events, experience
from service.db.models import Evaluation, Run, RunAgent, Step
from service.lifecycle import STEP_IN_FLIGHT, EvaluationStatus, MemberStatus
from service.selection.ledger import EvaluationView, MemberView, StepView


class DatabaseLedger:
    """`RunLedger` for `run`, read and written through `session`."""

    def __init__(self, session: Session, run: Run) -> None:
        self.session = session
        self.run = run

    @property
    def run_id(self) -> str:
        return self.run.id

    @property
    def seed_agent_id(self) -> str:
        return self.run.seed_agent_id

    @property
    def epoch(self) -> int:
        return self.run.epoch

    def members(self) -> list[MemberView]:
        rows = self.session.scalars(
            select(RunAgent).where(RunAgent.run_id == self.run.id).order_by(RunAgent.agent_id)
        )
        return [
            MemberView(
                agent_id=m.agent_id,
                parent_id=m.parent_id,
                admitted=m.status == MemberStatus.ADMITTED,
                step_number=m.step_number,
                score=m.score,
                epoch=m.epoch,
                island=m.island,
                niche=m.niche,
            )
            for m in rows
        ]

    def steps(self) -> list[StepView]:
        rows = self.session.scalars(select(Step).where(Step.run_id == self.run.id).order_by(Step.number))
        return [step_view(step) for step in rows]

    def evaluations(self, agent_ids: Sequence[str]) -> list[EvaluationView]:
        # Columns, not entities: a policy may read every evaluation of the run at each move.
        rows = self.session.execute(
            select(
                Evaluation.agent_id,
                Evaluation.task_id,
                Evaluation.trial,
                Evaluation.purpose,
                Evaluation.status,
                Evaluation.resolved,
            )
            .where(
                Evaluation.run_id == self.run.id,
                Evaluation.agent_id.in_(list(agent_ids)),
                Evaluation.epoch == self.run.epoch,
                Evaluation.status.in_([EvaluationStatus.PENDING, EvaluationStatus.DONE]),
            )
            .order_by(Evaluation.created_at, Evaluation.id)
        )
        return [
            EvaluationView(
                agent_id=agent_id,
                task_id=task_id,
                trial=trial,
                purpose=purpose,
                done=status == EvaluationStatus.DONE,
                resolved=resolved,
            )
            for agent_id, task_id, trial, purpose, status, resolved in rows
        ]

    def events(self, kind: str) -> list[dict[str, Any]]:
        return events.recorded(self.session, run_id=self.run.id, kind=kind)

    def record(self, kind: str, payload: Mapping[str, Any]) -> None:
        events.emit(self.session, events.policy_payload(kind, payload), run_id=self.run.id)
        self.session.flush()

    def set_island(self, agent_id: str, island: int) -> None:
        self._member(agent_id).island = island

    def set_niche(self, agent_id: str, niche: str) -> None:
        self._member(agent_id).niche = niche

    def set_group(self, step_number: int, group_id: str) -> None:
        step = self.session.scalar(select(Step).where(Step.run_id == self.run.id, Step.number == step_number))
        if step is None:
            raise ValueError(f"run {self.run.id} has no step {step_number}")
        step.group_id = group_id
        self.session.flush()

    def update_experience(self, limit_chars: int) -> None:
        experience.update(self.session, run_id=self.run.id, limit_chars=limit_chars)

    def experience(self) -> str | None:
        latest = experience.latest_version(self.session, run_id=self.run.id)
        return None if latest is None else latest.text

    def _member(self, agent_id: str) -> RunAgent:
        member = self.session.get(RunAgent, (self.run.id, agent_id))
        if member is None:
            raise ValueError(f"run {self.run.id} has no agent {agent_id}")
        return member


def step_view(step: Step) -> StepView:
    return StepView(
        number=step.number,
        parent_id=step.parent_id,
        in_flight=step.status in STEP_IN_FLIGHT,
        group_id=step.group_id,
        kind=step.kind,
        second_parent_id=step.second_parent_id,
    )
