"""The experience pool of a group-evolution run: what its steps tried and how it went.

Every finished step of a group run (admitted, rejected or failed) is one entry: its parent
and the parent's score, what the diagnosis proposed (its title line), which files the child
changed, and the outcome, with the score change (child score minus parent score) when the
child was scored. The pool's text, which improve jobs carry into the diagnosis and improvement
prompts, lists the changes that helped (largest gain first) and those that did not or hurt
(newest first), interleaved by priority until the strategy's `experience_chars` cap.

Storage: each new version is an `experience_updated` event on the run holding the whole
version (a versioned `ExperiencePool`). The pool is a function of the run's step rows, so it
is written in the same transaction as the tick that derived it and can never disagree with
them; events are append-only, so a version never changes once written; backups and restores
carry them with every other row, and the run's export holds every version. (A git ref per
run was the alternative; the driver holds no git handle, and a ref written during a tick that
then rolls back would point at a version the database never had.) A version is written only
when more steps have finished than the latest version summarises.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from contracts.events import ChildCreated, ExperienceEntry, ExperienceUpdated, kind_of
from service import events
from service.db.models import Event, RunAgent, Step
from service.lifecycle import StepStatus

EVENT = kind_of(ExperienceUpdated)
LEARNED_FROM = (StepStatus.ADMITTED, StepStatus.REJECTED, StepStatus.FAILED)
MAX_LINE = 400


class ExperiencePool(ExperienceUpdated):
    """One version of a run's experience pool, as stored (its event's payload) and as the API
    answers it (with the event's time)."""

    created_at: datetime | None = None


class ExperienceHistory(BaseModel):
    """Every version of a run's pool, oldest first: `experience.json` in the run's export."""

    schema_version: Literal[1] = 1
    versions: list[ExperiencePool]


def update(session: Session, *, run_id: str, limit_chars: int) -> ExperiencePool | None:
    """A new version if steps finished since the latest one; None when nothing changed."""
    finished = (
        session.scalar(
            select(func.count())
            .select_from(Step)
            .where(Step.run_id == run_id, Step.group_id.is_not(None), Step.status.in_(LEARNED_FROM))
        )
        or 0
    )
    latest = latest_version(session, run_id=run_id)
    if finished == (latest.finished_steps if latest is not None else 0):
        return None
    entries = _entries(session, run_id)
    version = (latest.version if latest is not None else 0) + 1
    shown, text = render(entries, version=version, limit_chars=limit_chars)
    pool = ExperiencePool(
        run_id=run_id,
        version=version,
        finished_steps=len(entries),
        entries=shown,
        left_out=len(entries) - len(shown),
        text=text,
    )
    events.emit(
        session, ExperienceUpdated.model_validate(pool.model_dump(exclude={"created_at"})), run_id=run_id
    )
    session.flush()
    return pool


def versions(session: Session, *, run_id: str) -> list[ExperiencePool]:
    """Every version of the run's pool, oldest first."""
    rows = session.scalars(
        select(Event).where(Event.run_id == run_id, Event.kind == EVENT).order_by(Event.id)
    ).all()
    return [_pool(row) for row in rows]


def dump(pools: list[ExperiencePool]) -> bytes:
    """Every version as one JSON document, for a run's export."""
    return ExperienceHistory(versions=pools).model_dump_json(indent=2).encode()


def latest_version(session: Session, *, run_id: str) -> ExperiencePool | None:
    row = session.scalars(
        select(Event).where(Event.run_id == run_id, Event.kind == EVENT).order_by(Event.id.desc()).limit(1)
    ).first()
    return None if row is None else _pool(row)


def _pool(row: Event) -> ExperiencePool:
    return ExperiencePool.model_validate(row.payload | {"created_at": row.created_at})


def _entries(session: Session, run_id: str) -> list[ExperienceEntry]:
    steps = session.scalars(
        select(Step)
        .where(Step.run_id == run_id, Step.group_id.is_not(None), Step.status.in_(LEARNED_FROM))
        .order_by(Step.number)
    ).all()
    scores = {
        m.agent_id: m.score
        for m in session.scalars(
            select(RunAgent).where(RunAgent.run_id == run_id, RunAgent.score.is_not(None))
        )
    }
    files: dict[int, list[str]] = {
        int(e.payload["step"]): list(e.payload.get("files") or [])
        for e in session.scalars(
            select(Event).where(Event.run_id == run_id, Event.kind == kind_of(ChildCreated))
        )
    }
    entries = []
    for step in steps:
        parent_score = scores.get(step.parent_id)
        child_score = scores.get(step.child_id) if step.child_id else None
        change = None
        if parent_score is not None and child_score is not None:
            change = round(child_score - parent_score, 6)
        entries.append(
            ExperienceEntry(
                step=step.number,
                group=step.group_id,
                parent_id=step.parent_id,
                parent_score=parent_score,
                child_id=step.child_id,
                child_score=child_score,
                change=change,
                outcome=step.status,
                reason=step.reason if step.status != StepStatus.ADMITTED else None,
                tried=title(step.diagnosis),
                files=files.get(step.number, []),
            )
        )
    return entries


def title(diagnosis: str | None) -> str:
    """The diagnosis's first line, without markdown marks; it names the change tried."""
    for line in (diagnosis or "").splitlines():
        line = line.strip().lstrip("#*-> ").rstrip("*").strip()
        if line:
            return line[:200]
    return "(no diagnosis recorded)"


def _line(entry: ExperienceEntry) -> str:
    parent = f"parent {entry.parent_id[:12]}" + (
        f" (score {entry.parent_score:.2f})" if entry.parent_score is not None else ""
    )
    if entry.outcome == StepStatus.FAILED or entry.child_id is None:
        result = f"no child ({entry.reason or 'failed'})"
    else:
        result = f"child {entry.child_id[:12]} {entry.outcome}"
        if entry.reason:
            result += f" ({entry.reason})"
        if entry.child_score is not None:
            result += f", score {entry.child_score:.2f}"
        if entry.change is not None:
            result += f" ({entry.change:+.2f})"
    group = f" (group {entry.group})" if entry.group else ""
    line = f"- step {entry.step}{group}: {parent} -> {result}. Tried: {entry.tried}"
    if entry.files:
        shown = ", ".join(entry.files[:5]) + (
            f" and {len(entry.files) - 5} more" if len(entry.files) > 5 else ""
        )
        line += f". Changed: {shown}"
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 3] + "..."


