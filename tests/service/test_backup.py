"""`clade backup` / `clade restore`: round trips on each database and across them, a backup
taken while children are being written, and the refusals (non-empty target, damaged file)."""

from __future__ import annotations

import errno
import gzip
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from cli.main import app
from service.archive import backup as backup_module
from service.archive.backup import BackupError, create_backup, read_manifest, restore_backup
from tests.helpers import import_seed
from tests.servers import (
    AppService,
    app_service,
    closed_port,
    free_port,
    fresh_postgres_database,
    service_env,
)
from tests.service.helpers import (
    add_evaluation,
    agent_ids,
    agent_refs,
    core_patch,
    open_step_in,
    row_counts,
    start_run,
)
from tests.service.helpers import cli_refusal as refused


def add_child(service: AppService, *, run_id: str, parent_id: str, line: int, text: str) -> str:
    step_id = open_step_in(service.database_url, run_id=run_id, parent_id=parent_id)
    usage = [
        {
            "purpose": "improve",
            "model": "scripted",
            "prompt_tokens": 10,
            "completion_tokens": 2,
            "cost_usd": 0.01,
        }
    ]
    with service.worker as worker:
        answer = worker.post(
            f"/api/worker/steps/{step_id}/child", json={"patch": core_patch(line, text), "usage": usage}
        )
    assert answer.status_code == 200, answer.text
    return str(answer.json()["id"])


def small_archive(service: AppService, workdir: Path) -> dict[str, Any]:
    """A seed, a run with a chain of two children and a sibling, a rejected step, an evaluation."""
    seed = import_seed(service, workdir)
    run_id = start_run(service, seed)
    first = add_child(service, run_id=run_id, parent_id=seed, line=3, text="three")
    second = add_child(service, run_id=run_id, parent_id=first, line=9, text="nine")
    sibling = add_child(service, run_id=run_id, parent_id=seed, line=20, text="twenty")
    rejected = open_step_in(service.database_url, run_id=run_id, parent_id=second)
    add_evaluation(service.database_url, run_id=run_id, agent_id=first, evaluation_id="e-backup-1")
    result = {"result": {"resolved": True, "diff": "--- a/x\n+++ b/x\n", "durations": {"total_s": 1.5}}}
    with service.worker as worker:
        assert (
            worker.post(f"/api/worker/steps/{rejected}/reject", json={"reason": "empty patch"}).status_code
            == 200
        )
        assert worker.post("/api/worker/evaluations/e-backup-1/result", json=result).status_code == 200
    return {"seed": seed, "run": run_id, "agents": [seed, first, second, sibling]}


def paused(service: AppService, run_id: str) -> None:
    """A running run's elapsed time grows with the clock; a paused one's stands still, to compare."""
    with service.admin as client:
        assert client.post(f"/api/runs/{run_id}/pause").status_code == 200


def api_answers(service: AppService, archive: dict[str, Any]) -> dict[str, Any]:
    """What a user reads through the API about the archive."""
    answers: dict[str, Any] = {}
    with service.admin as client:
        run_id = archive["run"]
        paths = [
            "/api/agents?limit=1000",
            "/api/runs",
            f"/api/runs/{run_id}",
            f"/api/runs/{run_id}/agents?limit=1000",
            f"/api/runs/{run_id}/lineage",
            f"/api/runs/{run_id}/usage",
            f"/api/runs/{run_id}/events",
            "/api/admin/consistency",
        ]
        for sha in archive["agents"]:
            paths += [f"/api/agents/{sha}", f"/api/agents/{sha}/diff", f"/api/agents/{sha}/patches"]
        paths.append(f"/api/agents/{archive['agents'][1]}/evaluations/e-backup-1")
        for path in paths:
            response = client.get(path)
            assert response.status_code == 200, (path, response.text)
            answers[path] = response.json() if "json" in response.headers["content-type"] else response.text
    return answers


