"""The bare git repository that holds every agent's code (GitPython).

Writes use plumbing commands, each with its own temporary index, so
concurrent writers never share state and nothing touches a work tree. Every
agent gets a branch `agents/<sha>`, so a plain `git clone` shows the lineage.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import git

from contracts.errors import InvalidAgentError, NotFoundError, PatchError

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


class GitCommandError(RuntimeError):
    pass


class GitStore:
    def __init__(self, path: Path) -> None:
        self.path = path
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
        """The agent's code as a tar (or tar.gz) stream."""
        self._require(sha)
        args = ["archive", f"--format={fmt}"] + ([f"--prefix={prefix}"] if prefix else [])
        return self._bytes([*args, sha])

    def diff(self, old: str | None, new: str) -> str:
        """Unified diff from `old` to `new`; from the empty tree for a seed. A text file that is
        not UTF-8 shows U+FFFD for each byte that is not (binary files come as git's binary patches)."""
        self._require(new)
        return self._bytes(["diff", "--binary", "--no-color", old or EMPTY_TREE, new]).decode(
            errors="replace"
        )

    def patch_series(self, seed: str, sha: str) -> str:
        """`git format-patch` of every commit after `seed` up to `sha` (non-UTF-8 text as in `diff`)."""
        self._require(sha)
        series = self._bytes(["format-patch", "--stdout", "--binary", f"{seed}..{sha}"])
        return series.decode(errors="replace")

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
        if tree == EMPTY_TREE:
            raise InvalidAgentError("the agent holds no files")
        return self._commit_tree(tree, [], SEED_MESSAGE, date=SEED_DATE)

    def commit_patch(self, parent: str, patch: str, message: str) -> tuple[str, str]:
        """A child commit of `parent` with `patch` applied: (commit, tree). Nothing kept on failure."""
        with self._index() as env, tempfile.NamedTemporaryFile("wb", suffix=".patch") as handle:
            handle.write(patch.encode())
            handle.flush()
            # One call yields the parent's tree and fails for an unknown parent.
            status, parent_tree, _ = self._exec(["rev-parse", "--verify", "--quiet", f"{parent}^{{tree}}"])
            if status != 0:
                raise NotFoundError(f"agent {parent} has no commit in the archive")
            self._text(["read-tree", parent], env=env)
            status, _, err = self._exec(["apply", "--cached", "--whitespace=nowarn", handle.name], env=env)
            if status != 0:
                reason = str(err).strip() or "git apply failed"
                raise PatchError(f"patch does not apply to {parent[:12]}: {reason}")
            tree = self._text(["write-tree"], env=env).strip()
        if tree == str(parent_tree).strip():
            raise PatchError("patch is empty: the child would be identical to its parent")
        if tree == EMPTY_TREE:
            raise PatchError("patch deletes every file: a child must hold an agent")
        return self._commit_tree(tree, [parent], message), tree

    # -- writing refs ------------------------------------------------------------

    def set_agent_ref(self, sha: str) -> None:
        self._text(["update-ref", AGENT_REF_PREFIX + sha, sha])

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

    def _commit_tree(self, tree: str, parents: list[str], message: str, date: str | None = None) -> str:
        env = dict(IDENTITY)
        if date is not None:
            env |= {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
        args = ["commit-tree", tree]
        for parent in parents:
            args += ["-p", parent]
        return self._text([*args, "-m", message], env=env).strip()

    @contextmanager
    def _index(self) -> Iterator[dict[str, str]]:
        with tempfile.TemporaryDirectory(prefix="clade-index-") as tmp:
            yield dict(IDENTITY) | {"GIT_INDEX_FILE": str(Path(tmp) / "index")}

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

    def _text(self, args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
        status, out, err = self._exec(args, env=env, cwd=cwd)
        if status != 0:
            raise GitCommandError(f"git {args[0]} failed ({status}): {err.strip()}")
        return str(out)

    def _bytes(self, args: list[str]) -> bytes:
        status, out, err = self._exec(args, binary=True)
        if status != 0:
            raise GitCommandError(f"git {args[0]} failed ({status}): {err.strip()}")
        assert isinstance(out, bytes)
        return out
