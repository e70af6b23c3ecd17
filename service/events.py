"""Storing run events and reading them back as the typed union of `contracts.events`.

A row keeps the kind and the payload as JSON (so old rows and backups stay readable); every
event is written through `emit` from a typed payload, which names its kind. A stored payload
that no longer fits its model is read as an `unreadable` event holding what was stored, not an
error: one odd row must not stop a run's feed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from contracts.events import (
    UNREADABLE,
    Payload,
    PolicyRecord,
    RunEvent,
    Unreadable,
    UnreadableEvent,
    event_kinds,
    kind_of,
    payload_model_of,
)
from service.db.models import Event

_EVENT: TypeAdapter[RunEvent] = TypeAdapter(RunEvent)
KINDS = frozenset(event_kinds()) - {UNREADABLE}  # a stored "unreadable" is not read as one
POLICY_RECORD = kind_of(PolicyRecord)
SHOWN_ISSUES = 5  # an unreadable row's problem names this many; a whole page of them helps no one


def event_row(payload: Payload, *, run_id: str | None) -> Event:
    """The row of one event (None: an archive event that belongs to no run)."""
    return Event(run_id=run_id, kind=kind_of(payload), payload=payload.model_dump(mode="json"))


def emit(session: Session, payload: Payload, *, run_id: str | None) -> Event:
    """Append one event to the feed; the caller commits."""
    row = event_row(payload, run_id=run_id)
    session.add(row)
    return row


def policy_payload(kind: str, data: Mapping[str, Any]) -> Payload:
    """What a policy records through its run's ledger under `kind`: the kind's own model when the
    union has one (`island_migration`), else a `policy_record` named `kind`; a ValidationError
    when `data` does not fit the kind's model."""
    if kind == UNREADABLE:
        raise ValueError(
            f"{UNREADABLE!r} is what the feed answers for a stored row it cannot read, not a kind to record"
        )
    model = payload_model_of(kind)
    if model is None:
        return PolicyRecord(name=kind, data=dict(data))
    return model.model_validate(dict(data))


def recorded(session: Session, *, run_id: str, kind: str) -> list[dict[str, Any]]:
    """The payloads a run's ledger recorded under `kind` (`policy_payload`), oldest first."""
    stored = kind if kind in KINDS else POLICY_RECORD
    rows = session.scalars(
        select(Event.payload).where(Event.run_id == run_id, Event.kind == stored).order_by(Event.id)
    )
    if stored == kind:
        return [dict(payload) for payload in rows]
    return [dict(p["data"]) for p in rows if isinstance(p, dict) and p.get("name") == kind]


def first(session: Session, *, run_id: str, kind: str) -> Event | None:
    """The run's oldest event of `kind` (None: it has none yet), e.g. when a phase began."""
    return session.scalar(
        select(Event).where(Event.run_id == run_id, Event.kind == kind).order_by(Event.id).limit(1)
    )


def read(row: Event) -> RunEvent:
    """The stored row as its kind's model, or as an `unreadable` event when it no longer fits."""
    stored = {"id": row.id, "kind": row.kind, "payload": row.payload, "created_at": row.created_at}
    if row.kind not in KINDS:
        problem = f"no event kind {row.kind!r} is known"
    else:
        try:
            return _EVENT.validate_python(stored)
        except ValidationError as error:
            issues = [_issue(i["loc"], i["msg"]) for i in error.errors(include_input=False)]
            more = f"; and {len(issues) - SHOWN_ISSUES} more" if len(issues) > SHOWN_ISSUES else ""
            problem = "; ".join(issues[:SHOWN_ISSUES]) + more
    return UnreadableEvent(
        id=row.id,
        kind=UNREADABLE,
        payload=Unreadable(stored_kind=row.kind, stored_payload=row.payload, problem=problem),
        created_at=row.created_at,
    )


def _issue(loc: tuple[int | str, ...], message: str) -> str:
    """`step: Input should be a valid integer`: the location inside the payload, never the value
    (a payload may hold an error's text that only admins may read)."""
    inside = loc[1:]  # the first part is the union's tag, the stored kind
    if inside[:1] == ("payload",):
        inside = inside[1:]
    path = ".".join(str(part) for part in inside)
    return f"{path}: {message}" if path else message
