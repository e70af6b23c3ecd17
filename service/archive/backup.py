"""Backups of a whole archive (git objects and database rows) in one file, and their restore.

A backup is a plain tar: `manifest.json` first (format version, Alembic revision, row counts,
a SHA-256 for every other member), then one gzipped JSON-lines file per table, then one git
pack. The archive writes git objects, then rows, then refs; a backup reads in the opposite
order: the database snapshot first (SQLite `VACUUM INTO`, PostgreSQL one REPEATABLE READ
transaction), then a pack of every ref *and* every snapshot row's commit, so no row of the
backup lacks its commit, whatever the service writes meanwhile. Rows are written as portable
JSON (times in UTC ISO form), so a SQLite backup restores into PostgreSQL and back.

A restore checks the whole file (every digest, the pack's objects, every row's commit) and
that both targets are empty before it writes anything; then it writes in the archive's own
order: objects, rows (one transaction, schema at the backup's revision), refs.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import shutil
import sqlite3
import stat
import subprocess
import tarfile
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from pydantic import AfterValidator, BaseModel, StringConstraints, ValidationError
from sqlalchemy import Connection, MetaData, Table, create_engine, func, inspect, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import (
    ArgumentError,
    DataError,
    DBAPIError,
    IntegrityError,
    InterfaceError,
    ProgrammingError,
    StatementError,
)
from sqlalchemy.types import JSON, DateTime

from contracts.errors import ArchiveError
from service.archive import consistency
from service.archive.git_store import AGENT_REF_PREFIX, GitStore
from service.db.engine import make_engine, make_session_factory
from service.db.migrate import alembic_config, upgrade
from service.db.models import Base, as_utc

FORMAT: Literal["clade-backup"] = "clade-backup"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
PACK = "archive.pack"
VERSION_TABLE = "alembic_version"
BATCH = 500
CHUNK = 1024 * 1024
# A row of a backup is one JSON line; the service never writes one near this, and a longer one
# (a gzip bomb, a damaged file) is refused before it is held in memory whole.
MAX_ROW_BYTES = 64 * 1024 * 1024
COMMIT = re.compile(r"[0-9a-f]{40}")
# What a database says of a row it will not take (a missing value, a wrong type, a duplicate),
# as against a connection or server failure.
ROW_ERRORS = (IntegrityError, DataError, ProgrammingError, InterfaceError)


class BackupError(ArchiveError, ValueError):
    """A backup that cannot be made or restored: the message says why and what to do."""


DATABASE_OPTION = "--database-url / CLADE_DATABASE_URL"


def check_database_url(database_url: str) -> None:
    """A BackupError naming the option unless `database_url` is a database URL whose dialect and
    driver this Clade has. (The URL is shown without its password, or not at all if it does not
    read: it may hold one.)"""
    try:
        url = make_url(database_url)
    except ArgumentError as exc:
        raise BackupError(
            f"{DATABASE_OPTION}: not a database URL (sqlite:///PATH or postgresql+psycopg://USER@HOST/NAME)"
        ) from exc
    shown = url.render_as_string(hide_password=True)
    try:
        url.get_dialect().import_dbapi()
    except ArgumentError as exc:  # NoSuchModuleError: no such dialect or driver
        raise BackupError(f"{DATABASE_OPTION}: {shown}: {exc}") from exc
    except ImportError as exc:
        raise BackupError(f"{DATABASE_OPTION}: {shown}: its driver is not installed ({exc})") from exc


@contextmanager
def _database_errors(database_url: str) -> Iterator[None]:
    """The database's own errors (cannot connect, not a database, a row it refuses) as one
    BackupError naming it and the option."""
    check_database_url(database_url)
    shown = make_url(database_url).render_as_string(hide_password=True)
    try:
        yield
    except DBAPIError as exc:
        cause = str(exc.orig).strip().splitlines()[0] if str(exc.orig).strip() else type(exc.orig).__name__
        raise BackupError(f"the database {shown}: {cause} (check {DATABASE_OPTION})") from exc
    except sqlite3.Error as exc:
        raise BackupError(f"the database {shown}: {exc} (check {DATABASE_OPTION})") from exc


class Member(BaseModel):
    sha256: str
    size: int


def _each_once(names: list[str]) -> list[str]:
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"tables listed twice: {', '.join(twice)}")
    return names


# A table's name becomes a file name inside the backup and on disk: never a path.
TableName = Annotated[str, StringConstraints(pattern=r"^[a-z_][a-z0-9_]{0,62}$")]


class BackupManifest(BaseModel):
    """What a backup holds; versioned so that a later Clade can read an earlier backup."""

    format: Literal["clade-backup"] = FORMAT
    format_version: int = FORMAT_VERSION
    created_at: datetime
    alembic_revision: str
    source_database: str  # the dialect backed up: "sqlite" or "postgresql"
    tables: Annotated[list[TableName], AfterValidator(_each_once)]  # in load order (foreign keys point back)
    counts: dict[str, int]
    refs: int
    head: str | None  # the archive's HEAD (a symbolic ref), so `git clone` checks the same out
    members: dict[str, Member]


class RestoreReport(BaseModel):
    manifest: BackupManifest
    consistency: consistency.ConsistencyReport


# -- backup --------------------------------------------------------------------------


def create_backup(*, data_dir: Path, database_url: str, out: Path) -> BackupManifest:
    """Write a backup of the archive at `data_dir` / `database_url` to `out`, atomically: through
    a temporary file beside it, renamed at the end. `out` is a new file in an existing folder, or
    an earlier backup, which is replaced; anything else (a folder, a device, a FIFO, another
    file, a missing folder) is refused before anything is read."""
    archive = data_dir.absolute() / "archive.git"
    check_backup_target(out)
    if not (archive / "HEAD").exists():
        raise BackupError(f"no archive at {archive}: check CLADE_DATA_DIR")
    with _database_errors(database_url):
        try:
            return _write_backup(archive, database_url, out)
        except OSError as exc:
            raise BackupError(
                f"{out}: cannot be written ({exc.strerror or exc}); nothing was written"
            ) from exc


def check_backup_target(out: Path) -> None:
    """A BackupError `<out>: ...` unless `out` is a new file in an existing folder, or a regular
    file holding a Clade backup (which a new backup replaces)."""
    try:
        mode: int | None = os.lstat(out).st_mode
    except FileNotFoundError:
        mode = None
    except NotADirectoryError as exc:
        raise BackupError(f"{out}: a part of the path is a file, not a folder") from exc
    except OSError as exc:
        raise BackupError(f"{out}: cannot be written ({exc.strerror or exc})") from exc
    if mode is None:
        folder = out.parent
        if not folder.is_dir():
            problem = f"no such folder {folder}" if not folder.exists() else f"{folder} is not a folder"
            raise BackupError(f"{out}: {problem} (a backup's folder is not made for it)")
        return
    if stat.S_ISDIR(mode):
        raise BackupError(f"{out}: is a directory; give a file name")
    if stat.S_ISLNK(mode):
        raise BackupError(f"{out}: is a symbolic link; give a new file name, or the backup it points to")
    if not stat.S_ISREG(mode):
        raise BackupError(f"{out}: not a regular file (a FIFO, device or socket is never replaced)")
    try:
        read_manifest(out)
    except BackupError as exc:
        raise BackupError(
            f"{out}: exists and is not a Clade backup, so it is not replaced; give a new file name"
        ) from exc
    except OSError as exc:
        raise BackupError(f"{out}: cannot be read ({exc.strerror or exc})") from exc


def _write_backup(archive: Path, database_url: str, out: Path) -> BackupManifest:
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".clade-backup-") as scratch_name:
        scratch = Path(scratch_name)
        members: dict[str, Path] = {}
        with _snapshot(database_url, scratch) as connection:
            revision, tables, counts, agent_ids = _dump_tables(connection, scratch, members)
        head, refs = _dump_git(archive, agent_ids, scratch / PACK)
        members[PACK] = scratch / PACK
        manifest = BackupManifest(
            created_at=datetime.now(UTC),
            alembic_revision=revision,
            source_database=make_url(database_url).get_backend_name(),
            tables=tables,
            counts=counts,
            refs=refs,
            head=head,
            members={name: _digest(path) for name, path in members.items()},
        )
        partial = scratch / "backup.tar"
        with tarfile.open(partial, "w") as tar:
            body = manifest.model_dump_json(indent=2).encode()
            info = tarfile.TarInfo(MANIFEST)
            info.size, info.mtime = len(body), int(manifest.created_at.timestamp())
            tar.addfile(info, io.BytesIO(body))
            for name, path in members.items():
                # Built by hand: no owner names or modes of this machine in the file.
                info = tarfile.TarInfo(name)
                info.size, info.mtime = path.stat().st_size, int(manifest.created_at.timestamp())
                with path.open("rb") as handle:
                    tar.addfile(info, handle)
        check_backup_target(out)  # again: something may have been put there meanwhile
        os.replace(partial, out)
    return manifest


@contextmanager
def _snapshot(database_url: str, scratch: Path) -> Iterator[Connection]:
    """A connection that sees one moment of the database for as long as it is open."""
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        source = url.database
        if not source or not Path(source).exists():
            raise BackupError(f"no database at {source}: check CLADE_DATA_DIR / CLADE_DATABASE_URL")
        copy = scratch / "snapshot.db"
        # VACUUM INTO reads in one transaction: a consistent copy while the service writes (WAL).
        with sqlite3.connect(source, timeout=60) as conn:
            conn.execute("VACUUM INTO ?", (str(copy),))
        conn.close()
        engine = create_engine(f"sqlite:///{copy}")
        try:
            with engine.connect() as connection:
                yield connection
        finally:
            engine.dispose()
        return
    engine = create_engine(database_url)
    try:
        with engine.connect().execution_options(isolation_level="REPEATABLE READ") as connection:
            connection.execute(text("SET TRANSACTION READ ONLY"))
            yield connection
    finally:
        engine.dispose()


def _dump_tables(
    connection: Connection, scratch: Path, members: dict[str, Path]
) -> tuple[str, list[str], dict[str, int], list[str]]:
    metadata = MetaData()
    metadata.reflect(connection)
    if VERSION_TABLE not in metadata.tables:
        raise BackupError("the database has no schema: start the service once, or run `clade db upgrade`")
    revision = connection.execute(select(metadata.tables[VERSION_TABLE].c.version_num)).scalar_one()
    tables = [t for t in metadata.sorted_tables if t.name != VERSION_TABLE]
    counts: dict[str, int] = {}
    agent_ids: list[str] = []
    for table in tables:
        name = f"database/{table.name}.jsonl.gz"
        path = scratch / name
        path.parent.mkdir(exist_ok=True)
        count = 0
        # mtime=0: the same rows make the same bytes.
        with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
            for row in _rows_in_load_order(connection, table):
                out.write(json.dumps(row, default=_encode, ensure_ascii=False).encode() + b"\n")
                count += 1
                if table.name == "agents":
                    agent_ids.append(str(row["id"]))
        counts[table.name] = count
        members[name] = path
    return str(revision), [t.name for t in tables], counts, agent_ids


def _rows_in_load_order(connection: Connection, table: Table) -> Iterator[dict[str, Any]]:
    """The table's rows by primary key; a table that points at itself (agents' parents) parent first."""
    query = select(table).order_by(*table.primary_key.columns)
    self_refs = [fk.parent.name for fk in table.foreign_keys if fk.column.table.name == table.name]
    if not self_refs:
        # In batches from a server-side cursor: a large table is never whole in memory.
        for mapping in connection.execute(query.execution_options(yield_per=1000)).mappings():
            yield dict(mapping)
        return
    key = table.primary_key.columns.values()[0].name
    if "created_at" in table.columns:
        query = select(table).order_by(table.c.created_at, *table.primary_key.columns)
    rows = [dict(mapping) for mapping in connection.execute(query).mappings()]
    # In order of creation (as the service inserted them), a row held back only until its parent is out.
    ids = {row[key] for row in rows}
    emitted: set[Any] = set()
    waiting: dict[Any, list[dict[str, Any]]] = {}
    for row in rows:
        parent = next((row[c] for c in self_refs if row[c] is not None and row[c] in ids), None)
        if parent is not None and parent not in emitted:
            waiting.setdefault(parent, []).append(row)
            continue
        ready = [row]
        while ready:
            current = ready.pop(0)
            yield current
            emitted.add(current[key])
            ready.extend(waiting.pop(current[key], []))


def _encode(value: object) -> str:
    if isinstance(value, datetime):
        return as_utc(value).isoformat()
    raise TypeError(f"cannot write a {type(value).__name__} into a backup")


def _dump_git(archive: Path, agent_ids: list[str], pack: Path) -> tuple[str | None, int]:
    """A pack of every ref and every snapshot agent's commit (a row's ref may come after it)."""
    refs = _git(archive, ["for-each-ref", "--format=%(refname)"]).split()
    head_target = subprocess.run(
        ["git", f"--git-dir={archive}", "symbolic-ref", "-q", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    with pack.open("wb") as out:
        process = subprocess.run(
            ["git", f"--git-dir={archive}", "pack-objects", "--all", "--stdout", "--quiet"],
            input="".join(f"{sha}\n" for sha in agent_ids).encode(),
            stdout=out,
            stderr=subprocess.PIPE,
        )
    if process.returncode != 0:
        message = process.stderr.decode(errors="replace").strip()
        raise BackupError(f"git could not pack the archive {archive}: {message}")
    return head_target or None, len(refs)


def _digest(path: Path) -> Member:
    sha = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            sha.update(chunk)
    return Member(sha256=sha.hexdigest(), size=path.stat().st_size)


def _git(git_dir: Path, args: list[str], stdin: bytes | None = None) -> str:
    process = subprocess.run(["git", f"--git-dir={git_dir}", *args], input=stdin, capture_output=True)
    if process.returncode != 0:
        message = process.stderr.decode(errors="replace").strip()
        raise BackupError(f"git {args[0]} failed in {git_dir}: {message}")
    return process.stdout.decode()


# -- restore -------------------------------------------------------------------------


def read_manifest(backup: Path) -> BackupManifest:
    """The backup's manifest, or a BackupError saying the file is not a readable backup."""
    try:
        with tarfile.open(backup, "r:") as tar:
            return _manifest_of(tar, backup)
    except (tarfile.TarError, EOFError) as exc:
        raise BackupError(f"{backup} is damaged, truncated or not a Clade backup: {exc}") from exc


