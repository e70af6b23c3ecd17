"""The real seed agent, run as a subprocess against a scripted OpenAI-compatible server.

The server is a deterministic stand-in for the remote model (labelled "scripted"): it
plays back canned chat-completion replies and records every request it receives.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

SEED_AGENT = Path(__file__).resolve().parents[2] / "seed_agent"
MODEL = "scripted-model"


class ScriptedModelServer:
    """Answers POST /v1/chat/completions with the next scripted (status, body) pair."""

    def __init__(self, replies: list[tuple[int, dict[str, Any]]]):
        self.replies = replies
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                server.requests.append(json.loads(self.rfile.read(length)))
                server.headers.append({k.lower(): v for k, v in self.headers.items()})
                # Once the script runs out, repeat the last reply (e.g. a retried error).
                status, body = server.replies[min(len(server.requests), len(replies)) - 1]
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status >= 400:
                    self.send_header("x-should-retry", "false")  # as Clade's gateway does
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output quiet

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ScriptedModelServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def completion(message: dict[str, Any], finish_reason: str) -> tuple[int, dict[str, Any]]:
    return 200, {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }


def bash_call(command: str) -> tuple[int, dict[str, Any]]:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps({"command": command})},
    }
    return completion({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls")


def final_answer(text: str) -> tuple[int, dict[str, Any]]:
    return completion({"role": "assistant", "content": text}, "stop")


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[dict[str, Path]]:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "greet.py").write_text('GREETING = "hello"\n')
    task = tmp_path / "statement.md"
    task.write_text("The greeting should be 'goodbye'.\n")
    yield {"repo": repo, "task": task, "out": tmp_path / "out"}


def agent_env(server: ScriptedModelServer, ws: dict[str, Path]) -> dict[str, str]:
    # Only what the sandbox would give: no proxies or keys leak in from the host.
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(ws["repo"].parent),
        "PYTHONPATH": str(SEED_AGENT),
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "clade-sandbox",
        "CLADE_MODEL": MODEL,
        "CLADE_TASK_FILE": str(ws["task"]),
        "CLADE_REPO": str(ws["repo"]),
        "CLADE_OUTPUT_DIR": str(ws["out"]),
        "CLADE_MAX_STEPS": "5",
        "CLADE_TIMEOUT_S": "60",
    }


def run_agent(server: ScriptedModelServer, ws: dict[str, Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent"],
        cwd=ws["repo"],
        env=agent_env(server, ws),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_agent_edits_the_repo_and_writes_its_trajectory(workspace: dict[str, Path]) -> None:
    script = [
        bash_call("sed -i 's/hello/goodbye/' greet.py && cat greet.py"),
        final_answer("Changed the greeting to goodbye."),
    ]
    with ScriptedModelServer(script) as server:
        proc = run_agent(server, workspace)
    assert proc.returncode == 0, proc.stderr
    assert (workspace["repo"] / "greet.py").read_text() == 'GREETING = "goodbye"\n'

    first, second = server.requests
    assert first["model"] == MODEL
    assert [tool["function"]["name"] for tool in first["tools"]] == ["bash"]
    assert "The greeting should be 'goodbye'." in first["messages"][1]["content"]
    assert server.headers[0]["authorization"] == "Bearer clade-sandbox"
    tool_reply = second["messages"][-1]
    assert tool_reply["role"] == "tool" and tool_reply["tool_call_id"] == "call_1"
    assert tool_reply["content"] == 'Exit code: 0\nGREETING = "goodbye"\n'

    trajectory = json.loads((workspace["out"] / "trajectory.json").read_text())
    assert trajectory["schema_version"] == 1
    assert trajectory["exit_reason"] == "completed"
    assert trajectory["error"] is None
    assert trajectory["usage"]["total_tokens"] == 240
    assert trajectory["usage"]["model_calls"] == 2
    assert trajectory["messages"][-1]["content"] == "Changed the greeting to goodbye."
    assert trajectory["steps"][0]["tool_calls"][0]["exit_code"] == 0


def test_budget_error_ends_the_run_cleanly(workspace: dict[str, Path]) -> None:
    budget_error = {
        "error": {
            "message": "evaluation budget of $0.50 is spent",
            "type": "budget_exceeded",
            "code": "evaluation_usd",
        }
    }
    script = [bash_call("echo step one"), (429, budget_error)]
    with ScriptedModelServer(script) as server:
        proc = run_agent(server, workspace)
    assert proc.returncode == 0, proc.stderr
    trajectory = json.loads((workspace["out"] / "trajectory.json").read_text())
    assert trajectory["exit_reason"] == "budget_exceeded"
    assert "budget of $0.50 is spent" in trajectory["error"]
    assert len(server.requests) == 2  # the refusal is final: no retries
    assert trajectory["steps"][0]["tool_calls"][0]["output"] == "step one\n"
    assert (workspace["repo"] / "greet.py").read_text() == 'GREETING = "hello"\n'


def test_sigterm_still_leaves_a_trajectory(workspace: dict[str, Path]) -> None:
    started = workspace["repo"].parent / "command-started"
    script = [bash_call(f"touch {started} && sleep 30"), final_answer("never reached")]
    with ScriptedModelServer(script) as server:
        env = agent_env(server, workspace)
        proc = subprocess.Popen([sys.executable, "-m", "agent"], cwd=workspace["repo"], env=env)
        deadline = time.monotonic() + 30
        while not started.exists():  # the agent is inside its command
            assert time.monotonic() < deadline and proc.poll() is None, "the agent never ran its command"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) != 0
    trajectory = json.loads((workspace["out"] / "trajectory.json").read_text())
    assert trajectory["exit_reason"] == "terminated"


def test_tools_are_offered_with_tool_choice_auto_spelled_out(workspace: dict[str, Path]) -> None:
    """Issue 20, defect 7: `tools` went without `tool_choice`; some servers then never call a tool."""
    script = [bash_call("true"), final_answer("done")]
    with ScriptedModelServer(script) as server:
        proc = run_agent(server, workspace)
    assert proc.returncode == 0, proc.stderr
    assert len(server.requests) == 2
    for request in server.requests:
        assert request["tools"] and request["tool_choice"] == "auto"


def test_a_tool_call_written_as_text_is_run(workspace: dict[str, Path]) -> None:
    # A small local model's habit: the call's JSON between <tool_call> tags, in the content.
    call = {"name": "bash", "arguments": {"command": "sed -i 's/hello/goodbye/' greet.py"}}
    written = completion(
        {"role": "assistant", "content": f"<tool_call>\n{json.dumps(call)}\n</tool_call>"}, "stop"
    )
    with ScriptedModelServer([written, final_answer("done")]) as server:
        proc = run_agent(server, workspace)
    assert proc.returncode == 0, proc.stderr
    assert (workspace["repo"] / "greet.py").read_text() == 'GREETING = "goodbye"\n'
    tool_reply = server.requests[1]["messages"][-1]
    assert tool_reply["role"] == "tool" and tool_reply["content"] == "Exit code: 0"