@contextmanager
def fresh_target(kind: str, root: Path) -> Iterator[tuple[Path, str]]:
    """An empty data dir and an empty database of the given kind."""
    data_dir = root / "restored"
    if kind == "sqlite":
        yield data_dir, f"sqlite:///{data_dir / 'clade.db'}"
        return
    with fresh_postgres_database() as url:
        yield data_dir, url


@contextmanager
def restored_service(data_dir: Path, database_url: str) -> Iterator[AppService]:
    with app_service(service_env(data_dir, database_url, free_port())) as app:
        yield app


@pytest.mark.parametrize(
    ("database_url", "target"),
    [("sqlite", "sqlite"), ("postgres", "postgres"), ("sqlite", "postgres")],
    indirect=["database_url"],
)
def test_round_trip_answers_the_same(service: AppService, tmp_path: Path, target: str) -> None:
    archive = small_archive(service, tmp_path)
    paused(service, archive["run"])
    before = api_answers(service, archive)
    out = tmp_path / "archive.clade-backup"
    manifest = create_backup(data_dir=service.data_dir, database_url=service.database_url, out=out)
    assert manifest.counts["agents"] == 4 and manifest.counts["steps"] == 4 and manifest.refs == 4
    assert read_manifest(out) == manifest
    with fresh_target(target, tmp_path) as (data_dir, url):
        report = restore_backup(backup=out, data_dir=data_dir, database_url=url)
        assert report.consistency.consistent and report.consistency.agents_checked == 4
        assert not report.consistency.refs_restored and not report.consistency.refs_removed
        assert agent_refs(data_dir) == set(archive["agents"]) == agent_ids(url)
        assert row_counts(url) == row_counts(service.database_url)
        with restored_service(data_dir, url) as restored:
            after = api_answers(restored, archive)
            # The restored archive takes new children where the old one left off.
            add_child(restored, run_id=archive["run"], parent_id=archive["agents"][2], line=30, text="thirty")
        clone = subprocess.run(
            ["git", "clone", "-q", str(data_dir / "archive.git"), str(tmp_path / "c")], capture_output=True
        )
        assert clone.returncode == 0 and (tmp_path / "c" / "agent.toml").exists()
    assert after.keys() == before.keys()
    for path, answer in before.items():
        assert after[path] == answer, path


def test_backup_while_children_are_written_restores_consistently(service: AppService, tmp_path: Path) -> None:
    archive = small_archive(service, tmp_path)
    stop = threading.Event()
    made: list[str] = []
    first_written = threading.Event()

    def write_children() -> None:
        for index in range(200):
            if stop.is_set():
                return
            line = index % 40 + 8
            made.append(
                add_child(
                    service,
                    run_id=archive["run"],
                    parent_id=archive["agents"][1],
                    line=line,
                    text=f"x{index}",
                )
            )
            first_written.set()

    backups = []
    with ThreadPoolExecutor(max_workers=1) as pool:
        writer = pool.submit(write_children)
        try:
            assert first_written.wait(timeout=60) or writer.done()
            for index in range(3):
                out = tmp_path / f"during-{index}.clade-backup"
                create_backup(data_dir=service.data_dir, database_url=service.database_url, out=out)
                backups.append(out)
        finally:
            stop.set()
        writer.result(timeout=120)  # its failure, if any, fails the test
    counts = [read_manifest(out).counts["agents"] for out in backups]
    assert counts[0] > 4 and counts[-1] < 4 + len(made), (counts, len(made))
    for index, out in enumerate(backups):
        data_dir = tmp_path / f"restored-{index}"
        url = f"sqlite:///{data_dir / 'clade.db'}"
        report = restore_backup(backup=out, data_dir=data_dir, database_url=url)
        assert report.consistency.consistent, report
        assert not report.consistency.refs_restored and not report.consistency.refs_removed
        assert agent_refs(data_dir) == agent_ids(url)
        assert len(agent_ids(url)) == read_manifest(out).counts["agents"] >= 4


