"""The run ledger over the database: what the policy hooks read and write of a run, in the tick's
transaction (the protocol and its views: `service.selection.ledger`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Row, case, distinct, func, select
from sqlalchemy.orm import Session

from contracts.vocabulary import EvaluationPurpose
from service import events, experience
from service.db.models import Evaluation, Run, RunAgent, Step
from service.lifecycle import STEP_IN_FLIGHT, EvaluationStatus, MemberStatus
from service.selection.costs import CostModel, CostSample
from service.selection.ledger import AgentTally, EvaluationView, MemberView, StepView


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
        # Columns, not entities (here and below): a policy may read the run at every move.
        rows = self.session.execute(
            select(
                RunAgent.agent_id,
                RunAgent.parent_id,
                RunAgent.status,
                RunAgent.step_number,
                RunAgent.score,
                RunAgent.epoch,
                RunAgent.island,
                RunAgent.niche,
            )
            .where(RunAgent.run_id == self.run.id)
            .order_by(RunAgent.agent_id)
        )
        return [
            MemberView(
                agent_id=agent_id,
                parent_id=parent_id,
                admitted=status == MemberStatus.ADMITTED,
                step_number=step_number,
                score=score,
                epoch=epoch,
                island=island,
                niche=niche,
            )
            for agent_id, parent_id, status, step_number, score, epoch, island, niche in rows
        ]

    def steps(self) -> list[StepView]:
        rows = self.session.execute(
            select(*STEP_VIEW_COLUMNS).where(Step.run_id == self.run.id).order_by(Step.number)
        )
        return [step_view(row) for row in rows]

    def evaluations(self, agent_ids: Sequence[str]) -> list[EvaluationView]:
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

    def tallies(self) -> dict[str, AgentTally]:
        pending = Evaluation.status == EvaluationStatus.PENDING
        rows = self.session.execute(
            select(
                Evaluation.agent_id,
                func.count(),
                func.count().filter(
                    Evaluation.status == EvaluationStatus.DONE, Evaluation.resolved.is_(True)
                ),
                func.count().filter(
                    Evaluation.status == EvaluationStatus.DONE, Evaluation.resolved.is_not(True)
                ),
                func.count(distinct(Evaluation.task_id)),
                func.count(distinct(case((pending, Evaluation.task_id)))),
            )
            .where(
                Evaluation.run_id == self.run.id,
                Evaluation.epoch == self.run.epoch,
                Evaluation.purpose != EvaluationPurpose.HELDOUT,
                Evaluation.status.in_([EvaluationStatus.PENDING, EvaluationStatus.DONE]),
            )
            .group_by(Evaluation.agent_id)
        )
        return {
            agent_id: AgentTally(sent, passes, fails, tasks, pending_tasks)
            for agent_id, sent, passes, fails, tasks, pending_tasks in rows
        }

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

    def costs(self) -> CostModel:
        rows = self.session.execute(
            select(
                Evaluation.agent_id,
                Evaluation.task_id,
                Evaluation.cost_usd,
                Evaluation.prompt_tokens + Evaluation.completion_tokens,
                Evaluation.dispatched_at,
                Evaluation.finished_at,
            ).where(
                Evaluation.run_id == self.run.id,
                Evaluation.status == EvaluationStatus.DONE,
                Evaluation.purpose != EvaluationPurpose.HELDOUT,
                Evaluation.reused_from.is_(None),  # a copy cost nothing
                Evaluation.dispatched_at.is_not(None),
                Evaluation.finished_at.is_not(None),
            )
        )
        return CostModel(
            CostSample(
                agent_id=agent_id,
                task_id=task_id,
                usd=float(usd or 0.0),
                tokens=float(tokens or 0),
                seconds=0.0 if sent is None or done is None else max(0.0, (done - sent).total_seconds()),
            )
            for agent_id, task_id, usd, tokens, sent, done in rows
        )

    def _member(self, agent_id: str) -> RunAgent:
        member = self.session.get(RunAgent, (self.run.id, agent_id))
        if member is None:
            raise ValueError(f"run {self.run.id} has no agent {agent_id}")
        return member


# The columns a StepView needs: `steps()` selects only these rather than whole ORM rows.
STEP_VIEW_COLUMNS = (
    Step.number,
    Step.parent_id,
    Step.status,
    Step.group_id,
    Step.kind,
    Step.second_parent_id,
)


def step_view(step: Step | Row[*tuple[Any, ...]]) -> StepView:
    """A step as policies see it, from the ORM row or from a row of `STEP_VIEW_COLUMNS`."""
    return StepView(
        number=step.number,
        parent_id=step.parent_id,
        in_flight=step.status in STEP_IN_FLIGHT,
        group_id=step.group_id,
        kind=step.kind,
        second_parent_id=step.second_parent_id,
    )
