"""Seed import: upload an agent's code (tar or tar.gz) to become a root of the archive."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, File, Form, UploadFile, status

from service.api.deps import AdminOnly, ArchiveDep
from service.api.errors import STORAGE_FULL
from service.api.schemas import AgentPublic

router = APIRouter(prefix="/api/seeds", tags=["seeds"])


@router.post("", status_code=status.HTTP_201_CREATED, dependencies=[AdminOnly], responses=STORAGE_FULL)
def import_seed(
    archive: ArchiveDep,
    file: Annotated[UploadFile, File(description="tar or tar.gz of the agent's root folder")],
    name: Annotated[str | None, Form(max_length=200)] = None,
) -> AgentPublic:
    # The body limit (max_upload_bytes) bounds the upload; the archive bounds what it expands to.
    agent = archive.import_seed_tar(file.file, name=name)
    return AgentPublic.model_validate(agent, from_attributes=True)
