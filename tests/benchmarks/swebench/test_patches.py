"""Which parts of an agent's diff are graded, and the predictions export."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.gitops import apply_patch, make_repo
from benchmarks.swebench import graded_patch, is_test_path, predictions_jsonl
from benchmarks.swebench.patches import split_files, touched_paths
from tests.benchmarks.swebench.agent_diffs import diff_after, gold, own_merge_tests, write
from tests.benchmarks.swebench.fixture_set import instances


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("tests/test_stock.py", True),
        ("test_stock.py", True),
        ("pkg/stock_test.go", True),
        ("src/testing/helpers.py", True),
        ("web/e2e/login.spec.ts", True),
        ("conftest.py", True),
        ("pkg/sub/conftest.py", True),
        ("src/_pytest/python.py", False),  # pytest's own code: "pytest" is not the word "test"
        ("contest/rules.py", False),
        ("latest/notes.md", False),
        ("pytest.ini", False),
        ("sklearn/utils/_testing.py", True),
    ],
)
def test_test_paths(path: str, expected: bool) -> None:
    assert is_test_path(path) is expected


RENAME_AND_BINARY = """\
diff --git a/old name.py b/new name.py
similarity index 100%
rename from old name.py
rename to new name.py
diff --git a/logo.png b/logo.png
new file mode 100644
index 0000000..f00dbee
GIT binary patch
literal 3
Kcmb=e$p8QV3jh8

literal 0
HcmV?d00001

diff --git "a/caf\\303\\251.py" "b/caf\\303\\251.py"
--- "a/caf\\303\\251.py"
+++ "b/caf\\303\\251.py"
@@ -1 +1 @@
--- a line that looks like a header
+++ a line that looks like a header
"""


def test_split_files_reads_every_kind_of_git_diff() -> None:
    parts = split_files(RENAME_AND_BINARY)
    assert [part.paths for part in parts] == [("old name.py", "new name.py"), ("logo.png",), ("café.py",)]
    assert "".join(part.text for part in parts) == RENAME_AND_BINARY


def test_split_files_reads_a_plain_unified_diff() -> None:
    plain = (
        "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n--- /dev/null\n+++ b/tests/t.py\n@@ -0,0 +1 @@\n+c\n"
    )
    assert [part.paths for part in split_files(plain)] == [("x.py",), ("tests/t.py",)]
    assert split_files("") == []


def test_changes_to_test_files_are_dropped_and_the_rest_still_applies(tmp_path: Path) -> None:
    tinyinv_2 = instances()[1]
    diff = diff_after(
        tinyinv_2,
        gold(tinyinv_2),
        own_merge_tests(),  # the file the hidden tests create
        write("tests/test_stock.py", "def test_nothing():\n    pass\n"),
        write("conftest.py", "import os\n"),
        write("tinyinv/notes.txt", "kept\n"),
    )
    graded = graded_patch(diff, test_patch=tinyinv_2.tests, gold_patch=tinyinv_2.gold)
    assert graded.dropped == ["conftest.py", "tests/test_merge.py", "tests/test_stock.py"]
    assert touched_paths(graded.patch) == ["tinyinv/notes.txt", "tinyinv/stock.py"]
    repo = tmp_path / "repo"
    make_repo(Path(__file__).parent / "fixtures/.repos/tinyinv", repo, "base")
    assert apply_patch(repo, graded.patch).applied
    assert apply_patch(repo, tinyinv_2.tests).applied  # the hidden tests apply over what is left


def test_a_test_looking_file_the_fix_changes_is_kept() -> None:
    diff = "--- a/src/testing/util.py\n+++ b/src/testing/util.py\n@@ -1 +1 @@\n-a\n+b\n"
    assert graded_patch(diff, test_patch="", gold_patch=diff).patch == diff
    assert graded_patch(diff, test_patch="").dropped == ["src/testing/util.py"]


def test_predictions_jsonl_round_trips_through_swebench(tmp_path: Path) -> None:
    rows = [
        ("astropy__astropy-12907", "clade/agent-7", "diff --git a/x b/x\n+é\n"),
        ("django__django-11099", "clade/agent-7", ""),
    ]
    text = predictions_jsonl(rows)
    assert text.count("\n") == 2 and text.isascii()
    path = tmp_path / "predictions.jsonl"
    path.write_text(text)
    from swebench.harness.utils import get_predictions_from_file  # type: ignore[import-untyped]

    loaded = get_predictions_from_file(str(path), "unused", "test")
    assert [(p["instance_id"], p["model_name_or_path"], p["model_patch"]) for p in loaded] == rows
    assert all(set(p) == {"instance_id", "model_name_or_path", "model_patch"} for p in loaded)
    assert predictions_jsonl([]) == ""


def test_predictions_refuse_a_twice_given_instance_or_an_empty_name() -> None:
    with pytest.raises(ValueError, match=r"'a__1' has two predictions"):
        predictions_jsonl([("a__1", "m", ""), ("a__1", "m", "x")])
    with pytest.raises(ValueError, match=r"model_name_or_path"):
        predictions_jsonl([("a__1", "", "")])
