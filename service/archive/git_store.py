"""The bare git repository that holds every agent's code (GitPython).

Writes use plumbing commands, each with its own temporary index, so
concurrent writers never share state and nothing touches a work tree. Every
agent gets a branch `agents/<sha>`, so a plain `git clone` shows the lineage.
A child's objects are first written to a quarantine folder and checked against
the size limits; only a child that passes has its objects moved into the archive.
Large reads (archives, bundles, patch series) are streamed from git's stdout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import git

from contracts.errors import InvalidAgentError, NotFoundError, PatchError
from service.archive.binary_patch import declared_sizes
from service.archive.limits import AgentLimits, too_large
from service.archive.storage import git_says_full, storage_full

AGENT_REF_PREFIX = "refs/heads/agents/"
IDENTITY = {
    "GIT_AUTHOR_NAME": "Clade",
    "GIT_AUTHOR_EMAIL": "clade@localhost",
    "GIT_COMMITTER_NAME": "Clade",
    "GIT_COMMITTER_EMAIL": "clade@localhost",
}
# Seeds get a fixed date and message, so a seed's id is a function of its code alone: the same
# code imported twice, under any name, is the same agent.
SEED_DATE = "2000-01-01T00:00:00+0000"
SEED_MESSAGE = "seed"
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
# Commands whose message on a full disk names no cause (a ref's lock file could not be written):
# the disk is asked instead. Every other git write says "No space left on device".
SILENT_WHEN_FULL = frozenset({"update-ref"})
CHUNK = 256 * 1024
MAX_LINK_HOPS = 40  # as the kernel: a chain of links longer than this never resolves


class GitCommandError(RuntimeError):
    pass


class MergeConflictError(PatchError):
    """Two agents' changes since their common ancestor touch the same lines (or a file one
    changed and the other deleted); `paths` names the conflicted files."""

    def __init__(self, first: str, second: str, paths: list[str]) -> None:
        super().__init__(f"merging {first[:12]} and {second[:12]} conflicts in: {', '.join(paths)}")
        self.paths = paths


@dataclass(frozen=True)
class Merged:
    """`git merge-tree` of two agents, its objects in a quarantine: the merged tree (conflicted
    files hold git's conflict markers) and the conflicted paths."""

    tree: str
    conflicts: list[str]
    env: dict[str, str]  # the quarantine's environment, while it exists


class GitStore:
    def __init__(self, path: Path, tmp_dir: Path | None = None) -> None:
        # Absolute: GitPython runs git in the repository's folder, where a relative --git-dir (a
        # relative CLADE_DATA_DIR) names nothing; so do the scratch paths given to git.
        self.path = path.absolute()
        # Scratch files (indexes, quarantined objects, patches): beside the archive by default,
        # so that they stay on its file system and inside the data dir.
        self.tmp_dir = (tmp_dir or path.parent / "tmp").absolute()
        if not (path / "HEAD").exists():
            path.mkdir(parents=True, exist_ok=True)
            git.Repo.init(path, bare=True)
        self.repo = git.Repo(path)

    # -- reading -----------------------------------------------------------------

    def has_commit(self, sha: str) -> bool:
        return self._status(["cat-file", "-e", f"{sha}^{{commit}}"]) == 0

    def tree_of(self, sha: str) -> str:
        return self._text(["rev-parse", f"{sha}^{{tree}}"]).strip()

    def read_file(self, sha: str, path: str) -> bytes | None:
        status, out, _ = self._exec(["cat-file", "blob", f"{sha}:{path}"], binary=True)
        return out if status == 0 and isinstance(out, bytes) else None

    def archive(self, sha: str, fmt: str = "tar", prefix: str = "") -> bytes:
        """The agent's code as a tar (or tar.gz), whole in memory: for small agents and tests."""
        return b"".join(self.archive_stream(sha, fmt, prefix))

    def archive_stream(self, sha: str, fmt: str = "tar", prefix: str = "") -> Iterator[bytes]:
        """The agent's code as a tar (or tar.gz), chunk by chunk as git writes it."""
        self._require(sha)
        args = ["archive", f"--format={fmt}"] + ([f"--prefix={prefix}"] if prefix else [])
        return self.stream([*args, sha])

    @contextmanager
    def reading(self, args: list[str]) -> Iterator[IO[bytes]]:
        """The stdout of a git command as a file; GitCommandError at the end if git failed.
        Leaving the block early (an exception, a closed generator) kills git."""
        self.tmp_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=self.tmp_dir) as errors:
            process = subprocess.Popen(
                ["git", f"--git-dir={self.path}", *args], stdout=subprocess.PIPE, stderr=errors
            )
            assert process.stdout is not None
            try:
                yield process.stdout
                while process.stdout.read(CHUNK):  # what the reader left (tar padding): git must finish
                    pass
            except BaseException:
                process.kill()
                raise
            finally:
                process.stdout.close()
                status = process.wait()
            if status != 0:
                errors.seek(0)
                message = errors.read(4000).decode(errors="replace").strip()
                raise GitCommandError(f"git {args[0]} failed ({status}): {message}")

    def stream(self, args: list[str]) -> Iterator[bytes]:
        """The stdout of a git command in chunks, never whole in memory."""
        with self.reading(args) as out:
            while chunk := out.read(CHUNK):
                yield chunk

    def bundle_stream(self, shas: list[str]) -> Iterator[bytes]:
        """A git bundle holding the given agents and all their ancestors, streamed."""
        for sha in shas:
            self._require(sha)
        return self.stream(["bundle", "create", "--quiet", "-", *(AGENT_REF_PREFIX + sha for sha in shas)])

    def patch_series_stream(self, seed: str, sha: str) -> Iterator[bytes]:
        """`git format-patch` of every commit after `seed` up to `sha`, streamed."""
        self._require(sha)
        return self.stream(self._series_args(seed, sha))

    def diff(self, old: str | None, new: str) -> str:
        """Unified diff from `old` to `new`; from the empty tree for a seed. A text file that is
        not UTF-8 shows U+FFFD for each byte that is not (binary files come as git's binary patches)."""
        self._require(new)
        return self._bytes(["diff", "--binary", "--no-color", old or EMPTY_TREE, new]).decode(
            errors="replace"
        )

    def changed_paths(self, old: str, new: str) -> list[str]:
        """The paths that differ between two agents (a rename as its two paths)."""
        listing = self._text(["diff", "--name-only", "--no-renames", "-z", old, new])
        return [path for path in listing.split("\0") if path]

    def patch_series(self, seed: str, sha: str) -> str:
        """`git format-patch` of every commit after `seed` up to `sha` (non-UTF-8 text as in `diff`)."""
        self._require(sha)
        return self._bytes(self._series_args(seed, sha)).decode(errors="replace")

    def _series_args(self, seed: str, sha: str) -> list[str]:
        """format-patch skips merge commits (a crossover child), so a lineage holding one is
        written by `git log` along first parents instead, each merge as its diff against its
        first parent: `git am` of either form rebuilds the agent from its seed."""
        merges = self._text(["rev-list", "--count", "--first-parent", "--min-parents=2", f"{seed}..{sha}"])
        if int(merges.strip() or 0) == 0:
            return ["format-patch", "--stdout", "--binary", f"{seed}..{sha}"]
        return [
            *("log", "--format=email", "--patch", "--stat", "--binary", "--reverse", "--first-parent"),
            *("--diff-merges=first-parent", f"{seed}..{sha}"),
        ]

    def bundle(self, shas: list[str], dest: Path) -> None:
        """A git bundle holding the given agents and all their ancestors."""
        self._text(["bundle", "create", str(dest), *(AGENT_REF_PREFIX + sha for sha in shas)])

    def agent_refs(self) -> set[str]:
        output = self._text(["for-each-ref", "--format=%(refname)", AGENT_REF_PREFIX.rstrip("/")])
        return {line[len(AGENT_REF_PREFIX) :] for line in output.splitlines() if line}

    # -- writing objects ---------------------------------------------------------

    def commit_folder(self, folder: Path) -> str:
        """A seed's root commit of the folder's files (its .gitignore is honoured, .git is skipped)."""
        with self._index() as env:
            self._text(["add", "--all", "."], env=env | {"GIT_WORK_TREE": str(folder)}, cwd=folder)
            tree = self._text(["write-tree"], env=env).strip()
            self._admit_objects(Path(env["GIT_OBJECT_DIRECTORY"]))
        if tree == EMPTY_TREE:
            raise InvalidAgentError("the agent holds no files")
        return self._commit_tree(tree, [], SEED_MESSAGE, date=SEED_DATE)

    def commit_patch(
        self,
        parent: str,
        patch: str,
        message: str,
        limits: AgentLimits | None = None,
        second_parent: str | None = None,
    ) -> tuple[str, str]:
        """A child commit of `parent` with `patch` applied: (commit, tree). Nothing kept on failure:
        git writes the child's objects into a quarantine, and they join the archive only once the
        child's tree is within `limits`. With `second_parent` (a crossover whose conflicts the
        improver resolved) the commit is a merge of both."""
        if limits is not None:
            _check_declared_sizes(patch, limits)
        with self._index() as env:
            patch_file = Path(env["GIT_INDEX_FILE"]).with_name("child.patch")
            patch_file.write_bytes(patch.encode())
            # One call yields the parent's tree and fails for an unknown parent.
            status, parent_tree, _ = self._exec(["rev-parse", "--verify", "--quiet", f"{parent}^{{tree}}"])
            if status != 0:
                raise NotFoundError(f"agent {parent} has no commit in the archive")
            self._text(["read-tree", parent], env=env)
            apply = ["apply", "--cached", "--whitespace=nowarn", str(patch_file)]
            status, _, err = self._exec(apply, env=env)
            if status != 0:
                reason = str(err).strip() or "git apply failed"
                self._refuse_if_full("apply", reason)  # not the patch's fault: retried, never final
                raise PatchError(f"patch does not apply to {parent[:12]}: {reason}")
            tree = self._text(["write-tree"], env=env).strip()
            if tree == str(parent_tree).strip():
                raise PatchError("patch is empty: the child would be identical to its parent")
            if tree == EMPTY_TREE:
                raise PatchError("patch deletes every file: a child must hold an agent")
            listing = self._text(["ls-tree", "-r", "-l", "-z", tree], env=env)
            self._check_links(_entries(listing), env)
            if limits is not None:
                _check_tree(_tree_sizes(listing), limits)
            parents = [parent] if second_parent is None else [parent, second_parent]
            sha = self._commit_tree(tree, parents, message, env=env)
            self._admit_objects(Path(env["GIT_OBJECT_DIRECTORY"]))
        return sha, tree

    def merge_commit(
        self, first: str, second: str, message: str, limits: AgentLimits | None = None
    ) -> tuple[str, str]:
        """A merge commit of two agents (`first` its first parent): (commit, tree). Refused whole
        (nothing kept) on a conflict (MergeConflictError), or if the merged tree adds nothing to
        a parent or is beyond `limits`, checked like a child's tree."""
        with self._merged(first, second) as merged:
            if merged.conflicts:
                raise MergeConflictError(first, second, merged.conflicts)
            for parent in (first, second):
                if merged.tree == self.tree_of(parent):
                    raise PatchError(f"the merge is identical to {parent[:12]}: it holds the other's changes")
            listing = self._text(["ls-tree", "-r", "-l", "-z", merged.tree], env=merged.env)
            self._check_links(_entries(listing), merged.env)
            if limits is not None:
                _check_tree(_tree_sizes(listing), limits)
            sha = self._commit_tree(merged.tree, [first, second], message, env=merged.env)
            self._admit_objects(Path(merged.env["GIT_OBJECT_DIRECTORY"]))
        return sha, merged.tree

    def merge_conflicts(self, first: str, second: str) -> list[str]:
        """The paths where merging the two agents conflicts (none: a clean merge); nothing kept."""
        with self._merged(first, second) as merged:
            return merged.conflicts

    def merged_tar(self, first: str, second: str) -> bytes:
        """The merge of two agents as an uncompressed tar, conflict markers and all (for the
        improver that resolves them); nothing kept in the archive."""
        with self._merged(first, second) as merged:
            return self._bytes(["archive", "--format=tar", merged.tree], env=merged.env)

    @contextmanager
    def _merged(self, first: str, second: str) -> Iterator[Merged]:
        self._require(first)
        self._require(second)
        with self._index() as env:
            args = ["merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", first, second]
            status, out, err = self._exec(args, env=env)
            if status not in (0, 1):  # 1: conflicts; anything else: no merge at all
                self._refuse_if_full("merge-tree", err)
                raise PatchError(f"{first[:12]} and {second[:12]} cannot be merged: {err.strip()}")
            tree, *paths = [part for part in str(out).split("\0") if part]
            yield Merged(tree=tree, conflicts=sorted(set(paths)), env=env)

    def _check_links(self, entries: list[tuple[str, str, str]], env: dict[str, str]) -> None:
        """A child holds files, folders and links within itself, as a seed does (whose tar may hold
        no link at all): a link leading out of the tree would make whoever unpacks the agent read
        or write outside it, and a submodule has no content in the archive."""
        links: dict[str, str] = {}
        for mode, sha, path in entries:
            if mode == "160000":
                raise PatchError(f"{path}: a submodule cannot be part of an agent")
            if mode == "120000":
                links[path] = self._text(["cat-file", "blob", sha], env=env)
        for path, target in links.items():
            if _link_escapes(path, target, links):
                raise PatchError(f"{path}: a link leading out of the agent ({target[:200]!r})")

    # -- writing refs ------------------------------------------------------------

    def set_agent_ref(self, sha: str) -> None:
        self._text(["update-ref", AGENT_REF_PREFIX + sha, sha])

    def ensure_agent_ref(self, sha: str) -> None:
        """The agent's ref, written only if missing (a retried request completes an earlier one)."""
        if self._status(["show-ref", "--verify", "--quiet", AGENT_REF_PREFIX + sha]) != 0:
            self.set_agent_ref(sha)

    def point_head_at(self, sha: str) -> None:
        """Give a fresh archive a HEAD (the first seed), so that `git clone` checks something out."""
        if self._status(["rev-parse", "--verify", "--quiet", "HEAD"]) != 0:
            self._text(["symbolic-ref", "HEAD", AGENT_REF_PREFIX + sha])

    def delete_agent_ref(self, sha: str) -> None:
        self._text(["update-ref", "-d", AGENT_REF_PREFIX + sha])

    # -- helpers -----------------------------------------------------------------

    def _require(self, sha: str) -> None:
        if not self.has_commit(sha):
            raise NotFoundError(f"agent {sha} has no commit in the archive")

    def _commit_tree(
        self,
        tree: str,
        parents: list[str],
        message: str,
        date: str | None = None,
        env: dict[str, str] | None = None,
    ) -> str:
        env = dict(env or IDENTITY)
        if date is not None:
            env |= {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
        args = ["commit-tree", tree]
        for parent in parents:
            args += ["-p", parent]
        return self._text([*args, "-m", message], env=env).strip()

    @contextmanager
    def _index(self) -> Iterator[dict[str, str]]:
        """A private index and a quarantine for new objects (the archive's objects stay readable)."""
        self.tmp_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="clade-index-", dir=self.tmp_dir) as tmp:
            objects = Path(tmp) / "objects"
            objects.mkdir()
            yield dict(IDENTITY) | {
                "GIT_INDEX_FILE": str(Path(tmp) / "index"),
                "GIT_OBJECT_DIRECTORY": str(objects),
                "GIT_ALTERNATE_OBJECT_DIRECTORIES": str((self.path / "objects").resolve()),
            }

    def _admit_objects(self, quarantine: Path) -> None:
        """Move quarantined loose objects into the archive (same file system: renames)."""
        store = self.path / "objects"
        for folder in quarantine.iterdir():
            if len(folder.name) != 2 or not folder.is_dir():
                continue  # git's own scratch (pack/, info/)
            (store / folder.name).mkdir(exist_ok=True)
            for item in folder.iterdir():
                target = store / folder.name / item.name
                if target.exists():  # the same content, already there
                    continue
                try:
                    os.replace(item, target)
                except OSError:  # another file system after all: copy
                    shutil.copy2(item, target)

    def _exec(
        self,
        args: list[str],
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        binary: bool = False,
    ) -> tuple[int, bytes | str, str]:
        # `-C` rather than Popen's cwd: GitPython sets the latter itself.
        where = ["-C", str(cwd)] if cwd else []
        status, out, err = self.repo.git.execute(
            ["git", *where, f"--git-dir={self.path}", *args],
            env=env,
            with_extended_output=True,
            with_exceptions=False,
            stdout_as_string=not binary,
            strip_newline_in_stdout=False,
        )
        return int(status), out if out is not None else "", str(err)

    def _status(self, args: list[str]) -> int:
        return self._exec(args)[0]

    def _refuse_if_full(self, command: str, stderr: str) -> None:
        """StorageFullError if a git command failed for want of space."""
        if git_says_full(stderr, self.path, ask_disk=command in SILENT_WHEN_FULL):
            last = stderr.strip().splitlines()[-1] if stderr.strip() else f"git {command} failed"
            raise storage_full(last, self.path.parent)

    def _bytes(self, args: list[str], env: dict[str, str] | None = None) -> bytes:
        status, out, err = self._exec(args, env=env, binary=True)
        if status != 0:
            self._refuse_if_full(args[0], err)
            raise GitCommandError(f"git {args[0]} failed ({status}): {err.strip()}")
        assert isinstance(out, bytes)
        return out

    def _text(self, args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
        status, out, err = self._exec(args, env=env, cwd=cwd)
        if status != 0:
            self._refuse_if_full(args[0], err)
            raise GitCommandError(f"git {args[0]} failed ({status}): {err.strip()}")
        return str(out)


def _entries(listing: str) -> list[tuple[str, str, str]]:
    """(mode, object, path) of each entry in `git ls-tree -r -z` output."""
    entries: list[tuple[str, str, str]] = []
    for entry in listing.split("\0"):
        if entry:
            info, _, path = entry.partition("\t")
            mode, _kind, sha = info.split()[:3]
            entries.append((mode, sha, path))
    return entries


def _link_escapes(path: str, target: str, links: Mapping[str, str]) -> bool:
    """Whether a link at `path` pointing at `target` leads outside the agent's tree, followed
    through the tree's other `links` (each may stay inside on its face, and lead out through
    another: `up -> ..` in a folder, then `x -> folder/up/..`), as a file system resolves it."""
    if target.startswith("/"):
        return True
    folders = path.split("/")[:-1]  # where the link is, inside the tree
    pending = target.split("/")
    hops = 0
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not folders:
                return True
            folders.pop()
            continue
        folders.append(part)
        inner = links.get("/".join(folders))
        if inner is None:
            continue
        hops += 1
        if hops > MAX_LINK_HOPS or inner.startswith("/"):
            return True  # a loop (never resolves), or absolute
        folders.pop()
        pending = inner.split("/") + pending
    return False


def _tree_sizes(listing: str) -> list[tuple[str, int]]:
    """(path, size) of each blob in `git ls-tree -r -l -z` output (submodule links have no size)."""
    files: list[tuple[str, int]] = []
    for entry in listing.split("\0"):
        if not entry:
            continue
        info, _, path = entry.partition("\t")
        size = info.split()[-1]
        if size.isdigit():
            files.append((path, int(size)))
    return files


def _check_declared_sizes(patch: str, limits: AgentLimits) -> None:
    """Refuse a binary patch from its headers alone, before git inflates anything."""
    for size in declared_sizes(patch):
        if size > limits.max_file_bytes:
            raise too_large(f"patch holds a file of {size} bytes", "max_file_bytes", limits.max_file_bytes)


def _check_tree(files: list[tuple[str, int]], limits: AgentLimits) -> None:
    if len(files) > limits.max_agent_files:
        raise too_large(f"the child would have {len(files)} files", "max_agent_files", limits.max_agent_files)
    for path, size in files:
        if size > limits.max_file_bytes:
            raise too_large(f"{path} would be {size} bytes", "max_file_bytes", limits.max_file_bytes)
    total = sum(size for _, size in files)
    if total > limits.max_agent_bytes:
        raise too_large(f"the child would take {total} bytes", "max_agent_bytes", limits.max_agent_bytes)
