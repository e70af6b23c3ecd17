"""The bare git archive on its own: seeds, children from patches, reads and exports."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from contracts.errors import PatchError
from service.archive.git_store import GitStore
from tests.helpers import tar_names, write_agent
from tests.service.helpers import make_patch


@pytest.fixture
def store(tmp_path: Path) -> GitStore:
    return GitStore(tmp_path / "archive.git")


@pytest.fixture
def seed(store: GitStore, tmp_path: Path) -> str:
    root = write_agent(tmp_path / "seed", {"tiny/core.py": "a\nb\nc\n"})
    sha = store.commit_folder(root)
    store.set_agent_ref(sha)
    store.point_head_at(sha)
    return sha


def test_seed_import_is_a_root_commit_and_is_deterministic(
    store: GitStore, seed: str, tmp_path: Path
) -> None:
    again = store.commit_folder(write_agent(tmp_path / "seed2", {"tiny/core.py": "a\nb\nc\n"}))
    assert again == seed
    parents = subprocess.run(
        ["git", "--git-dir", str(store.path), "rev-list", "--parents", "-n1", seed],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert parents == [seed]


def test_seed_skips_git_folder_and_honours_gitignore(store: GitStore, tmp_path: Path) -> None:
    root = write_agent(tmp_path / "repo")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text("*.log\n")
    (root / "debug.log").write_text("noise")
    sha = store.commit_folder(root)
    names = tar_names(store.archive(sha))
    assert "agent.toml" in names and ".gitignore" in names
    assert not any(name.startswith(".git/") or name == "debug.log" for name in names)


def test_child_from_patch_has_parent_and_content(store: GitStore, seed: str) -> None:
    child, _ = store.commit_patch(seed, make_patch("a\nb\nc\n", "a\nB\nc\n"), "child")
    assert store.read_file(child, "tiny/core.py") == b"a\nB\nc\n"
    log = subprocess.run(
        ["git", "--git-dir", str(store.path), "rev-list", "--parents", "-n1", child],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert log == [child, seed]
    assert "-b\n+B" in store.diff(seed, child)


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ("this is not a patch", "does not apply"),
        (make_patch("x\ny\nz\n", "x\nY\nz\n"), "does not apply"),
        ("", "does not apply"),
    ],
)
def test_bad_patch_is_refused_and_leaves_no_ref(store: GitStore, seed: str, patch: str, message: str) -> None:
    before = store.agent_refs()
    with pytest.raises(PatchError, match=message):
        store.commit_patch(seed, patch, "child")
    assert store.agent_refs() == before


def test_plain_clone_shows_every_agent(store: GitStore, seed: str, tmp_path: Path) -> None:
    child, _ = store.commit_patch(seed, make_patch("a\nb\nc\n", "a\nB\nc\n"), "child")
    store.set_agent_ref(child)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(store.path), str(clone)], check=True)
    branches = subprocess.run(
        ["git", "-C", str(clone), "branch", "-r"], capture_output=True, text=True, check=True
    ).stdout
    assert f"origin/agents/{seed}" in branches and f"origin/agents/{child}" in branches
    log = subprocess.run(
        ["git", "-C", str(clone), "log", "--format=%H", f"origin/agents/{child}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert log == [child, seed]


def test_bundle_and_patch_series_reproduce_the_agent(store: GitStore, seed: str, tmp_path: Path) -> None:
    one, _ = store.commit_patch(seed, make_patch("a\nb\nc\n", "a\nB\nc\n"), "one")
    two, _ = store.commit_patch(one, make_patch("a\nB\nc\n", "a\nB\nC\n"), "two")
    store.set_agent_ref(one)
    store.set_agent_ref(two)
    bundle = tmp_path / "lineage.bundle"
    store.bundle([two], bundle)
    clone = tmp_path / "from-bundle"
    subprocess.run(["git", "clone", "-q", str(bundle), str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "checkout", "-q", two], check=True)
    assert (clone / "tiny/core.py").read_text() == "a\nB\nC\n"

    series = store.patch_series(seed, two)
    assert series.count("Subject: [PATCH") == 2
    work = tmp_path / "replay"
    subprocess.run(["git", "clone", "-q", str(store.path), str(work)], check=True)
    subprocess.run(["git", "-C", str(work), "checkout", "-q", seed], check=True)
    subprocess.run(
        ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t", "am", "-q"],
        input=series,
        text=True,
        check=True,
    )
    assert (work / "tiny/core.py").read_text() == "a\nB\nC\n"


def test_code_tar_has_every_file(store: GitStore, seed: str) -> None:
    members = tar_names(store.archive(seed))
    assert {"agent.toml", "tiny/__init__.py", "tiny/__main__.py", "tiny/core.py"} <= set(members)