def _helped(entry: ExperienceEntry) -> bool:
    return entry.change is not None and entry.change > 0


def render(
    entries: list[ExperienceEntry], *, version: int, limit_chars: int
) -> tuple[list[ExperienceEntry], str]:
    """The entries that fit in `limit_chars` and the pool's text."""
    helped = sorted((e for e in entries if _helped(e)), key=lambda e: (-(e.change or 0.0), -e.step))
    other = sorted((e for e in entries if not _helped(e)), key=lambda e: -e.step)
    head = (
        f"Shared experience of this run's agent groups (version {version}, {len(entries)} finished"
        " attempts). Scores are the fraction of tasks resolved; the change in brackets is the child's"
        " score minus its parent's. Build on what helped; do not repeat what did not."
    )
    sections = ("Changes that helped:", "Changes that did not help, or hurt:")
    budget = limit_chars - len(head) - sum(len(s) + 2 for s in sections) - 60  # room for the tail
    chosen: set[int] = set()
    # Alternate between the two lists so that neither crowds the other out.
    for pair in _interleave(helped, other):
        size = len(_line(pair)) + 1
        if size > budget:
            break
        budget -= size
        chosen.add(pair.step)
    shown_helped = [e for e in helped if e.step in chosen]
    shown_other = [e for e in other if e.step in chosen]
    parts = [head]
    for heading, shown in zip(sections, (shown_helped, shown_other), strict=True):
        if shown:
            parts.append(heading + "\n" + "\n".join(_line(e) for e in shown))
    left_out = len(entries) - len(chosen)
    if left_out:
        parts.append(f"({left_out} older or smaller results left out for length.)")
    return shown_helped + shown_other, "\n\n".join(parts)


def _interleave(first: list[ExperienceEntry], second: list[ExperienceEntry]) -> list[ExperienceEntry]:
    out: list[ExperienceEntry] = []
    for index in range(max(len(first), len(second))):
        out.extend(lst[index] for lst in (first, second) if index < len(lst))
    return out