def _manifest_of(tar: tarfile.TarFile, backup: Path) -> BackupManifest:
    handle = tar.extractfile(MANIFEST) if MANIFEST in tar.getnames() else None
    if handle is None:
        raise BackupError(f"{backup} is not a Clade backup: it has no {MANIFEST}")
    try:
        raw = json.loads(handle.read())
    except ValueError as exc:
        raise BackupError(f"{backup} is damaged: its manifest is not JSON ({exc})") from exc
    if (
        isinstance(raw, dict)
        and raw.get("format") == FORMAT
        and raw.get("format_version", 0) > FORMAT_VERSION
    ):
        raise BackupError(
            f"{backup} has format version {raw['format_version']}; this Clade reads up to {FORMAT_VERSION}:"
            " restore it with a newer Clade"
        )
    try:
        return BackupManifest.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'manifest'}: {error['msg']}"
            for error in exc.errors(include_url=False)[:3]
        )
        raise BackupError(f"{backup} is not a Clade backup: its manifest does not fit ({problems})") from exc


def restore_backup(*, backup: Path, data_dir: Path, database_url: str) -> RestoreReport:
    """Restore `backup` into an empty data dir and an empty database; nothing is written unless
    the whole file checks out and both targets are empty.

    The git archive is made whole (objects, refs, HEAD) in a folder of its own beside its place,
    the rows are loaded in one transaction, and the archive is moved into its place just before
    that transaction commits: a failure at any step leaves the targets as they were (at most the
    database's schema, which counts as empty, so the same restore can be tried again)."""
    data_dir = data_dir.absolute()
    archive = data_dir / "archive.git"
    with _database_errors(database_url):
        _require_empty_archive(archive)
        _require_empty_database(database_url)
        with tempfile.TemporaryDirectory(prefix=".clade-restore-") as scratch_name:
            scratch = Path(scratch_name)
            try:
                manifest = _unpack_checked(backup, scratch)
                _require_known_revision(manifest.alembic_revision, database_url)
                agent_ids = _agent_ids(scratch)
                pack_files = _checked_pack(scratch, agent_ids, backup)
            except OSError as exc:  # the backup unreadable, or no room to unpack it in TMPDIR
                where = exc.filename or backup
                raise BackupError(
                    f"cannot check the backup: {where}: {exc.strerror or exc}; nothing was restored"
                ) from exc
            try:
                data_dir.mkdir(parents=True, exist_ok=True)
                staging = Path(tempfile.mkdtemp(dir=data_dir, prefix=".clade-restore-"))
            except OSError as exc:
                raise BackupError(
                    f"cannot write into the data dir {data_dir}: {exc.strerror or exc}"
                ) from exc
            try:
                staged = staging / "archive.git"
                _stage_archive(staged, pack_files, agent_ids, manifest.head)
                # The archive's own order: objects (with their refs, not yet in place), then rows.
                _load_rows(database_url, manifest, scratch, before_commit=lambda: _swap_in(staged, archive))
            except OSError as exc:  # a full disk, a folder that cannot be written
                raise BackupError(
                    f"cannot restore into {data_dir}: {exc.strerror or exc}; nothing was restored"
                ) from exc
            finally:
                shutil.rmtree(staging, ignore_errors=True)
        engine = make_engine(database_url)
        try:
            git = GitStore(archive, data_dir / "tmp")
            report = consistency.check(git, make_session_factory(engine), repair=False)
        finally:
            engine.dispose()
    return RestoreReport(manifest=manifest, consistency=report)


