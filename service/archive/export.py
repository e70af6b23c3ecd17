"""Exports: one agent as tar.gz with metadata.json, a run's top agents, bundles, patch series."""

from __future__ import annotations

import io
import tarfile
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from contracts.records import AgentMetadata, AgentRunRecord, StageScoreRecord
from service.archive.git_store import EMPTY_TREE, GitStore
from service.db.models import Evaluation, Run, RunAgent, StageScore
from service.lifecycle import EvaluationStatus
from service.queries import get_agent, lineage_ids


def agent_metadata(session: Session, *, agent_id: str) -> AgentMetadata:
    agent = get_agent(session, agent_id=agent_id)
    runs: list[AgentRunRecord] = []
    for member in session.scalars(select(RunAgent).where(RunAgent.agent_id == agent_id)):
        run = session.get(Run, member.run_id)
        assert run is not None
        stages = session.scalars(
            select(StageScore)
            .where(StageScore.run_id == run.id, StageScore.agent_id == agent_id)
            .order_by(StageScore.stage)
        )
        runs.append(
            AgentRunRecord(
                run_id=run.id,
                run_name=run.name,
                status=member.status,
                reason=member.reason,
                score=member.score,
                stages=[StageScoreRecord.model_validate(s, from_attributes=True) for s in stages],
                config=run.config,
            )
        )
    return AgentMetadata(
        agent_id=agent.id,
        parent_id=agent.parent_id,
        lineage=lineage_ids(session, agent_id=agent_id),
        kind=agent.kind,
        name=agent.name,
        manifest=agent.manifest,
        created_at=agent.created_at,
        exported_at=datetime.now(UTC),
        runs=runs,
    )


def write_agent(tar: tarfile.TarFile, git: GitStore, metadata: AgentMetadata, prefix: str) -> None:
    """Add an agent's code under `prefix/code/` and its metadata at `prefix/metadata.json`."""
    # No agent is made of nothing now, but an archive may hold one from before: `git archive`
    # of the empty tree is a tar without even a header, which tarfile cannot open.
    if git.tree_of(metadata.agent_id) == EMPTY_TREE:
        _add_bytes(tar, f"{prefix}/metadata.json", metadata.model_dump_json(indent=2).encode())
        return
    with tarfile.open(fileobj=io.BytesIO(git.archive(metadata.agent_id)), mode="r:") as code:
        for member in code.getmembers():
            if member.name == "pax_global_header":
                continue
            content = code.extractfile(member) if member.isfile() else None
            member.name = f"{prefix}/code/{member.name}"
            tar.addfile(member, content)
    _add_bytes(tar, f"{prefix}/metadata.json", metadata.model_dump_json(indent=2).encode())


def export_agent(session: Session, git: GitStore, *, agent_id: str) -> bytes:
    metadata = agent_metadata(session, agent_id=agent_id)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        write_agent(tar, git, metadata, prefix=f"agent-{agent_id[:12]}")
    return buffer.getvalue()


def export_top(session: Session, git: GitStore, *, agent_ids: list[str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for rank, agent_id in enumerate(agent_ids, start=1):
            metadata = agent_metadata(session, agent_id=agent_id)
            write_agent(tar, git, metadata, prefix=f"top-{rank:02d}-{agent_id[:12]}")
    return buffer.getvalue()


def bundle_bytes(git: GitStore, *, agent_ids: list[str]) -> bytes:
    with tempfile.TemporaryDirectory(prefix="clade-bundle-") as tmp:
        path = Path(tmp) / "lineage.bundle"
        git.bundle(agent_ids, path)
        return path.read_bytes()


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = int(time.time())
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def predictions_jsonl(session: Session, *, run_id: str, agent_id: str) -> str:
    """The agent's diffs in the run as SWE-bench predictions (one JSON object a line), so the
    official harness or sb-cli can score them again."""
    # Imported here: the swebench benchmark package is heavy and only this export needs it.
    from benchmarks.swebench.export import predictions_jsonl as to_jsonl

    model = f"clade-agent-{agent_id[:12]}"
    rows = session.scalars(
        select(Evaluation)
        .where(
            Evaluation.run_id == run_id,
            Evaluation.agent_id == agent_id,
            Evaluation.status == EvaluationStatus.DONE,
        )
        .order_by(Evaluation.task_id)
    )
    return to_jsonl((e.task_id, model, str((e.result or {}).get("diff", ""))) for e in rows)
