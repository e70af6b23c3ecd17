import time
from pathlib import Path

from agent.tools import run_bash, truncate


def test_runs_in_the_repo_and_reports_exit_code(tmp_path: Path) -> None:
    (tmp_path / "marker.txt").write_text("hello\n")
    result = run_bash(
        "cat marker.txt; echo oops >&2; exit 3", cwd=tmp_path, timeout_s=10, max_output_chars=1000
    )
    assert result.exit_code == 3
    assert not result.timed_out
    assert "hello" in result.output and "oops" in result.output
    assert result.for_model().startswith("Exit code: 3\n")


def test_truncate_keeps_head_and_tail() -> None:
    text = "HEAD" + "x" * 1000 + "TAIL"
    short, cut = truncate(text, 100)
    assert cut
    assert short.startswith("HEAD") and short.endswith("TAIL")
    assert "characters truncated" in short
    assert len(short) < 200
    assert truncate("small", 100) == ("small", False)


def test_long_output_is_truncated(tmp_path: Path) -> None:
    result = run_bash("seq 1 100000", cwd=tmp_path, timeout_s=10, max_output_chars=500)
    assert result.truncated
    assert result.output.startswith("1\n2\n")
    assert result.output.rstrip().endswith("100000")
    assert len(result.output) < 600


def test_timeout_kills_the_command_and_its_children(tmp_path: Path) -> None:
    started = time.monotonic()
    # The background child would keep the pipe open if only bash were killed.
    result = run_bash("sleep 30 & echo started; sleep 30", cwd=tmp_path, timeout_s=1, max_output_chars=1000)
    assert time.monotonic() - started < 10
    assert result.timed_out
    assert result.exit_code is None
    assert "started" in result.output
    assert "timed out" in result.for_model()


def test_command_does_not_wait_for_input(tmp_path: Path) -> None:
    result = run_bash("cat", cwd=tmp_path, timeout_s=5, max_output_chars=100)
    assert result.exit_code == 0
    assert not result.timed_out
