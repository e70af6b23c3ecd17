"""Worker tokens: one per worker machine, issued and revoked by the admin, kept as sha256 only.

The settings' own worker token (secrets.json, CLADE_WORKER_TOKEN) stays valid as the worker
named `local`, for one-machine setups; the admin token is accepted as the worker named `admin`.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from contracts.errors import NotFoundError
from service.db.locks import locked
from service.db.models import Evaluation, Step, WorkerToken

TOKEN_BYTES = 32
LOCAL = "local"
ADMIN = "admin"


@dataclass(frozen=True)
class WorkerIdentity:
    """Who submitted an answer: the token's id (`local`/`admin` for the settings' tokens) and name."""

    id: str
    name: str

    def sign(self, item: Step | Evaluation) -> None:
        item.worker_token_id, item.worker_name = self.id, self.name


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def issue(session: Session, *, name: str) -> tuple[WorkerToken, str]:
    """A new token named `name`: the row (caller commits) and the token, shown this once only."""
    token = secrets.token_urlsafe(TOKEN_BYTES)
    row = WorkerToken(id=uuid.uuid4().hex, name=name, token_hash=_digest(token))
    session.add(row)
    return row, token


def listed(session: Session) -> list[WorkerToken]:
    return list(session.scalars(select(WorkerToken).order_by(WorkerToken.created_at, WorkerToken.id)))


def revoke(session: Session, *, token_id: str) -> WorkerToken:
    """Refuse the token from now on; revoking it again changes nothing. Caller commits."""
    row = locked(session, WorkerToken, token_id)
    if row is None:
        raise NotFoundError(f"worker token {token_id} not found")
    if row.revoked_at is None:
        row.revoked_at = datetime.now(UTC)
    return row


def find(session: Session, token: str) -> WorkerToken | None:
    """The issued token row `token` is (revoked or not), or None."""
    return session.scalars(select(WorkerToken).where(WorkerToken.token_hash == _digest(token))).first()
