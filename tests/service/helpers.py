"""Helpers for the service tests: run configs, patches, and the archive in the states the driver leaves."""

from __future__ import annotations

import base64
import json
import struct
import subprocess
import tarfile
import tempfile
import zlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, func, select
from sqlalchemy.orm import Session
from typer.testing import Result

from service import job_secrets
from service.db.models import Agent, Evaluation, LLMUsage, Run, RunAgent, Step
from service.steps import open_step
from tests.servers import JOB_SECRET, ServiceClients


def dispatched(item: Step | Evaluation, secret: str = JOB_SECRET) -> None:
    """Mark `item` sent to a worker with `secret`, as the driver's dispatch does (caller commits):
    its hash and the time it was sent, so a running driver does not send it again (with a new secret)."""
    item.job_secret_hash = job_secrets.digest(secret)
    item.dispatched_at, item.dispatches = datetime.now(UTC), (item.dispatches or 0) + 1


def dispatch_in(database_url: str, model: type[Step] | type[Evaluation], item_id: str, secret: str) -> None:
    engine = create_engine(database_url)
    with Session(engine) as session:
        item = session.get(model, item_id)
        assert item is not None, f"{model.__tablename__} {item_id} not found"
        dispatched(item, secret)
        session.commit()
    engine.dispose()


