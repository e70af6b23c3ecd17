"""Dependencies shared by the routers: the session, the archive, and token checks."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Request, status
from fastapi.concurrency import run_in_threadpool
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import SecretStr
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from benchmarks.catalog import BenchmarkCatalog
from contracts.prices import PriceTable
from contracts.settings import Settings
from service import worker_tokens
from service.archive.store import Archive
from service.worker_tokens import WorkerIdentity


@dataclass(frozen=True)
class Services:
    settings: Settings
    engine: Engine
    sessions: sessionmaker[Session]
    archive: Archive
    catalog: BenchmarkCatalog
    prices: PriceTable  # the service's table (CLADE_PRICE_TABLE_PATH): runs are priced with it when planned


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]


def get_session(services: ServicesDep) -> Iterator[Session]:
    with services.sessions() as session:
        yield session


def get_archive(services: ServicesDep) -> Archive:
    return services.archive


# Closed when the endpoint has built its answer, before a byte of it is sent: a client that reads
# slowly (or never) holds no database connection, however long its download or stream takes.
SessionDep = Annotated[Session, Depends(get_session, scope="function")]
ArchiveDep = Annotated[Archive, Depends(get_archive)]

_bearer = HTTPBearer(auto_error=False)
CredentialsDep = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


def _matches(credentials: HTTPAuthorizationCredentials | None, *tokens: SecretStr | None) -> bool:
    if credentials is None:
        return False
    given = credentials.credentials.encode()
    return any(
        token is not None and secrets.compare_digest(given, token.get_secret_value().encode())
        for token in tokens
    )


def _refuse(role: str) -> HTTPException:
    return HTTPException(
        status.HTTP_401_UNAUTHORIZED,
        detail=f"this endpoint needs the {role} token (Authorization: Bearer <token>)",
        headers={"WWW-Authenticate": "Bearer"},
    )


def require_admin(services: ServicesDep, credentials: CredentialsDep) -> None:
    if not _matches(credentials, services.settings.admin_token):
        raise _refuse("admin")


def worker_identity(services: ServicesDep, credentials: CredentialsDep) -> WorkerIdentity:
    """The worker the bearer token names: the settings' worker token (`local`), the admin token, or
    an issued token that is not revoked (looked up on every request, so a revocation holds at once)."""
    settings = services.settings
    if _matches(credentials, settings.worker_token):
        return WorkerIdentity(id=worker_tokens.LOCAL, name=worker_tokens.LOCAL)
    if _matches(credentials, settings.admin_token):
        return WorkerIdentity(id=worker_tokens.ADMIN, name=worker_tokens.ADMIN)
    if credentials is not None:
        with services.sessions() as session:
            row = worker_tokens.find(session, credentials.credentials)
        if row is not None and row.revoked_at is None:
            return WorkerIdentity(id=row.id, name=row.name)
        if row is not None:
            raise HTTPException(
                status.HTTP_401_UNAUTHORIZED,
                detail=f"worker token {row.id} ({row.name}) was revoked",
                headers={"WWW-Authenticate": "Bearer"},
            )
    raise _refuse("worker")


def caller_is_admin(services: ServicesDep, credentials: CredentialsDep) -> bool:
    """Whether the request carries the admin token: error texts (host paths, SQL) are for admins."""
    return _matches(credentials, services.settings.admin_token)


def require_reader(services: ServicesDep, credentials: CredentialsDep) -> None:
    settings = services.settings
    # create_app resolved None (the default) for its bind address; unresolved, reads stay closed.
    if settings.reads_require_token is False:
        return
    if not _matches(credentials, settings.read_token, settings.admin_token, settings.worker_token):
        raise _refuse("read")


TokenGuard = Callable[[Services, HTTPAuthorizationCredentials | None], object]
# The token checks a route's body waits for (CheckedRoute runs them before reading it): FastAPI
# reads and parses a body before it solves any dependency, so without this a request with no
# token would have its whole body (up to the upload limit) taken in before its 401.
BODY_GUARDS: frozenset[TokenGuard] = frozenset({require_admin, worker_identity})


async def check_token_before_body(request: Request, guard: TokenGuard) -> None:
    """Run `guard` on the request's bearer token (in a thread: an issued worker token is looked
    up in the database); raises its 401."""
    await run_in_threadpool(guard, get_services(request), await _bearer(request))


IsAdminDep = Annotated[bool, Depends(caller_is_admin)]
AdminOnly = Depends(require_admin)
WorkerOnly = Depends(worker_identity)
WorkerDep = Annotated[WorkerIdentity, Depends(worker_identity)]
Reader = Depends(require_reader)
