import json
import time
from pathlib import Path

from agent.loop import Agent, Limits
from agent.model import BUDGET_EXCEEDED, Message, ModelError, Reply, ToolCall
from agent.trajectory import SCHEMA_VERSION, ExitReason, Trajectory

USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


class ScriptedModel:
    """Plays back replies (or raises errors) in order; records what it was sent."""

    def __init__(self, *replies: Reply | ModelError):
        self.replies = list(replies)
        self.seen: list[list[Message]] = []

    def query(self, messages: list[Message], *, timeout_s: float) -> Reply:
        self.seen.append([dict(m) for m in messages])
        reply = self.replies.pop(0)
        if isinstance(reply, ModelError):
            raise reply
        return reply


def bash(command: str, call_id: str = "call-1") -> Reply:
    call = ToolCall(id=call_id, name="bash", arguments=json.dumps({"command": command}))
    message = {"role": "assistant", "content": "", "tool_calls": [call.as_message_part()]}
    return Reply(message=message, tool_calls=[call], usage=USAGE)


def done(text: str = "Fixed.") -> Reply:
    return Reply(message={"role": "assistant", "content": text}, usage=USAGE)


def run(
    tmp_path: Path,
    model: ScriptedModel,
    *,
    max_steps: int = 10,
    max_tokens: int = 10_000,
    deadline: float | None = None,
) -> Trajectory:
    trajectory = Trajectory(model="scripted")
    deadline = time.monotonic() + 60 if deadline is None else deadline
    limits = Limits(max_steps=max_steps, deadline=deadline, max_tokens=max_tokens)
    Agent(model, tmp_path, limits, trajectory).run("system prompt", "task prompt")
    return trajectory


def test_runs_commands_until_the_model_stops(tmp_path: Path) -> None:
    model = ScriptedModel(bash("echo fixed > answer.txt"), done())
    trajectory = run(tmp_path, model)
    assert (tmp_path / "answer.txt").read_text() == "fixed\n"
    assert trajectory.exit_reason is ExitReason.COMPLETED
    tool_message = model.seen[1][-1]
    assert tool_message == {"role": "tool", "tool_call_id": "call-1", "content": "Exit code: 0"}
    assert trajectory.usage == {
        "prompt_tokens": 20,
        "completion_tokens": 10,
        "total_tokens": 30,
        "model_calls": 2,
    }
    assert trajectory.steps[0]["tool_calls"][0]["command"] == "echo fixed > answer.txt"


def test_malformed_tool_call_is_answered_not_fatal(tmp_path: Path) -> None:
    call = ToolCall(id="c", name="bash", arguments="not json")
    bad = Reply(message={"role": "assistant", "content": ""}, tool_calls=[call], usage=USAGE)
    model = ScriptedModel(bad, done())
    trajectory = run(tmp_path, model)
    assert trajectory.exit_reason is ExitReason.COMPLETED
    assert model.seen[1][-1]["content"].startswith("Error:")


def test_step_limit(tmp_path: Path) -> None:
    trajectory = run(tmp_path, ScriptedModel(bash("true"), bash("true")), max_steps=2)
    assert trajectory.exit_reason is ExitReason.MAX_STEPS


def test_token_limit(tmp_path: Path) -> None:
    trajectory = run(tmp_path, ScriptedModel(bash("true"), bash("true")), max_tokens=20)
    assert trajectory.exit_reason is ExitReason.TOKEN_LIMIT
    assert trajectory.usage["model_calls"] == 2


def test_time_limit(tmp_path: Path) -> None:
    trajectory = run(tmp_path, ScriptedModel(), deadline=time.monotonic() - 1)
    assert trajectory.exit_reason is ExitReason.TIME_LIMIT


def test_budget_error_ends_the_run_with_its_reason(tmp_path: Path) -> None:
    error = ModelError("budget spent", status=429, type=BUDGET_EXCEEDED, code="run_usd")
    trajectory = run(tmp_path, ScriptedModel(bash("true"), error))
    assert trajectory.exit_reason is ExitReason.BUDGET_EXCEEDED
    assert "budget spent" in (trajectory.error or "")


def test_other_model_errors(tmp_path: Path) -> None:
    trajectory = run(tmp_path, ScriptedModel(ModelError("boom", status=500)))
    assert trajectory.exit_reason is ExitReason.MODEL_ERROR


def test_trajectory_file_is_versioned_json(tmp_path: Path) -> None:
    trajectory = run(tmp_path, ScriptedModel(bash("echo hi"), done()))
    path = tmp_path / "out" / "trajectory.json"
    trajectory.save(path)
    data = json.loads(path.read_text())
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["exit_reason"] == "completed"
    assert [m["role"] for m in data["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert data["steps"][0]["tool_calls"][0]["output"] == "hi\n"
    assert data["finished_at"] >= data["started_at"]
    assert not list(path.parent.glob("*.tmp"))
