"""Dependencies shared by the routers: the session, the archive, and token checks."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import SecretStr
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from benchmarks.catalog import BenchmarkCatalog
from contracts.settings import Settings
from service.archive.store import Archive


@dataclass(frozen=True)
class Services:
    settings: Settings
    engine: Engine
    sessions: sessionmaker[Session]
    archive: Archive
    catalog: BenchmarkCatalog


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


def require_worker(services: ServicesDep, credentials: CredentialsDep) -> None:
    settings = services.settings
    if not _matches(credentials, settings.worker_token, settings.admin_token):
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


IsAdminDep = Annotated[bool, Depends(caller_is_admin)]
AdminOnly = Depends(require_admin)
WorkerOnly = Depends(require_worker)
Reader = Depends(require_reader)