def _stage_archive(staged: Path, pack_files: list[Path], agent_ids: list[str], head: str | None) -> None:
    """The restored git archive, whole, at `staged`: a bare repository with the pack, a ref per
    agent and the backup's HEAD."""
    GitStore(staged, staged.parent / "tmp")  # initialises it as the service does
    pack_dir = staged / "objects" / "pack"
    pack_dir.mkdir(parents=True, exist_ok=True)
    for path in pack_files:
        shutil.copyfile(path, pack_dir / path.name)
    lines = "".join(f"create {AGENT_REF_PREFIX}{sha} {sha}\n" for sha in agent_ids)
    _git(staged, ["update-ref", "--stdin"], stdin=lines.encode())
    if head and head.removeprefix(AGENT_REF_PREFIX) in set(agent_ids):
        _git(staged, ["symbolic-ref", "HEAD", head])


def _swap_in(staged: Path, archive: Path) -> Callable[[], None]:
    """Move the staged archive to `archive` (an empty archive there is moved aside, into the
    staging folder); the function that undoes it, should the rows not commit."""
    aside = staged.parent / "replaced.git"
    if archive.exists():
        os.rename(archive, aside)
    try:
        os.rename(staged, archive)
    except OSError:
        if aside.exists():
            os.rename(aside, archive)
        raise

    def undo() -> None:
        os.rename(archive, staged)
        if aside.exists():
            os.rename(aside, archive)

    return undo


