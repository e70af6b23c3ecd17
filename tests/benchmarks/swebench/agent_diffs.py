"""Agent diffs for the fixture instances: honest, empty, and the tricky ones the parity logs record.

Each is a `git diff` taken the way the host takes an agent's (`git add -A`, `git diff --cached`)
after editing a copy of the instance's base state.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from benchmarks.gitops import apply_patch, git_ok, make_repo
from tests.benchmarks.swebench.fixture_set import REPOS, Instance

Edit = Callable[[Path], None]


def diff_after(instance: Instance, *edits: Edit) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        make_repo(REPOS / instance.repo_name, repo, "base")
        for edit in edits:
            edit(repo)
        git_ok(repo, "add", "--all")
        return git_ok(repo, "diff", "--cached", "--binary")


def gold(instance: Instance) -> Edit:
    def edit(repo: Path) -> None:
        applied = apply_patch(repo, instance.gold)
        assert applied.applied, applied.error

    return edit


def append(path: str, text: str) -> Edit:
    def edit(repo: Path) -> None:
        target = repo / path
        target.write_text(target.read_text() + text)

    return edit


def prepend(path: str, text: str) -> Edit:
    def edit(repo: Path) -> None:
        target = repo / path
        target.write_text(text + target.read_text())

    return edit


def write(path: str, text: str) -> Edit:
    def edit(repo: Path) -> None:
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)

    return edit


def fake_passes(instance: Instance, *, exit_code: int | None) -> Edit:
    """Code that prints "PASSED <test>" for every graded test.

    Without an exit code, `Stock.remove` prints them, so they show in the captured output
    of the tests that call it. With one, the package prints them when imported, past
    pytest's capture (`-s` added to pytest.ini, which is no test file), then ends the run.
    """
    tests = [*instance.meta["FAIL_TO_PASS"], *instance.meta["PASS_TO_PASS"]]
    lines = "".join(f"PASSED {test}\\n" for test in tests)
    if exit_code is None:
        marker = "        _check_count(count)\n        if item not in self._units:\n"
        return replace("tinyinv/stock.py", marker, f'        print("{lines}", end="")\n' + marker)
    code = f'import os as _os\n\n_os.write(1, b"{lines}")\n_os._exit({exit_code})\n\n'

    def edit(repo: Path) -> None:
        prepend("tinyinv/__init__.py", code)(repo)
        write("pytest.ini", "[pytest]\npythonpath = .\naddopts = -s\n")(repo)

    return edit


def replace(path: str, old: str, new: str) -> Edit:
    def edit(repo: Path) -> None:
        target = repo / path
        text = target.read_text()
        assert old in text, f"{old!r} not in {path}"
        target.write_text(text.replace(old, new, 1))

    return edit


def own_merge_tests() -> Edit:
    """The agent writes the test file the hidden tests create, with tests of the same names."""
    body = "".join(
        f"def {name}():\n    pass\n\n\n"
        for name in (
            "test_merge_keeps_items_only_in_the_other_stock",
            "test_merge_adds_shared_items",
            "test_merge_changes_neither_stock",
        )
    )
    return write("tests/test_merge.py", body.rstrip("\n") + "\n")


def hang_at_width_5() -> Edit:
    def edit(repo: Path) -> None:
        target = repo / "wrapkit/wrap.py"
        text = target.read_text()
        marker = "    lines: list[str] = []\n"
        assert marker in text
        target.write_text(text.replace(marker, marker + "    while width == 5:\n        pass\n"))

    return edit


def break_package_import() -> Edit:
    return write("wrapkit/__init__.py", '"""wrapkit."""\n\nfrom wrapkit.wrap import fill, unwrap, wrap\n')


# A diff whose context is not in the file: it applies nowhere.
STALE_DIFF = (
    "diff --git a/wrapkit/wrap.py b/wrapkit/wrap.py\n"
    "--- a/wrapkit/wrap.py\n"
    "+++ b/wrapkit/wrap.py\n"
    "@@ -1,3 +1,3 @@\n"
    '-"""Greedy line breaking."""\n'
    '+"""Greedy word wrapping, fixed."""\n'
    " \n"
    " from __future__ import annotations\n"
)


def named_diff(name: str, instance: Instance) -> str:
    """The diffs the log cases (fixtures/logs/cases.json) name."""
    builders: dict[str, Callable[[], str]] = {
        "gold": lambda: diff_after(instance, gold(instance)),
        "empty": lambda: "",
        "fake-passed": lambda: diff_after(instance, fake_passes(instance, exit_code=None)),
        "fake-passed-exit-0": lambda: diff_after(instance, fake_passes(instance, exit_code=0)),
        "fake-passed-exit-1": lambda: diff_after(instance, fake_passes(instance, exit_code=1)),
        "own-merge-tests": lambda: diff_after(instance, own_merge_tests()),
        "stale": lambda: STALE_DIFF,
        "hang": lambda: diff_after(instance, hang_at_width_5()),
        "break-import": lambda: diff_after(instance, break_package_import()),
    }
    return builders[name]()
