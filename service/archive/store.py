"""Writes to the archive, keeping git and the database in agreement.

Order of every write: git objects first, then the database rows in one
transaction, then the agent's ref. A crash before the transaction commits
leaves only unreachable git objects (no agent); a crash after it leaves a row
whose ref `consistency.check` recreates at the next start.

A full disk (or quota) anywhere in a write raises StorageFullError (HTTP 507) with the same
guarantee: before the transaction nothing is recorded; should the ref alone fail after it,
the retried request writes it (every idempotent path makes sure the ref exists).
"""

from __future__ import annotations

import functools
import re
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Concatenate, ParamSpec, TypeVar

from pydantic import ValidationError
from sqlalchemy.orm import Session, sessionmaker

from contracts.errors import ConflictError, InvalidAgentError, NotFoundError, PatchError
from contracts.events import ChildCreated, SeedImported
from contracts.manifest import MANIFEST_FILE, AgentManifest, meta_changed, parse_manifest
from contracts.records import UsageRecord
from service import events, leases, lifecycle
from service.archive.git_store import GitStore
from service.archive.limits import AgentLimits, TooLargeError, limit_text
from service.archive.storage import full_disk_refused
from service.archive.tarballs import extract_tar
from service.db.locks import locked
from service.db.models import Agent, Run, RunAgent, Step
from service.results import record_usage
from service.worker_tokens import WorkerIdentity


class PatchTooLargeError(PatchError, TooLargeError):
    pass


P = ParamSpec("P")
R = TypeVar("R")


def refuses_full_disk(method: Callable[Concatenate[Archive, P], R]) -> Callable[Concatenate[Archive, P], R]:
    """A full disk met anywhere in the write is StorageFullError, naming the archive's folder."""

    @functools.wraps(method)
    def guarded(self: Archive, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with full_disk_refused(self.git.path.parent):
            return method(self, *args, **kwargs)

    return guarded


class Archive:
    def __init__(
        self,
        *,
        git: GitStore,
        sessions: sessionmaker[Session],
        max_patch_bytes: int,
        limits: AgentLimits | None = None,
    ) -> None:
        self.git = git
        self.sessions = sessions
        self.max_patch_bytes = max_patch_bytes
        self.limits = limits or AgentLimits.defaults()

    # -- seeds -------------------------------------------------------------------

    @refuses_full_disk
    def import_seed_folder(self, folder: Path, *, name: str | None = None) -> tuple[Agent, bool]:
        """Import a folder as a seed (a root commit): (the agent, whether it is new).

        The id is a function of the code alone; the name is metadata. Importing code the
        archive holds already returns that agent unchanged: it keeps the name it came with first.
        """
        manifest_path = folder / MANIFEST_FILE
        manifest = parse_manifest(manifest_path.read_bytes() if manifest_path.is_file() else None)
        label = name or manifest.name
        sha = self.git.commit_folder(folder)
        with self.sessions.begin() as session:
            agent = session.get(Agent, sha)
            created = agent is None
            if agent is None:
                agent = Agent(
                    id=sha,
                    parent_id=None,
                    kind="seed",
                    name=label,
                    tree_id=self.git.tree_of(sha),
                    manifest=manifest.model_dump(),
                )
                session.add(agent)
                events.emit(session, SeedImported(agent_id=sha, name=label), run_id=None)
        self.git.ensure_agent_ref(sha)
        self.git.point_head_at(sha)
        return agent, created

    @refuses_full_disk
    def import_seed_tar(self, source: bytes | IO[bytes], *, name: str | None = None) -> tuple[Agent, bool]:
        """Unpack a tar (within the limits) into the data dir's scratch space and import it."""
        self.git.tmp_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="clade-seed-", dir=self.git.tmp_dir) as tmp:
            root = Path(tmp)
            extract_tar(source, root, self.limits)
            return self.import_seed_folder(root, name=name)

    # -- children ----------------------------------------------------------------

    @refuses_full_disk
    def create_child(
        self,
        *,
        step_id: str,
        patch: str,
        diagnosis: str | None = None,
        rejection: str | None = None,
        usage: list[UsageRecord] | None = None,
        worker: WorkerIdentity | None = None,
        still_sent: Callable[[Step], None] | None = None,
    ) -> Agent:
        """The child of a step: idempotent by step id, refused whole if the patch is bad. `worker`
        is who submitted it, recorded on the step. `still_sent` raises unless the step is still the
        job the submitter was sent: checked on the locked step before the child is recorded, since
        the step may be re-dispatched while its patch is committed."""
        size = len(patch.encode())
        if size > self.max_patch_bytes:
            limit = limit_text("max_patch_bytes", self.max_patch_bytes)
            raise PatchTooLargeError(f"patch is {size} bytes; {limit}")
        with self.sessions() as session:
            step = _get_step(session, step_id)
            if step.child_id is not None:
                return self._delivered_again(session, step.child_id)
            if not lifecycle.step_takes_child.allows(step):
                raise ConflictError(f"step {step_id} is {step.status}; it takes no child")
            parent_id, second_id = step.parent_id, step.second_parent_id
            message = _message(step)
            parent_manifest = _get_agent(session, parent_id).manifest
        sha, tree = self.git.commit_patch(parent_id, patch, message, self.limits, second_parent=second_id)
        manifest = self._manifest_of(sha)
        meta = self._meta_changed(parent_manifest, manifest, parent_id, sha)
        with self.sessions.begin() as session:
            step = _get_step(session, step_id, lock=True)
            if still_sent is not None:
                still_sent(step)
            if step.child_id is not None:  # a concurrent delivery of the same step won
                return self._delivered_again(session, step.child_id)
            agent = attach_child(
                session,
                step,
                sha=sha,
                tree=tree,
                manifest=manifest,
                rejection=rejection,
                diagnosis=diagnosis,
                usage=usage,
                meta_changed=meta,
                files=changed_files(patch),
                worker=worker,
            )
        self.git.set_agent_ref(sha)
        return agent

    @refuses_full_disk
    def merge_child(self, session: Session, step: Step) -> Agent:
        """The child of a crossover step, a merge commit of its two parents, made in the service
        (no improver is needed for a clean merge). Git objects are written now, the rows in the
        caller's transaction; the caller writes the ref once it commits (`git.set_agent_ref`).
        Raises MergeConflictError naming the paths, or PatchError/TooLargeError, writing nothing."""
        assert step.second_parent_id is not None, "a crossover step has two parents"
        sha, tree = self.git.merge_commit(step.parent_id, step.second_parent_id, _message(step), self.limits)
        manifest = self._manifest_of(sha)
        parent_manifest = _get_agent(session, step.parent_id).manifest
        meta = self._meta_changed(parent_manifest, manifest, step.parent_id, sha)
        return attach_child(
            session,
            step,
            sha=sha,
            tree=tree,
            manifest=manifest,
            meta_changed=meta,
            files=sorted(self.git.changed_paths(step.parent_id, sha))[:20],
        )

    def _delivered_again(self, session: Session, child_id: str) -> Agent:
        agent = _get_agent(session, child_id)
        self.git.ensure_agent_ref(child_id)  # the first delivery may have stopped short of it
        return agent

    def _meta_changed(
        self, parent: dict[str, object], child: dict[str, object], parent_id: str, sha: str
    ) -> bool | None:
        """Whether the child changed its parent's improvement procedure (None: the parent has none)."""
        if not parent.get("improve"):
            return None
        try:
            parent_manifest = AgentManifest.model_validate(parent)
        except ValidationError:
            return None  # stored before its fields were checked: no meta part to speak of
        try:
            child_manifest: AgentManifest | None = AgentManifest.model_validate(child)
        except ValidationError:
            child_manifest = None
        return meta_changed(parent_manifest, child_manifest, self.git.changed_paths(parent_id, sha))

    def _manifest_of(self, sha: str) -> dict[str, object]:
        # A child with a broken manifest is still archived; admission rejects it with this reason.
        try:
            return parse_manifest(self.git.read_file(sha, MANIFEST_FILE)).model_dump()
        except InvalidAgentError as exc:
            return {"error": str(exc)}