def _require_empty_archive(archive: Path) -> None:
    if not (archive / "HEAD").exists():
        if archive.exists() and any(archive.iterdir()):
            raise BackupError(f"refusing to restore: {archive} exists and is not a git archive; move it away")
        return
    refs = _git(archive, ["for-each-ref", "--format=%(refname)"]).split()
    objects = _git(archive, ["count-objects", "-v"])
    stored = sum(
        int(line.split(":")[1]) for line in objects.splitlines() if line.startswith(("count:", "in-pack:"))
    )
    if refs or stored:
        raise BackupError(
            f"refusing to restore: the archive {archive} is not empty ({len(refs)} refs, {stored} objects);"
            " restore into a new data dir (CLADE_DATA_DIR / --data-dir)"
        )


def _require_empty_database(database_url: str) -> None:
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite" and (not url.database or not Path(url.database).exists()):
        return
    engine = create_engine(database_url)
    try:
        with engine.connect() as connection:
            names = [n for n in inspect(connection).get_table_names() if n != VERSION_TABLE]
            filled = [
                n for n in names if connection.execute(text(f'SELECT EXISTS (SELECT 1 FROM "{n}")')).scalar()
            ]
    finally:
        engine.dispose()
    if filled:
        shown = url.render_as_string(hide_password=True)
        raise BackupError(
            f"refusing to restore: the database {shown} is not empty (rows in {', '.join(sorted(filled))});"
            " restore into a new database (CLADE_DATABASE_URL / --database-url)"
        )


