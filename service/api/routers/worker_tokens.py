"""Admin endpoints for worker tokens: one per worker machine, issued, listed and revoked."""

from __future__ import annotations

import unicodedata
from datetime import datetime

from fastapi import APIRouter, status
from pydantic import BaseModel, ConfigDict, Field, field_validator

from contracts.text import StorableStr
from service import worker_tokens
from service.api.deps import AdminOnly, SessionDep
from service.api.responses import error_responses
from service.api.routes import CheckedRoute
from service.db.models import WorkerToken

# Control characters (newline, tab, escape), format characters (bidi overrides) and line or
# paragraph separators.
UNPRINTABLE = frozenset({"Cc", "Cf", "Zl", "Zp"})

router = APIRouter(
    prefix="/api/admin/worker-tokens",
    tags=["admin"],
    dependencies=[AdminOnly],
    route_class=CheckedRoute,
    responses=error_responses(401, 422),
)


class WorkerTokenRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: StorableStr = Field(
        min_length=1, max_length=200, description="Who holds it, e.g. the worker machine's host name"
    )

    @field_validator("name")
    @classmethod
    def _not_blank(cls, name: str) -> str:
        if not name.strip():
            raise ValueError("a worker token needs a name that is not blank")
        # The name is written into log lines and results: a newline there would forge a line.
        unprintable = next((c for c in name if unicodedata.category(c) in UNPRINTABLE), None)
        if unprintable is not None:
            raise ValueError(f"must not hold a control or format character (U+{ord(unprintable):04X})")
        return name.strip()


class WorkerTokenPublic(BaseModel):
    """An issued token as listed: never the token itself (only its hash is kept)."""

    id: str
    name: str
    created_at: datetime
    revoked_at: datetime | None
    revoked: bool


class IssuedWorkerToken(WorkerTokenPublic):
    token: str = Field(description="The token; shown in this answer only")


def _public(row: WorkerToken) -> WorkerTokenPublic:
    return WorkerTokenPublic(
        id=row.id,
        name=row.name,
        created_at=row.created_at,
        revoked_at=row.revoked_at,
        revoked=row.revoked_at is not None,
    )


@router.post("", status_code=status.HTTP_201_CREATED, responses=error_responses(413, 507))
def issue_worker_token(body: WorkerTokenRequest, session: SessionDep) -> IssuedWorkerToken:
    """A new worker token; the answer is the only place the token itself appears."""
    row, token = worker_tokens.issue(session, name=body.name)
    session.commit()
    return IssuedWorkerToken(**_public(row).model_dump(), token=token)


@router.get("")
def list_worker_tokens(session: SessionDep) -> list[WorkerTokenPublic]:
    return [_public(row) for row in worker_tokens.listed(session)]


@router.delete("/{token_id}", responses=error_responses(404))
def revoke_worker_token(token_id: str, session: SessionDep) -> WorkerTokenPublic:
    """Refuse the token from the next request on (401); results it submitted keep its name."""
    row = worker_tokens.revoke(session, token_id=token_id)
    session.commit()
    return _public(row)
