"""Seed import: upload an agent's code (tar or tar.gz) to become a root of the archive."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, File, Form, HTTPException, UploadFile, status

from service.api.deps import AdminOnly, ArchiveDep, ServicesDep
from service.api.errors import STORAGE_FULL
from service.api.schemas import AgentPublic

router = APIRouter(prefix="/api/seeds", tags=["seeds"])


@router.post("", status_code=status.HTTP_201_CREATED, dependencies=[AdminOnly], responses=STORAGE_FULL)
def import_seed(
    archive: ArchiveDep,
    services: ServicesDep,
    file: Annotated[UploadFile, File(description="tar or tar.gz of the agent's root folder")],
    name: Annotated[str | None, Form(max_length=200)] = None,
) -> AgentPublic:
    limit = services.settings.max_upload_bytes
    data = file.file.read(limit + 1)
    if len(data) > limit:
        raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, f"upload exceeds {limit} bytes")
    agent = archive.import_seed_tar(data, name=name)
    return AgentPublic.model_validate(agent, from_attributes=True)