def _unpack_checked(backup: Path, scratch: Path) -> BackupManifest:
    """Every member of the manifest, unpacked into `scratch` and checked against its digest."""
    if not backup.is_file():
        raise BackupError(f"{backup}: no such file")
    try:
        with tarfile.open(backup, "r:") as tar:
            manifest = _manifest_of(tar, backup)
            expected = {f"database/{t}.jsonl.gz" for t in manifest.tables} | {PACK}
            if set(manifest.members) != expected:
                raise BackupError(f"{backup} is damaged: its manifest lists other files than its tables")
            for name, member in manifest.members.items():
                if name not in tar.getnames():
                    raise BackupError(f"{backup} is damaged or truncated: {name} is missing")
                if not tar.getmember(name).isfile():
                    raise BackupError(f"{backup} is damaged: {name} is not a regular file")
                source = tar.extractfile(name)
                assert source is not None  # a regular file's member always reads
                target = scratch / name
                target.parent.mkdir(parents=True, exist_ok=True)
                with target.open("wb") as out:
                    shutil.copyfileobj(source, out, CHUNK)
                if _digest(target) != member:
                    raise BackupError(f"{backup} is damaged: {name} does not match its checksum")
    except (tarfile.TarError, EOFError) as exc:
        raise BackupError(f"{backup} is damaged, truncated or not a Clade backup: {exc}") from exc
    return manifest


