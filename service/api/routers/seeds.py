"""Seed import: upload an agent's code (tar or tar.gz) to become a root of the archive."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, File, Form, Response, UploadFile, status

from contracts.text import StorableStr
from service.api.deps import AdminOnly, ArchiveDep
from service.api.responses import error_responses
from service.api.routes import CheckedRoute
from service.api.schemas import AgentPublic

router = APIRouter(prefix="/api/seeds", tags=["seeds"], route_class=CheckedRoute)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    dependencies=[AdminOnly],
    responses={
        status.HTTP_200_OK: {"model": AgentPublic, "description": "The archive holds this code already"},
        **error_responses(401, 413, 422, 507),
    },
)
def import_seed(
    archive: ArchiveDep,
    response: Response,
    file: Annotated[UploadFile, File(description="tar or tar.gz of the agent's root folder")],
    name: Annotated[StorableStr | None, Form(max_length=200)] = None,
) -> AgentPublic:
    """201 with a new seed; 200 with the seed already archived when its code is the same
    (an agent's id is a function of its code; it keeps the name it was first imported with)."""
    # The body limit (max_upload_bytes) bounds the upload; the archive bounds what it expands to.
    agent, created = archive.import_seed_tar(file.file, name=name)
    if not created:
        response.status_code = status.HTTP_200_OK
    return AgentPublic.model_validate(agent, from_attributes=True)
