"""Group evolution (Group-Evolving Agents): groups of parents evolve together and share what
they learn.

Steps come in groups of `group_size` consecutive step numbers (steps 1..g are group 1, the
next g group 2, ...). A group's parents are drawn by DGM's score_child_prop weights (`lambda`,
`m`) without replacement: each step of the group draws among the candidates that are not yet
a parent in its group (all of them again once every candidate is). Drawing the group's members
one after the other this way is sampling a group without replacement; the driver passes the
parents already chosen for the group, so the strategy keeps no state and a replay with the
same archive draws the same group. Groups are rounds: the driver opens a group's first step
only once every step of the groups before it has finished.

What the group shares is the run's experience pool (`service.experience`): what the
siblings and earlier groups tried, and by how much each change moved the score; every improve
job of a group carries it. `experience_chars` caps the pool's text.

Bookkeeping (the policy hooks): after admission a new experience version is written if one is
due; each step opened gets its group id (the group number as text; its children inherit it,
`Archive.create_child`); a group's first step waits while steps of earlier groups are in
flight; the draw of a step knows the parents already chosen for its group.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import ClassVar

from pydantic import Field

from service.selection.base import Candidate, StepContext, StrategyBase, checked, draw
from service.selection.ledger import StepView
from service.selection.policy import EXPAND, ImproveParts, Move, RunScope, Wait
from service.selection.score import ScoreChildProp


class GroupEvolution(StrategyBase):
    """Groups of `group_size` parents, drawn by score_child_prop weights without replacement."""

    name: ClassVar[str] = "group"

    group_size: int = Field(default=3, ge=1, le=256)
    lambda_: float = Field(default=10.0, ge=0.0, alias="lambda")
    m: float = Field(default=0.5, ge=0.0, le=1.0)
    experience_chars: int = Field(default=3000, ge=1000, le=100_000)

    def _inner(self) -> ScoreChildProp:
        return ScoreChildProp(lambda_=self.lambda_, m=self.m)

    def group_of_step(self, number: int) -> int:
        """The group step `number` belongs to (1, 2, ...)."""
        return (number - 1) // self.group_size + 1

    def steps_of_group(self, group: int) -> range:
        """The step numbers of `group`."""
        first = (group - 1) * self.group_size + 1
        return range(first, first + self.group_size)

    def probabilities(self, candidates: Sequence[Candidate]) -> dict[str, float]:
        return self._inner().probabilities(candidates)

    def probabilities_for_step(self, candidates: Sequence[Candidate], step: StepContext) -> dict[str, float]:
        ordered = checked(candidates)
        taken = set(step.siblings)
        remaining = [c for c in ordered if c.agent_id not in taken] or ordered
        inner = self._inner().probabilities(remaining)
        return {c.agent_id: inner.get(c.agent_id, 0.0) for c in ordered}

    def select_for_step(self, candidates: Sequence[Candidate], rng: random.Random, step: StepContext) -> str:
        return draw(self.probabilities_for_step(candidates, step), rng, 1)[0]

    def after_admission(self, scope: RunScope) -> None:
        scope.ledger.update_experience(self.experience_chars)

    def after_opening(self, scope: RunScope) -> None:
        for step in scope.ledger.steps():
            if step.group_id is None:
                scope.ledger.set_group(step.number, str(self.group_of_step(step.number)))

    def next_move(self, scope: RunScope, number: int, chosen: Sequence[str]) -> Move:
        """Wait while step `number` opens a new group and steps of earlier groups are in flight:
        a group starts once every earlier one has finished, so its jobs carry what they learned."""
        if number == 1 or self.steps_of_group(self.group_of_step(number)).start != number:
            return EXPAND
        if chosen:
            return Wait("steps chosen earlier in this tick belong to the group before")
        if any(step.in_flight and step.number < number for step in scope.ledger.steps()):
            return Wait("the group before is still at work")
        return EXPAND

    def step_context(self, scope: RunScope, number: int, chosen: Sequence[str]) -> StepContext:
        """The step, with the parents already chosen for the other steps of its group: the
        steps opened before and `chosen`, the parents picked earlier in this tick for the steps
        just before `number` (not opened yet)."""
        members = self.steps_of_group(self.group_of_step(number))
        parents = {s.number: s.parent_id for s in scope.ledger.steps() if members.start <= s.number < number}
        first_chosen = number - len(chosen)
        parents.update({first_chosen + index: parent for index, parent in enumerate(chosen)})
        siblings = tuple(parents[n] for n in sorted(parents) if n in members and n < number)
        return StepContext(number=number, siblings=siblings)

    def improve_parts(self, scope: RunScope, step: StepView) -> ImproveParts:
        """The latest experience pool's text (none before any step of the run has finished)."""
        return ImproveParts(experience=scope.ledger.experience())