def sent_job(data_dir: Path, task_id: str) -> dict[str, Any] | None:
    """The job of the last message queued under Celery task id `task_id` (`evaluate-<id>`,
    `improve-<id>`) in the service's file broker, as a worker receives it; None while there is none."""
    found: dict[str, Any] | None = None
    for path in sorted((data_dir / "broker" / "queue").glob("*.msg")):
        try:
            message = json.loads(path.read_text())
        except (OSError, ValueError):  # claimed or still being written
            continue
        if message.get("headers", {}).get("id") != task_id:
            continue
        body = message["body"]
        if message.get("properties", {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        _args, kwargs, _embed = json.loads(body)
        found = kwargs["job"]
    return found


def open_step_in(database_url: str, *, run_id: str, parent_id: str, secret: str | None = JOB_SECRET) -> str:
    """Open a step the way the driver does (the driver itself comes with the evolution loop), and
    dispatch it with `secret` (None: not dispatched yet)."""
    engine = create_engine(database_url)
    with Session(engine) as session:
        step = open_step(session, run_id=run_id, parent_id=parent_id)
        if secret is not None:
            dispatched(step, secret)
        session.commit()
        step_id = step.id
    engine.dispose()
    return step_id


def add_evaluation(
    database_url: str,
    *,
    run_id: str,
    agent_id: str,
    evaluation_id: str,
    secret: str | None = JOB_SECRET,
    task_id: str = "clade-mini__textkit-1",
) -> None:
    """A pending evaluation, as the driver leaves one for a worker to answer, dispatched with
    `secret` (None: not dispatched yet)."""
    engine = create_engine(database_url)
    with Session(engine) as session:
        evaluation = Evaluation(
            id=evaluation_id,
            run_id=run_id,
            agent_id=agent_id,
            task_id=task_id,
            stage=0,
            status="pending",
        )
        if secret is not None:
            dispatched(evaluation, secret)
        session.add(evaluation)
        session.commit()
    engine.dispose()


def row_counts(database_url: str) -> dict[str, int]:
    engine = create_engine(database_url)
    with Session(engine) as session:
        counts = {
            model.__tablename__: session.scalar(select(func.count()).select_from(model)) or 0
            for model in (Agent, Run, RunAgent, Step, Evaluation, LLMUsage)
        }
    engine.dispose()
    return counts


def agent_ids(database_url: str) -> set[str]:
    engine = create_engine(database_url)
    with Session(engine) as session:
        ids = set(session.scalars(select(Agent.id)))
    engine.dispose()
    return ids


def config(seed_id: str, **overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "demo",
        "seed_agent": seed_id,
        "stages": [
            {"tasks": ["clade-mini__textkit-1", "clade-mini__ledger-1"], "threshold": 0.5},
            {"subset": "all"},
        ],
        "budget": {"max_children": 5, "max_usd": 1.5},
        "parallelism": 2,
        "rng_seed": 7,
    }
    return base | overrides


CORE = "".join(f"line {i}\n" for i in range(50))


def core_patch(index: int, text: str) -> str:
    """Replace line `index` of tiny/core.py (as the seed fixture writes it)."""
    lines = CORE.splitlines(keepends=True)
    start = max(0, index - 3)
    context = lines[start : index + 4]
    new = context.copy()
    new[index - start] = text + "\n"
    hunk = [f" {line}" if i != index - start else f"-{line}+{new[i]}" for i, line in enumerate(context)]
    header = f"@@ -{start + 1},{len(context)} +{start + 1},{len(new)} @@\n"
    return "--- a/tiny/core.py\n+++ b/tiny/core.py\n" + header + "".join(hunk)


def start_run(service: ServiceClients, seed_id: str) -> str:
    with service.admin as client:
        return str(client.post("/api/runs", json=config(seed_id)).json()["id"])


def agent_refs(data_dir: Path) -> set[str]:
    output = subprocess.run(
        [
            "git",
            "--git-dir",
            str(data_dir / "archive.git"),
            "for-each-ref",
            "--format=%(refname:lstrip=3)",
            "refs/heads/agents",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(output.split())


def make_patch(old: str, new: str, path: str = "tiny/core.py") -> str:
    """A real unified diff, made by git itself."""
    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp) / "a", Path(tmp) / "b"
        a.write_text(old)
        b.write_text(new)
        result = subprocess.run(
            [
                "git",
                "diff",
                "--no-index",
                f"--src-prefix=a/{path}#",
                f"--dst-prefix=b/{path}#",
                str(a),
                str(b),
            ],
            capture_output=True,
            text=True,
        )
    lines = result.stdout.splitlines(keepends=True)
    body = [
        line
        for line in lines
        if line.startswith(("@@", "+", "-", " ")) and not line.startswith(("---", "+++"))
    ]
    return f"--- a/{path}\n+++ b/{path}\n" + "".join(body)


def object_count(data_dir: Path) -> int:
    """Objects in the archive (loose and packed): unchanged when a refused write kept nothing."""
    output = subprocess.run(
        ["git", "--git-dir", str(data_dir / "archive.git"), "count-objects", "-v"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    fields = dict(line.split(": ") for line in output.splitlines())
    return int(fields["count"]) + int(fields["in-pack"])


def binary_patch(files: dict[str, bytes]) -> str:
    """A git binary patch (`git diff --binary`) that adds `files`, made by git itself."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        for name, data in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(data)
        subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
        return subprocess.run(
            ["git", "-C", str(root), "diff", "--cached", "--binary"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout


MIB = 1024 * 1024


def zeros_tar_gz(files: dict[str, int]) -> bytes:
    """A valid tar.gz of files of zeros (name -> size), built in a fraction of the time plain
    gzip takes for a gigabyte: after a full flush deflate starts afresh, so every MiB of zeros
    compresses to the same bytes, computed once and repeated."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    parts = [b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"]  # gzip header, no name, no time
    crc = length = 0

    def feed(data: bytes) -> None:
        nonlocal crc, length
        crc, length = zlib.crc32(data, crc), length + len(data)
        parts.append(deflate.compress(data))

    mib = bytes(MIB)
    block = b""
    for name, size in files.items():
        info = tarfile.TarInfo(name)
        info.size, info.mode = size, 0o644
        feed(info.tobuf(tarfile.PAX_FORMAT))
        whole, rest = divmod(size, MIB)
        if whole:
            parts.append(deflate.flush(zlib.Z_FULL_FLUSH))
            block = block or deflate.compress(mib) + deflate.flush(zlib.Z_FULL_FLUSH)
            parts.extend([block] * whole)
            for _ in range(whole):
                crc = zlib.crc32(mib, crc)
            length += whole * MIB
        feed(bytes(rest + -size % tarfile.BLOCKSIZE))
    feed(bytes(2 * tarfile.BLOCKSIZE))
    parts.append(deflate.flush())
    parts.append(struct.pack("<II", crc, length & 0xFFFFFFFF))
    return b"".join(parts)


def refusal(response: httpx.Response) -> tuple[list[list[str | int]], str]:
    """A 422's places and messages: every 422 is a list of issues, each with `loc` and `msg`."""
    assert response.status_code == 422, response.text
    issues = response.json()["detail"]
    assert isinstance(issues, list) and issues, response.text
    return [issue["loc"] for issue in issues], "; ".join(issue["msg"] for issue in issues)


def cli_refusal(result: Result, code: int = 1) -> str:
    """The one line of stderr of a command's refusal, after checking it is one line (even past
    the console's 80 columns), with that exit code and no traceback."""
    assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]