@pytest.fixture
def backup_file(service: AppService, tmp_path: Path) -> Path:
    small_archive(service, tmp_path)
    out = tmp_path / "b.clade-backup"
    create_backup(data_dir=service.data_dir, database_url=service.database_url, out=out)
    return out


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_non_empty_target_is_refused_by_name(
    service: AppService, backup_file: Path, tmp_path: Path
) -> None:
    # Into the live archive itself: both its git archive and its database hold agents.
    with pytest.raises(BackupError, match=r"refusing to restore: the archive .*archive.git is not empty"):
        restore_backup(backup=backup_file, data_dir=service.data_dir, database_url=service.database_url)
    empty_dir = tmp_path / "fresh"
    with pytest.raises(BackupError, match=r"refusing to restore: the database .*clade.db is not empty"):
        restore_backup(backup=backup_file, data_dir=empty_dir, database_url=service.database_url)
    assert not (empty_dir / "archive.git").exists()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_damaged_backups_are_refused_and_write_nothing(backup_file: Path, tmp_path: Path) -> None:
    data = backup_file.read_bytes()
    truncated = tmp_path / "truncated"
    truncated.write_bytes(data[: len(data) * 2 // 3])
    flipped = tmp_path / "flipped"
    with tarfile.open(backup_file) as tar:
        pack = tar.getmember("archive.pack")
    damaged = bytearray(data)
    damaged[pack.offset_data + pack.size // 2] ^= 0xFF  # one byte inside the git pack
    flipped.write_bytes(bytes(damaged))
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"not a backup at all" * 100)
    for bad, message in [
        (truncated, "damaged or truncated|damaged, truncated"),
        (flipped, "damaged"),
        (garbage, "not a Clade backup"),
        (tmp_path / "absent", "no such file"),
    ]:
        data_dir = tmp_path / f"target-{bad.name}"
        with pytest.raises(BackupError, match=message):
            restore_backup(backup=bad, data_dir=data_dir, database_url=f"sqlite:///{data_dir / 'clade.db'}")
        assert not data_dir.exists(), f"{bad.name} wrote into the target"


def rewritten(backup: Path, dest: Path, **manifest_changes: Any) -> Path:
    """The same backup with its manifest changed (its members and their digests kept)."""
    with tarfile.open(backup) as source, tarfile.open(dest, "w") as out:
        for member in source.getmembers():
            data = source.extractfile(member)
            assert data is not None
            body = data.read()
            if member.name == "manifest.json":
                body = json.dumps(json.loads(body) | manifest_changes).encode()
                member.size = len(body)
            out.addfile(member, io.BytesIO(body))
    return dest


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_restore_that_fails_while_loading_leaves_the_targets_empty(
    backup_file: Path, tmp_path: Path
) -> None:
    counts = read_manifest(backup_file).counts
    wrong = rewritten(backup_file, tmp_path / "wrong", counts=counts | {"steps": counts["steps"] + 1})
    with fresh_postgres_database() as url:
        data_dir = tmp_path / "target"
        with pytest.raises(BackupError, match="the backup's steps holds 4 rows"):
            restore_backup(backup=wrong, data_dir=data_dir, database_url=url)
        # The archive is moved into place only once the rows are in: there is none.
        assert not (data_dir / "archive.git").exists() and agent_ids(url) == set()
        # Nothing was left behind that would make the same target refuse a second attempt.
        report = restore_backup(backup=backup_file, data_dir=data_dir, database_url=url)
        assert report.consistency.consistent and len(agent_ids(url)) == 4


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_cli_backup_and_restore(service: AppService, tmp_path: Path) -> None:
    archive = small_archive(service, tmp_path)
    out = tmp_path / "cli.clade-backup"

    def clade(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "cli.main", *args],
            env=service.env | {"COLUMNS": "200"},
            capture_output=True,
            text=True,
            timeout=120,
        )

    made = clade("backup", str(out))
    assert made.returncode == 0, made.stderr
    assert "backed up 4 agents, 1 runs" in made.stdout
    target = tmp_path / "cli-restored"
    restored = clade(
        "--json",
        "restore",
        str(out),
        "--data-dir",
        str(target),
        "--database-url",
        f"sqlite:///{target / 'c.db'}",
    )
    assert restored.returncode == 0, restored.stderr
    assert '"consistent"' not in restored.stderr and agent_ids(f"sqlite:///{target / 'c.db'}") == set(
        archive["agents"]
    )
    again = clade(
        "restore", str(out), "--data-dir", str(target), "--database-url", f"sqlite:///{target / 'c.db'}"
    )
    assert again.returncode == 1
    assert (
        again.stderr.startswith("error: refusing to restore") and "archive.git is not empty" in again.stderr
    )


def cli(*args: str) -> Result:
    """`clade` in this process, with no CLADE_* variable of the machine running the tests."""
    env = {name: None for name in os.environ if name.startswith("CLADE_")} | {"COLUMNS": "80"}
    return CliRunner().invoke(app, list(args), env=env)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_backup_writes_only_a_new_file_or_over_an_earlier_backup(service: AppService, tmp_path: Path) -> None:
    small_archive(service, tmp_path)
    source = ["--data-dir", str(service.data_dir), "--database-url", service.database_url]
    folder = tmp_path / "backups"
    folder.mkdir()
    fifo = folder / "fifo"
    os.mkfifo(fifo)
    notes = folder / "notes.txt"
    notes.write_text("not a backup")
    link = folder / "link.tar"
    link.symlink_to(notes)
    cases = [
        (folder, f"error: {folder}: is a directory; give a file name"),
        (Path(""), "error: .: is a directory; give a file name"),
        (fifo, f"error: {fifo}: not a regular file (a FIFO, device or socket is never replaced)"),
        (notes / "x.tar", f"error: {notes / 'x.tar'}: a part of the path is a file, not a folder"),
        (
            tmp_path / "missing" / "x.tar",
            f"error: {tmp_path / 'missing' / 'x.tar'}: no such folder {tmp_path / 'missing'}"
            " (a backup's folder is not made for it)",
        ),
        (
            notes,
            f"error: {notes}: exists and is not a Clade backup, so it is not replaced; give a new file name",
        ),
        (link, f"error: {link}: is a symbolic link; give a new file name, or the backup it points to"),
    ]
    for out, message in cases:
        assert refused(cli("backup", str(out), *source)) == message
    assert notes.read_text() == "not a backup" and not (tmp_path / "missing").exists()
    assert sorted(p.name for p in folder.iterdir()) == ["fifo", "link.tar", "notes.txt"]  # no scratch left

    out = folder / "b.tar"
    assert cli("backup", str(out), *source).exit_code == 0
    first = read_manifest(out).created_at
    again = cli("backup", str(out), *source)  # an earlier backup is replaced
    assert again.exit_code == 0, again.stderr
    assert read_manifest(out).created_at > first


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_restore_into_a_relative_data_dir_then_serve_it(
    service: AppService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = small_archive(service, tmp_path)
    out = tmp_path / "b.tar"
    create_backup(data_dir=service.data_dir, database_url=service.database_url, out=out)
    monkeypatch.chdir(tmp_path)
    restored = cli("restore", "b.tar", "--data-dir", "rs/d", "--database-url", "sqlite:///rs/d/c.db")
    assert restored.exit_code == 0, (restored.stderr, restored.exception)
    assert "restored 4 agents, 1 runs" in restored.stdout
    assert agent_refs(tmp_path / "rs" / "d") == set(archive["agents"]) == agent_ids("sqlite:///rs/d/c.db")
    # The service starts on the relative data dir (its start-up consistency check reads git).
    with restored_service(Path("rs/d"), "sqlite:///rs/d/c.db") as app, app.admin as client:
        answer = client.get(f"/api/agents/{archive['agents'][2]}/diff")
        assert answer.status_code == 200 and "nine" in answer.text
    backup_again = cli("backup", "again.tar", "--data-dir", "rs/d", "--database-url", "sqlite:///rs/d/c.db")
    assert backup_again.exit_code == 0, backup_again.stderr


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_restore_that_fails_late_writes_nothing(
    backup_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts = read_manifest(backup_file).counts
    wrong = rewritten(backup_file, tmp_path / "wrong", counts=counts | {"steps": counts["steps"] + 1})
    data_dir = tmp_path / "target"
    url = f"sqlite:///{data_dir / 'clade.db'}"
    assert refused(cli("restore", str(wrong), "--data-dir", str(data_dir), "--database-url", url)) == (
        "error: the backup's steps holds 4 rows, its manifest says otherwise"
    )
    assert agent_ids(url) == set()
    assert sorted(p.name for p in data_dir.iterdir()) == ["clade.db"]  # its schema only: no archive

    # The rows are in and the archive is being moved into place when the disk fails: the rows
    # are rolled back, and the archive is not there.
    def no_room(staged: Path, archive: Path) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(backup_module, "_swap_in", no_room)
    assert refused(cli("restore", str(backup_file), "--data-dir", str(data_dir), "--database-url", url)) == (
        f"error: cannot restore into {data_dir}: No space left on device; nothing was restored"
    )
    assert agent_ids(url) == set() and sorted(p.name for p in data_dir.iterdir()) == ["clade.db"]
    monkeypatch.undo()
    # Nothing was left behind that would make the same target refuse a second attempt.
    assert cli("restore", str(backup_file), "--data-dir", str(data_dir), "--database-url", url).exit_code == 0
    assert agent_refs(data_dir) == agent_ids(url) and len(agent_ids(url)) == 4


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize("command", ["backup", "restore"])
def test_a_database_url_that_cannot_be_used_is_named(
    service: AppService, backup_file: Path, tmp_path: Path, command: str
) -> None:
    file = str(tmp_path / "new.tar") if command == "backup" else str(backup_file)
    data_dir = str(service.data_dir if command == "backup" else tmp_path / "target")
    with closed_port() as port:
        for url, message in [
            ("garbage://", "error: --database-url / CLADE_DATABASE_URL: garbage://: Can't load plugin"),
            ("garbage", "error: --database-url / CLADE_DATABASE_URL: not a database URL"),
            (
                f"postgresql+psycopg://u:secret@127.0.0.1:{port}/x",
                f"error: the database postgresql+psycopg://u:***@127.0.0.1:{port}/x: connection",
            ),
        ]:
            line = refused(cli(command, file, "--data-dir", data_dir, "--database-url", url))
            assert line.startswith(message), line
            assert "secret" not in line
    assert not (tmp_path / "new.tar").exists() and not (tmp_path / "target").exists()


def tampered(
    backup: Path,
    dest: Path,
    *,
    manifest: dict[str, Any] | None = None,
    members: dict[str, bytes] | None = None,
    links: dict[str, str] | None = None,
) -> Path:
    """The backup with members replaced or added (their digests made to match, as a forger
    would), manifest keys changed, and members turned into symbolic links."""
    with tarfile.open(backup) as source:
        files = {m.name: source.extractfile(m).read() for m in source.getmembers()}  # type: ignore[union-attr]
    document = json.loads(files.pop("manifest.json")) | (manifest or {})
    for name, body in (members or {}).items():
        files[name] = body
        document["members"][name] = {"sha256": hashlib.sha256(body).hexdigest(), "size": len(body)}
    with tarfile.open(dest, "w") as out:
        for name, body in [("manifest.json", json.dumps(document).encode()), *files.items()]:
            info = tarfile.TarInfo(name)
            if name in (links or {}):
                info.type, info.linkname = tarfile.SYMTYPE, (links or {})[name]
                out.addfile(info)
                continue
            info.size = len(body)
            out.addfile(info, io.BytesIO(body))
    return dest


def rows_of(backup: Path, table: str) -> list[dict[str, Any]]:
    with tarfile.open(backup) as tar:
        body = tar.extractfile(f"database/{table}.jsonl.gz").read()  # type: ignore[union-attr]
    return [json.loads(line) for line in gzip.decompress(body).splitlines()]


def lines_gz(*rows: object) -> bytes:
    return gzip.compress(
        b"".join(row if isinstance(row, bytes) else json.dumps(row).encode() + b"\n" for row in rows)
    )


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_forged_backup_is_refused_by_name_and_writes_nowhere_else(
    backup_file: Path, tmp_path: Path
) -> None:
    # A forger controls the manifest and every digest: the checks must not rest on them.
    outside = tmp_path / "outside"
    outside.mkdir()
    escape = f"../../../../../../../..{outside}/written"
    tables = read_manifest(backup_file).tables
    counts = read_manifest(backup_file).counts
    run = rows_of(backup_file, "runs")[0]
    agent = rows_of(backup_file, "agents")[0]
    cases: dict[str, tuple[dict[str, Any], str]] = {
        "a table named as a path": (
            {
                "manifest": {"tables": [*tables, escape], "counts": counts | {escape: 0}},
                "members": {f"database/{escape}.jsonl.gz": lines_gz()},
            },
            r"its manifest does not fit \(tables\.\d+: String should match pattern",
        ),
        "a table twice": ({"manifest": {"tables": [*tables, "agents"]}}, "tables listed twice: agents"),
        "a table left out": (
            {
                "manifest": {
                    "tables": [t for t in tables if t != "events"],
                    "members": {
                        name: member.model_dump()
                        for name, member in read_manifest(backup_file).members.items()
                        if name != "database/events.jsonl.gz"
                    },
                }
            },
            "the backup lacks the tables events of its revision",
        ),
        "a symbolic link": ({"links": {"database/runs.jsonl.gz": "/etc/passwd"}}, "is not a regular file"),
        "not gzip": (
            {"members": {"database/runs.jsonl.gz": b"plain\n"}},
            "runs.jsonl.gz is damaged: not a whole gzip",
        ),
        "not JSON": (
            {"members": {"database/runs.jsonl.gz": lines_gz(b"{oops\n")}},
            r"runs.jsonl.gz, row 1: not JSON",
        ),
        "not an object": (
            {"members": {"database/runs.jsonl.gz": lines_gz([1])}},
            r"runs.jsonl.gz, row 1: not a row",
        ),
        "a time that is no time": (
            {"members": {"database/runs.jsonl.gz": lines_gz(run | {"created_at": "soon"})}},
            "the backup's runs row 1, created_at: Invalid isoformat string",
        ),
        "a time of the wrong type": (
            {"members": {"database/runs.jsonl.gz": lines_gz(run | {"created_at": 5})}},
            "the backup's runs row 1, created_at: a time must be ISO text, got int",
        ),
        "a value of the wrong type": (
            {"members": {"database/runs.jsonl.gz": lines_gz(run | {"id": {"a": 1}})}},
            "the backup's runs row 1 does not fit the database: ",
        ),
        "a required value missing": (
            {"members": {"database/runs.jsonl.gz": lines_gz({k: v for k, v in run.items() if k != "name"})}},
            "the backup's runs row 1 does not fit the database: NOT NULL constraint failed: runs.name",
        ),
        "an agent id that is no commit": (
            {"members": {"database/agents.jsonl.gz": lines_gz(agent | {"id": "HEAD"})}},
            "the backup's agents row 1: id 'HEAD' is not a commit id",
        ),
    }
    for number, (case, (changes, message)) in enumerate(cases.items()):
        forged = tampered(backup_file, tmp_path / f"forged-{number}", **changes)
        data_dir = tmp_path / f"target-{number}"
        url = f"sqlite:///{data_dir / 'clade.db'}"
        line = refused(cli("restore", str(forged), "--data-dir", str(data_dir), "--database-url", url))
        assert line.startswith("error: ") and re.search(message, line), (case, line)
        assert list(outside.iterdir()) == [], case
        assert not (data_dir / "archive.git").exists(), case
        assert not (data_dir / "clade.db").exists() or agent_ids(url) == set(), case
    # A refused restore leaves its target fit for the real backup.
    data_dir = tmp_path / f"target-{len(cases) - 1}"
    url = f"sqlite:///{data_dir / 'clade.db'}"
    assert cli("restore", str(backup_file), "--data-dir", str(data_dir), "--database-url", url).exit_code == 0
    assert agent_refs(data_dir) == agent_ids(url) and len(agent_ids(url)) == 4
