"""Reading a row under a lock that holds until the transaction ends, on PostgreSQL and SQLite."""

from __future__ import annotations

from typing import TypeVar

from sqlalchemy import false, inspect, update
from sqlalchemy.orm import Session

from service.db.models import Base

Row = TypeVar("Row", bound=Base)


def locked(session: Session, model: type[Row], ident: str) -> Row | None:
    """The row as it is now, locked until the caller's transaction ends (None: no such row).

    A second writer taking the same lock waits, then reads what the first one wrote: the status
    read here is the one the caller's change starts from, so of two concurrent changes (a pause
    and a cancel, two cancels, a cancel and the driver completing the run) one wins and the
    other sees the outcome and is refused.
    """
    if session.get_bind().dialect.name == "sqlite":
        # SQLite ignores FOR UPDATE, and pysqlite reads outside any transaction: two requests
        # could read the same status and each write its change over the other's. A write that
        # matches no row still takes SQLite's one write lock (waiting for its holder to commit),
        # and changes nothing (no `onupdate` column is touched).
        key = inspect(model).primary_key[0]
        nothing = update(model).where(false()).values({key: key})
        session.execute(nothing.execution_options(synchronize_session=False))
    return session.get(model, ident, with_for_update=True, populate_existing=True)
