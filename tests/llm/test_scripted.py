"""The scripted model: rules, determinism, script validation, and the server it runs in."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from worker.llm.config_files import ConfigFileError
from worker.llm.script import Conversation, Script, ScriptedModel, count_tokens, load_script
from worker.llm.scripted import ScriptedServer

from .support import FIX_SCRIPT, ask, fix_script

pytestmark = pytest.mark.timeout(30)


def reply_of(engine: ScriptedModel, messages: list[dict[str, Any]], **body: Any) -> dict[str, Any]:
    _, response = engine.respond({"model": "scripted", "messages": messages, **body})
    message: dict[str, Any] = response["choices"][0]["message"]
    return message


def test_same_request_gets_byte_identical_response_over_http() -> None:
    with ScriptedServer(fix_script()) as server, httpx.Client(base_url=server.base_url) as http:
        body = {"model": "scripted", "messages": ask("Fix the off-by-one")}
        first = http.post("/chat/completions", json=body)
        second = http.post("/chat/completions", json=body)
    assert first.status_code == 200
    assert first.content == second.content
    assert first.headers["x-clade-scripted"] == "true"
    assert first.headers["x-clade-rule"] == "fix-off-by-one"
    # a fresh server (same script) answers the same too
    with ScriptedServer(fix_script()) as again, httpx.Client(base_url=again.base_url) as http:
        assert http.post("/chat/completions", json=body).content == first.content


def test_replies_follow_the_turn_index() -> None:
    model = ScriptedModel(fix_script())
    messages: list[dict[str, Any]] = ask("please fix the OFF-BY-ONE")
    commands = []
    for _ in range(2):
        message = reply_of(model, messages)
        commands.append(json.loads(message["tool_calls"][0]["function"]["arguments"])["command"])
        messages += [message, {"role": "tool", "tool_call_id": "x", "content": "ok"}]
    assert commands == ["cat counter.py", "sed -i 's/n - 1/n/' counter.py"]
    final = reply_of(model, messages)
    assert final == {"role": "assistant", "content": "Fixed: the loop now runs n times."}
    # past the end of `replies` the rule no longer matches: the default answers
    messages += [final, {"role": "user", "content": "and the off-by-one again?"}]
    assert reply_of(model, messages)["content"] == "nothing to do"


def test_first_matching_rule_wins_and_default_catches_the_rest() -> None:
    script = Script.model_validate(
        {
            "rules": [
                {"match": {"last_user": "apple"}, "reply": {"content": "first"}},
                {"match": {"last_user": "apple|pear"}, "reply": {"content": "second"}},
            ]
        }
    )
    model = ScriptedModel(script)
    assert reply_of(model, ask("apple pie"))["content"] == "first"
    assert reply_of(model, ask("pear"))["content"] == "second"
    assert "no rule matched" in reply_of(model, ask("plum"))["content"]


def test_match_conditions() -> None:
    script = Script.model_validate(
        {
            "rules": [
                {"match": {"model": "^scripted-b"}, "reply": {"content": "model"}},
                {"match": {"last_tool_result": "FAILED"}, "reply": {"content": "last tool"}},
                {"match": {"tool_results": "secret"}, "reply": {"content": "any tool"}},
                {"match": {"min_assistant_turns": 3}, "reply": {"content": "many turns"}},
                {"match": {"any": "^needle$"}, "reply": {"content": "any"}},
                {"match": {"system": "(?i)reviewer"}, "reply": {"content": "system"}},
            ]
        }
    )
    model = ScriptedModel(script)
    tool = [{"role": "assistant", "content": "x"}]
    assert reply_of(model, ask("hi"), model="scripted-b1")["content"] == "model"

    def with_tools(*results: str) -> list[dict[str, Any]]:
        out = ask("hi")
        for result in results:
            out += [*tool, {"role": "tool", "tool_call_id": "t", "content": result}]
        return out

    assert reply_of(model, with_tools("secret", "FAILED"))["content"] == "last tool"
    assert reply_of(model, with_tools("secret", "passed"))["content"] == "any tool"
    assert reply_of(model, with_tools("a", "b", "c"))["content"] == "many turns"
    assert reply_of(model, ask("hay\nneedle\nhay"))["content"] == "any"  # MULTILINE
    assert reply_of(model, ask("hi", system="You are a Reviewer"))["content"] == "system"


def test_times_limits_a_rule_then_falls_through() -> None:
    script = Script.model_validate(
        {
            "rules": [
                {"times": 2, "reply": {"content": "limited"}},
                {"reply": {"content": "after"}},
            ]
        }
    )
    model = ScriptedModel(script)
    assert [reply_of(model, ask("x"))["content"] for _ in range(3)] == [
        "limited",
        "limited",
        "after",
    ]


def test_usage_is_a_deterministic_count() -> None:
    model = ScriptedModel(fix_script())
    messages = ask("hello")
    _, response = model.respond({"model": "scripted", "messages": messages})
    prompt = sum(4 + count_tokens(m["content"]) for m in messages)
    assert response["usage"] == {
        "prompt_tokens": prompt,
        "completion_tokens": count_tokens("hi there"),
        "total_tokens": prompt + count_tokens("hi there"),
    }


def test_it_says_it_is_scripted_everywhere(caplog: pytest.LogCaptureFixture) -> None:
    with ScriptedServer(fix_script()) as server, httpx.Client(base_url=server.base_url) as http:
        models = http.get("/models").json()
        response = http.post("/chat/completions", json={"model": "gpt-4o", "messages": ask("x")})
    assert "SCRIPTED model server" in caplog.text and "not a real LLM" in caplog.text
    assert [m["id"] for m in models["data"]] == ["scripted-fixer"]
    assert response.json()["model"] == "scripted-fixer"  # never claims to be gpt-4o
    assert response.json()["system_fingerprint"] == "clade-scripted"


def test_api_key_is_demanded_when_configured() -> None:
    with ScriptedServer(fix_script(), api_key="k1") as server:
        body = {"model": "scripted", "messages": ask("hello")}
        with httpx.Client(base_url=server.base_url) as http:
            assert http.post("/chat/completions", json=body).status_code == 401
            ok = http.post("/chat/completions", json=body, headers={"Authorization": "Bearer k1"})
        assert ok.status_code == 200
        assert [r.authorization for r in server.requests] == [None, "Bearer k1"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda s: s["rules"][0]["match"].update(last_usr="x"), "rules.0.match.last_usr"),
        (lambda s: s["rules"][1]["match"].update(system="(unclosed"), "rules.1.match.system"),
        (lambda s: s["rules"][1].update(replies=[{"content": "y"}]), "rules.1"),
        (lambda s: s["rules"][1].update(reply={}), "rules.1.reply"),
        (lambda s: s.update(model="gpt-4o"), "model"),
        (lambda s: s["rules"][0].update(times=0), "rules.0.times"),
        (
            lambda s: s["rules"][0]["replies"][0]["tool_calls"][0].pop("name"),
            "rules.0.replies.0.tool_calls.0.name",
        ),
    ],
)
def test_invalid_script_error_names_the_field(tmp_path: Path, change: Any, field: str) -> None:
    data = json.loads(json.dumps(FIX_SCRIPT))
    change(data)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigFileError) as caught:
        load_script(path)
    assert re.search(rf"(^|[\s:]){re.escape(field)}:", str(caught.value)), str(caught.value)
    assert str(path) in str(caught.value)


def test_scripted_md_example_is_a_valid_script(tmp_path: Path) -> None:
    doc = (Path(__file__).parents[2] / "worker/llm/SCRIPTED.md").read_text()
    example = doc.split("```yaml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "example.yaml"
    path.write_text(example)
    script = load_script(path)
    conv = Conversation.of({"model": "scripted", "messages": ask("fix the off-by-one")})
    label, reply = ScriptedModel(script).choose(conv)
    assert label == "fix-off-by-one" and reply.tool_calls[0].name == "bash"


def test_command_line_server(tmp_path: Path) -> None:
    path = tmp_path / "script.yaml"
    path.write_text(yaml.safe_dump(FIX_SCRIPT))
    command = [sys.executable, "-m", "worker.llm.scripted", "--script", str(path), "--port", "0"]
    proc = subprocess.Popen(
        [*command, "--ready-file", str(tmp_path / "ready")],
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "SCRIPTED model server" in line and "not a real LLM" in line
        found = re.search(r"(http://127\.0\.0\.1:\d+/v1)", line)
        assert found, line
        # The port it got, also in the ready file (written before the line above).
        assert (tmp_path / "ready").read_text() == found.group(1) + "\n"
        response = httpx.post(
            f"{found.group(1)}/chat/completions",
            json={"model": "scripted", "messages": ask("hello")},
        )
        assert response.json()["choices"][0]["message"]["content"] == "hi there"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()


def test_command_line_refuses_an_invalid_script(tmp_path: Path) -> None:
    path = tmp_path / "script.yaml"
    path.write_text("rules:\n  - reply: {content: hi}\n    when: {}\n")
    done = subprocess.run(
        [sys.executable, "-m", "worker.llm.scripted", "--script", str(path)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parents[2],
        timeout=20,
    )
    assert done.returncode == 2
    assert "rules.0.when" in done.stderr
