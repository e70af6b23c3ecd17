from __future__ import annotations

from pathlib import Path

from benchmarks.gitops import apply_patch, git_ok, make_repo, patch_paths, reset_paths


def repo_with(tmp_path: Path, files: dict[str, str]) -> Path:
    source = tmp_path / "source"
    for name, text in files.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text(text)
    return tmp_path / "repo"


def diff_of(repo: Path) -> str:
    git_ok(repo, "add", "--all")
    diff = git_ok(repo, "diff", "--cached")
    git_ok(repo, "reset", "--quiet", "--hard")
    git_ok(repo, "clean", "-fdq")
    return diff


def test_same_files_same_sha(tmp_path: Path) -> None:
    repo_with(tmp_path, {"a.txt": "a\n", "pkg/b.py": "b = 1\n"})
    first = make_repo(tmp_path / "source", tmp_path / "one", "base")
    second = make_repo(tmp_path / "source", tmp_path / "two", "base")
    assert first == second


def test_apply_reset_and_paths(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"a.txt": "a\n", "tests/t.py": "t = 1\n"})
    make_repo(tmp_path / "source", repo, "base")
    (repo / "a.txt").write_text("changed\n")
    (repo / "new.txt").write_text("new\n")
    diff = diff_of(repo)
    assert patch_paths(diff) == ["a.txt", "new.txt"]

    assert apply_patch(repo, "").applied
    assert apply_patch(repo, diff.rstrip("\n")).applied  # a lost final newline is forgiven
    assert (repo / "a.txt").read_text() == "changed\n"
    again = apply_patch(repo, diff)
    assert not again.applied
    assert "a.txt" in again.error

    reset_paths(repo, ["a.txt", "new.txt", "never-existed.txt"])
    assert (repo / "a.txt").read_text() == "a\n"
    assert not (repo / "new.txt").exists()


def test_reset_does_not_follow_a_symlinked_folder(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"tests/t.py": "t = 1\n"})
    make_repo(tmp_path / "source", repo, "base")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "new_test.py").write_text("host file\n")
    (repo / "tests" / "t.py").unlink()
    (repo / "tests").rmdir()
    (repo / "tests").symlink_to(outside)
    reset_paths(repo, ["tests/new_test.py"])
    assert (outside / "new_test.py").read_text() == "host file\n"
    reset_paths(repo, ["tests/t.py"])
    assert (repo / "tests").is_dir() and not (repo / "tests").is_symlink()
    assert (repo / "tests" / "t.py").read_text() == "t = 1\n"
    assert [path.name for path in outside.iterdir()] == ["new_test.py"]