def _message(step: Step) -> str:
    made = f"child of {step.parent_id[:12]}"
    if step.second_parent_id is not None:
        made = f"crossover of {step.parent_id[:12]} and {step.second_parent_id[:12]}"
    return f"{made}\n\nClade-Run: {step.run_id}\nClade-Step: {step.id} (#{step.number})\n"


def attach_child(
    session: Session,
    step: Step,
    *,
    sha: str,
    tree: str,
    manifest: dict[str, object],
    rejection: str | None = None,
    diagnosis: str | None = None,
    usage: list[UsageRecord] | None = None,
    meta_changed: bool | None = None,
    files: list[str] | None = None,
    worker: WorkerIdentity | None = None,
) -> Agent:
    """The rows of a step's child whose commit is in git: the agent, its place in the run (a
    crossover child with both parents, each counting it), the step's new status, its usage."""
    run_id, parent_id, second_id = step.run_id, step.parent_id, step.second_parent_id
    agent = session.get(Agent, sha) or Agent(
        id=sha,
        parent_id=parent_id,
        second_parent_id=second_id,
        kind="child",
        tree_id=tree,
        run_id=run_id,
        step_id=step.id,
        manifest=manifest,
        meta_changed=meta_changed,
    )
    session.add(agent)
    step.child_id = sha
    member = RunAgent(
        run_id=run_id,
        agent_id=sha,
        parent_id=parent_id,
        second_parent_id=second_id,
        step_number=step.number,
        meta_changed=meta_changed,
        group_id=step.group_id,
    )
    run = session.get(Run, run_id)
    if run is not None:  # the epoch it is scored in: its step's (a boundary waits for steps)
        member.epoch = run.epoch
    if rejection:  # archived and shown, never a parent
        lifecycle.reject_step(step)
        lifecycle.join_rejected(member)
        step.reason = member.reason = rejection
        step.finished_at = datetime.now(UTC)
    else:
        lifecycle.step_takes_child(step)
        lifecycle.join_run(member)
    if diagnosis is not None:
        step.diagnosis = diagnosis
    # What it cost to make this child is shown on the child.
    record_usage(session, usage=usage or [], run_id=run_id, step_id=step.id, agent_id=sha)
    leases.settle(session, usage=usage or [], step_id=step.id)
    session.add(member)
    for parent_of in (parent_id, second_id):
        parent = session.get(RunAgent, (run_id, parent_of)) if parent_of is not None else None
        if parent is not None:
            parent.children += 1
    if worker is not None:  # a worker's patch (a clean crossover merge is the service's own)
        worker.sign(step)
    created = ChildCreated(
        agent_id=sha,
        parent_id=parent_id,
        step=step.number,
        rejection=rejection,
        files=files or [],  # for the experience pool of a group run
        second_parent_id=second_id,
        worker=worker.name if worker is not None else None,
    )
    events.emit(session, created, run_id=run_id)
    return agent


