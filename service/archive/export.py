"""Exports: one agent as tar.gz with metadata.json, a run's top agents, SWE-bench predictions.

The archives are streamed: a member's content goes from `git archive` to the client chunk by
chunk, so an agent of any size is exported in bounded memory.
"""

from __future__ import annotations

import itertools
import tarfile
import time
import zlib
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import IO

from sqlalchemy import select
from sqlalchemy.orm import Session

from contracts.records import AgentMetadata, AgentRunRecord, StageScoreRecord
from contracts.scores import ScoreCounts
from service.archive.git_store import CHUNK, EMPTY_TREE, GitStore
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
            .order_by(StageScore.epoch, StageScore.stage)
        )
        runs.append(
            AgentRunRecord(
                run_id=run.id,
                run_name=run.name,
                status=member.status,
                reason=member.reason,
                score=member.score,
                epoch=member.epoch,
                stages=[StageScoreRecord.model_validate(s, from_attributes=True) for s in stages],
                config=run.config,
                **ScoreCounts.of(member).model_dump(),
            )
        )
    return AgentMetadata(
        agent_id=agent.id,
        parent_id=agent.parent_id,
        second_parent_id=agent.second_parent_id,
        lineage=lineage_ids(session, agent_id=agent_id),
        kind=agent.kind,
        name=agent.name,
        manifest=agent.manifest,
        created_at=agent.created_at,
        exported_at=datetime.now(UTC),
        runs=runs,
    )


def export_agent(metadata: AgentMetadata, git: GitStore) -> Iterator[bytes]:
    """tar.gz of the agent's code under `agent-<id>/code/` and its `metadata.json`, streamed."""
    return gzip_stream(tar_stream(_agent_members(git, metadata, prefix=f"agent-{metadata.agent_id[:12]}")))


def export_top(metadata: list[AgentMetadata], git: GitStore, extra: Iterable[Member] = ()) -> Iterator[bytes]:
    """One tar.gz of several agents, `top-<rank>-<id>/` each, then `extra` members, streamed."""
    members = itertools.chain(
        (
            member
            for rank, agent in enumerate(metadata, start=1)
            for member in _agent_members(git, agent, prefix=f"top-{rank:02d}-{agent.agent_id[:12]}")
        ),
        extra,
    )
    return gzip_stream(tar_stream(members))


def file_member(name: str, data: bytes) -> Member:
    """A regular file of `data` for a tar stream."""
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
    return info, (data,)


Member = tuple[tarfile.TarInfo, Iterable[bytes]]


def _agent_members(git: GitStore, metadata: AgentMetadata, prefix: str) -> Iterator[Member]:
    """The agent's code read from `git archive` one member at a time, then its metadata."""
    # No agent is made of nothing now, but an archive may hold one from before: `git archive`
    # of the empty tree is a tar without even a header, which tarfile cannot open.
    if git.tree_of(metadata.agent_id) != EMPTY_TREE:
        yield from _code_members(git, metadata.agent_id, prefix)
    yield file_member(f"{prefix}/metadata.json", metadata.model_dump_json(indent=2).encode())


def _code_members(git: GitStore, agent_id: str, prefix: str) -> Iterator[Member]:
    with (
        git.reading(["archive", "--format=tar", agent_id]) as out,
        tarfile.open(fileobj=out, mode="r|") as code,
    ):
        for member in code:
            if member.name == "pax_global_header":
                continue
            # A fresh header: the source's pax "path" record would override a renamed member.
            info = tarfile.TarInfo(f"{prefix}/code/{member.name}")
            info.type, info.mode, info.mtime = member.type, member.mode, member.mtime
            info.size, info.linkname = member.size, member.linkname
            content = code.extractfile(member) if member.isfile() else None
            yield info, _chunks(content) if content is not None else ()


def _chunks(handle: IO[bytes]) -> Iterator[bytes]:
    while chunk := handle.read(CHUNK):
        yield chunk


def tar_stream(members: Iterable[Member]) -> Iterator[bytes]:
    """A tar (pax format) written member by member: at most one chunk of content held at a time."""
    written = 0
    for info, content in members:
        header = info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
        yield header
        size = 0
        for chunk in content:
            size += len(chunk)
            yield chunk
        if size != info.size:
            raise ValueError(f"{info.name}: {size} bytes read, the header says {info.size}")
        padding = -size % tarfile.BLOCKSIZE
        yield tarfile.NUL * padding
        written += len(header) + size + padding
    end = 2 * tarfile.BLOCKSIZE
    yield tarfile.NUL * (end + -(written + end) % tarfile.RECORDSIZE)


def gzip_stream(chunks: Iterable[bytes]) -> Iterator[bytes]:
    compressor = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # gzip framing
    for chunk in chunks:
        if out := compressor.compress(chunk):
            yield out
    yield compressor.flush()


def predictions_jsonl(session: Session, *, run_id: str, agent_id: str) -> str:
    """The agent's diffs in the run as SWE-bench predictions (one JSON object a line), so the
    official harness or sb-cli can score them again."""
    # Imported here: the swebench benchmark package is heavy and only this export needs it.
    from benchmarks.swebench.export import predictions_jsonl as to_jsonl

    model = f"clade-agent-{agent_id[:12]}"
    return to_jsonl((task, model, diff) for task, diff in _diffs(session, run_id=run_id, agent_id=agent_id))


def pro_predictions_json(session: Session, *, run_id: str, agent_id: str) -> str:
    """The same diffs as SWE-bench Pro's patches file (a JSON list of instance_id, patch,
    prefix), what its `swe_bench_pro_eval.py --patch_path` reads."""
    from benchmarks.swebench_pro.export import pro_predictions_json as to_json

    prefix = f"clade-agent-{agent_id[:12]}"
    return to_json((task, prefix, diff) for task, diff in _diffs(session, run_id=run_id, agent_id=agent_id))


def _diffs(session: Session, *, run_id: str, agent_id: str) -> list[tuple[str, str]]:
    """(task id, diff) of the agent's finished evaluations in the run, one per task."""
    rows = session.scalars(
        select(Evaluation)
        .where(
            Evaluation.run_id == run_id,
            Evaluation.agent_id == agent_id,
            Evaluation.status == EvaluationStatus.DONE,
            Evaluation.trial == 0,  # one prediction per instance, whatever `trials` was
        )
        .order_by(Evaluation.task_id)
    )
    return [(e.task_id, str((e.result or {}).get("diff", ""))) for e in rows]