def _require_known_revision(revision: str, database_url: str) -> None:
    scripts = ScriptDirectory.from_config(alembic_config(database_url))
    try:
        known = scripts.get_revision(revision) is not None
    except CommandError:
        known = False
    if not known:
        raise BackupError(
            f"the backup's database is at revision {revision}, which this Clade does not know:"
            " restore it with the Clade version that made it (or a newer one)"
        )


def _agent_ids(scratch: Path) -> list[str]:
    path = scratch / "database" / "agents.jsonl.gz"
    if not path.exists():
        return []
    ids = []
    for number, row in enumerate(_read_rows(path), start=1):
        agent_id = row.get("id")
        if not isinstance(agent_id, str) or not COMMIT.fullmatch(agent_id):
            raise BackupError(f"the backup's agents row {number}: id {agent_id!r} is not a commit id")
        ids.append(agent_id)
    return ids


def _read_rows(path: Path) -> Iterator[dict[str, Any]]:
    """The rows of one table's member, each a JSON object on a line of its own."""
    where = f"the backup's {path.name}"
    try:
        with gzip.open(path, "rb") as lines:
            number = 0
            while line := lines.readline(MAX_ROW_BYTES + 1):
                number += 1
                if len(line) > MAX_ROW_BYTES:
                    raise BackupError(f"{where}, row {number}: longer than {MAX_ROW_BYTES:,} bytes")
                try:
                    row = json.loads(line)
                except ValueError as exc:
                    raise BackupError(f"{where}, row {number}: not JSON ({exc})") from exc
                if not isinstance(row, dict):
                    raise BackupError(f"{where}, row {number}: not a row (a JSON object)")
                yield row
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise BackupError(f"{where} is damaged: not a whole gzip file ({exc})") from exc


def _checked_pack(scratch: Path, agent_ids: list[str], backup: Path) -> list[Path]:
    """Index the pack in a scratch repository (which checks every object) and make sure every
    agent row's commit is in it; the pack and its index, ready to copy."""
    repo = scratch / "check.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(repo)], check=True)
    with (scratch / PACK).open("rb") as pack:
        process = subprocess.run(
            ["git", f"--git-dir={repo}", "index-pack", "--stdin"], stdin=pack, capture_output=True
        )
    if process.returncode != 0:
        message = process.stderr.decode(errors="replace").strip()
        raise BackupError(f"{backup} is damaged: its git pack does not read ({message})")
    if agent_ids:
        listing = _git(
            repo, ["cat-file", "--batch-check"], stdin="".join(f"{s}\n" for s in agent_ids).encode()
        )
        missing = [line.split()[0] for line in listing.splitlines() if line.endswith(" missing")]
        if missing:
            raise BackupError(
                f"{backup} is damaged: {len(missing)} agents' commits are missing, e.g. {missing[0]}"
            )
    return sorted((repo / "objects" / "pack").glob("pack-*"))