def record_child(
    session: Session,
    *,
    step_id: str,
    child_id: str,
    tree_id: str,
    manifest: dict[str, object],
    diagnosis: str | None = None,
    rejection: str | None = None,
    usage: list[UsageRecord] | None = None,
) -> tuple[Agent, bool]:
    """The database half of a step's child whose commit `child_id` exists already, for a caller
    without git (the simulator, `clade sim`, with synthetic ids): (the agent, False) if the step
    had its child already. The caller commits."""
    step = _get_step(session, step_id, lock=True)
    if step.child_id is not None:
        return _get_agent(session, step.child_id), False
    agent = attach_child(
        session,
        step,
        sha=child_id,
        tree=tree_id,
        manifest=manifest,
        rejection=rejection,
        diagnosis=diagnosis,
        usage=usage,
    )
    return agent, True


def changed_files(patch: str, limit: int = 20) -> list[str]:
    """The paths a patch changes (at most `limit`), exactly as named: from the `+++ b/` line of
    each file's header, or `--- a/` for a deleted file, with git's quoting undone (a name with a
    quote, a backslash, a tab or a newline is C-quoted; one with a space ends in a tab). A plain
    unified diff (no `diff --git` lines) counts too. Hunks are skipped by their line counts, so a
    content line that looks like a header is never taken for one."""
    paths: list[str] = []
    removed: str | None = None
    old_left = new_left = 0  # lines of the current hunk still to come
    for line in patch.split("\n"):
        if old_left > 0 or new_left > 0:
            if line.startswith("\\"):  # "\ No newline at end of file"
                continue
            mark = line[:1]
            old_left -= mark in (" ", "-", "")
            new_left -= mark in (" ", "+", "")
            continue
        hunk = _HUNK.match(line)
        if hunk is not None:
            old_left = int(hunk["old"]) if hunk["old"] is not None else 1
            new_left = int(hunk["new"]) if hunk["new"] is not None else 1
        elif line.startswith("diff --git "):
            removed = None
        elif line.startswith("--- "):
            removed = _header_path(line[4:], "a/")
        elif line.startswith("+++ "):
            added = _header_path(line[4:], "b/")
            path = removed if added is None else added
            removed = None
            if path and path not in paths and len(paths) < limit:
                paths.append(path)
    return paths


_HUNK = re.compile(r"^@@ -\d+(?:,(?P<old>\d+))? \+\d+(?:,(?P<new>\d+))? @@")
_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _header_path(field: str, prefix: str) -> str | None:
    """The path of a `---`/`+++` header field; None for /dev/null."""
    if field == "/dev/null":
        return None
    field = field.removesuffix("\t")  # git's mark after a name with a space (a tab is quoted)
    if len(field) >= 2 and field.startswith('"') and field.endswith('"'):
        field = _unquote_c(field[1:-1])
    return field.removeprefix(prefix)


def _unquote_c(quoted: str) -> str:
    """Undo git's C-style quoting of a path: escapes and octal bytes (UTF-8 names)."""
    out = bytearray()
    index = 0
    while index < len(quoted):
        char = quoted[index]
        if char != "\\" or index + 1 == len(quoted):
            out += char.encode()
            index += 1
            continue
        following = quoted[index + 1]
        octal = quoted[index + 1 : index + 4]
        if len(octal) == 3 and all(c in "01234567" for c in octal):
            out.append(int(octal, 8) & 0xFF)
            index += 4
        else:
            out.append(_C_ESCAPES.get(following, ord(following) if following.isascii() else 92))
            index += 2
    return out.decode("utf-8", errors="replace")


def _get_step(session: Session, step_id: str, lock: bool = False) -> Step:
    # locked: SQLite ignores FOR UPDATE, so a child and a rejection of one step sent at once
    # would each read the step open (service/db/locks.py).
    step = locked(session, Step, step_id) if lock else session.get(Step, step_id)
    if step is None:
        raise NotFoundError(f"step {step_id} not found")
    return step


def _get_agent(session: Session, agent_id: str) -> Agent:
    agent = session.get(Agent, agent_id)
    if agent is None:
        raise NotFoundError(f"agent {agent_id} not found")
    return agent
