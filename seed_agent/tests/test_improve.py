"""The agent's own improvement procedure, with a stand-in model (no network)."""

import json
from pathlib import Path

from agent.improve import ALL_RESOLVED, main
from agent.model import Message, Reply, ToolCall

USAGE = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
RECORDS = [
    {
        "task_id": "demo-2",
        "resolved": False,
        "statement": "slugify keeps dashes",
        "grade_reason": "1 of 1 FAIL_TO_PASS tests failed",
        "failing_tests": ["tests/test_slug.py::test_dash"],
        "diff": "",
    },
    {"task_id": "demo-1", "resolved": True, "statement": "count words"},
]


class StandInModel:
    """Plays back replies in order and records what it was sent."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.seen: list[list[Message]] = []

    def query(self, messages: list[Message], *, timeout_s: float) -> Reply:
        self.seen.append([dict(m) for m in messages])
        return self.replies.pop(0)


def say(text: str) -> Reply:
    return Reply(message={"role": "assistant", "content": text}, usage=USAGE)


def bash(command: str) -> Reply:
    call = ToolCall(id="call-1", name="bash", arguments=json.dumps({"command": command}))
    message = {"role": "assistant", "content": "", "tool_calls": [call.as_message_part()]}
    return Reply(message=message, tool_calls=[call], usage=USAGE)


def environment(tmp_path: Path, records: list[dict[str, object]]) -> dict[str, str]:
    repo = tmp_path / "repo"
    (repo / "agent").mkdir(parents=True)
    (repo / "agent" / "loop.py").write_text("# the loop\n")
    (tmp_path / "evaluations.json").write_text(json.dumps({"schema_version": 1, "evaluations": records}))
    (tmp_path / "statement.md").write_text("Improve yourself.")
    return {
        "CLADE_MODEL": "stand-in",
        "CLADE_TASK_FILE": str(tmp_path / "statement.md"),
        "CLADE_REPO": str(repo),
        "CLADE_OUTPUT_DIR": str(tmp_path / "out"),
        "CLADE_EVALUATIONS_FILE": str(tmp_path / "evaluations.json"),
        "CLADE_NOTE_FILE": str(tmp_path / "diagnosis.md"),
        "CLADE_TIMEOUT_S": "60",
    }


def test_diagnoses_the_failed_task_then_changes_its_own_copy(tmp_path: Path) -> None:
    env = environment(tmp_path, RECORDS)
    model = StandInModel(
        say("Check dashes\n\nTell the agent to read the tests first."),
        bash("echo '# read the tests first' >> agent/loop.py"),
        say("Done."),
    )
    assert main(env, model) == 0
    diagnosis_prompt = model.seen[0][-1]["content"]
    assert "demo-2" in diagnosis_prompt and "tests/test_slug.py::test_dash" in diagnosis_prompt
    assert "1 of 2 tasks resolved" in diagnosis_prompt and "- agent/loop.py" in diagnosis_prompt
    assert "Tell the agent to read the tests first." in model.seen[1][1]["content"]
    assert (tmp_path / "repo" / "agent" / "loop.py").read_text().endswith("# read the tests first\n")
    assert (tmp_path / "diagnosis.md").read_text().startswith("Check dashes")
    assert json.loads((tmp_path / "out" / "trajectory.json").read_text())["exit_reason"] == "completed"


def test_all_resolved_asks_for_reliability_without_a_diagnosis_call(tmp_path: Path) -> None:
    env = environment(tmp_path, [RECORDS[1]])
    model = StandInModel(say("Nothing to change."))
    assert main(env, model) == 0
    assert len(model.seen) == 1  # the loop's call only
    assert ALL_RESOLVED in model.seen[0][1]["content"]