def _load_rows(
    database_url: str,
    manifest: BackupManifest,
    scratch: Path,
    before_commit: Callable[[], Callable[[], None]],
) -> None:
    """The rows, in one transaction; `before_commit` runs last inside it, and what it returns is
    called if the transaction then fails to commit."""
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite" and url.database:
        try:
            Path(url.database).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BackupError(
                f"cannot make the folder of the database {url.database}: {exc.strerror or exc}"
            ) from exc
    try:
        upgrade(database_url, manifest.alembic_revision)
    except CommandError as exc:
        raise BackupError(f"cannot bring the database to the backup's revision: {exc}") from exc
    engine = make_engine(database_url)
    undo: Callable[[], None] | None = None
    try:
        with engine.begin() as connection:
            metadata = MetaData()
            metadata.reflect(connection)
            for name in manifest.tables:
                if name not in metadata.tables:
                    raise BackupError(
                        f"the database at revision {manifest.alembic_revision} has no table {name}"
                    )
            # A backup holds every table of its revision; one that lacks some is not whole. (Only
            # Clade's own tables: a database may hold others, which a backup never speaks for.)
            lacking = sorted(set(metadata.tables) & set(Base.metadata.tables) - set(manifest.tables))
            if lacking:
                raise BackupError(f"the backup lacks the tables {', '.join(lacking)} of its revision")
            for name in manifest.tables:
                table = metadata.tables[name]
                loaded = _insert(connection, table, _read_rows(scratch / "database" / f"{name}.jsonl.gz"))
                if loaded != manifest.counts.get(name):
                    raise BackupError(f"the backup's {name} holds {loaded} rows, its manifest says otherwise")
            if connection.dialect.name == "postgresql":
                _advance_sequences(connection, [metadata.tables[n] for n in manifest.tables])
            undo = before_commit()
    except BaseException:
        if undo is not None:  # in place, but the rows did not commit: out of its place again
            undo()
        raise
    finally:
        engine.dispose()


def _insert(connection: Connection, table: Table, rows: Iterable[dict[str, Any]]) -> int:
    times = {c.name for c in table.columns if isinstance(c.type, DateTime)}
    for column in table.columns:
        if isinstance(column.type, JSON):
            column.type.none_as_null = True  # SQL NULL, as the service leaves an unset document
    known = set(table.columns.keys())
    batch: list[dict[str, Any]] = []
    count = 0
    for row in rows:
        count += 1
        unknown = set(row) - known
        if unknown:
            raise BackupError(f"the backup's {table.name} has columns the database lacks: {sorted(unknown)}")
        for name in times & row.keys():
            if row[name] is not None:
                row[name] = _time(row[name], f"the backup's {table.name} row {count}, {name}")
        batch.append(row)
        if len(batch) >= BATCH:
            _insert_batch(connection, table, batch, first=count - len(batch) + 1)
            batch = []
    if batch:
        _insert_batch(connection, table, batch, first=count - len(batch) + 1)
    return count


def _time(value: object, where: str) -> datetime:
    if not isinstance(value, str):
        raise BackupError(f"{where}: a time must be ISO text, got {type(value).__name__}")
    try:
        return as_utc(datetime.fromisoformat(value))
    except ValueError as exc:
        raise BackupError(f"{where}: {exc}") from exc


def _insert_batch(connection: Connection, table: Table, batch: list[dict[str, Any]], *, first: int) -> None:
    """Insert rows `first`.. of `table`; a row the schema refuses is the backup's fault, named so.
    (The database's own failures, such as a lost connection, go on to `_database_errors`.)"""
    try:
        connection.execute(table.insert(), batch)
    except StatementError as exc:
        if isinstance(exc, DBAPIError) and not isinstance(exc, ROW_ERRORS):
            raise
        cause = str(exc.orig if exc.orig is not None else exc).strip().splitlines()
        rows = f"row {first} does" if len(batch) == 1 else f"rows {first}-{first + len(batch) - 1} do"
        raise BackupError(
            f"the backup's {table.name} {rows} not fit the database: "
            f"{cause[0] if cause else type(exc).__name__}"
        ) from exc


def _advance_sequences(connection: Connection, tables: list[Table]) -> None:
    """Rows came with their ids: each serial column's sequence continues after the largest."""
    for table in tables:
        for column in table.primary_key.columns:
            sequence = connection.execute(
                select(func.pg_get_serial_sequence(table.name, column.name))
            ).scalar_one_or_none()
            if sequence is None:
                continue
            largest = connection.execute(select(func.max(column))).scalar()
            connection.execute(select(func.setval(sequence, largest or 1, largest is not None)))
