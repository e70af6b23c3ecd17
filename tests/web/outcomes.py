"""What a recorded evaluation holds: test statuses, logs, a diff and a trajectory per (agent, task).

Made up, but in the shapes the worker sends (`worker/evaluate.py`, the seed agent's
trajectory schema), so that the dashboard is shown what a real run records.
"""

from __future__ import annotations

from typing import Any

from contracts.records import Durations, EvaluationResult, UsageRecord

SOLVE_MODEL = "scripted"  # the recorded archive says so wherever a model name appears


def _package(task_id: str) -> tuple[str, int]:
    name = task_id.split("__", 1)[-1]
    package, _, number = name.rpartition("-")
    return package, int(number)


FORGED_EVIDENCE = "the must-fail canary test_keeps_empty_value was reported PASSED"
DROPPED_CONFTEST = {"conftest.py": "conftest.py: pytest loads it as a plugin"}


def task_result(task_id: str, *, resolved: bool, attempt: int, tampered: bool = False) -> EvaluationResult:
    package, number = _package(task_id)
    fix = f"tests/test_{package}.py::test_issue_{number}"
    keep = [f"tests/test_{package}.py::test_basics", f"tests/test_{package}.py::test_roundtrip"]
    fixed = "PASSED" if resolved else "FAILED"
    tests = {fix: fixed} | dict.fromkeys(keep, "PASSED")
    diff = (
        f"diff --git a/{package}/core.py b/{package}/core.py\n"
        f"--- a/{package}/core.py\n+++ b/{package}/core.py\n"
        "@@ -10,7 +10,7 @@ def handle(value):\n"
        "     if value is None:\n"
        "         return None\n"
        f"-    return value[:{number}]\n"
        f"+    return value[:{number + (1 if resolved else 2)}]\n"
        " \n"
        " \n"
        " def other():\n"
    )
    lines = [f"{name} {status}" for name, status in tests.items()]
    failure = (
        ""
        if resolved
        else (
            f"\n___ test_issue_{number} ___\n"
            f"    def test_issue_{number}():\n"
            f">       assert handle('abcdef') == 'abcdef'[:{number + 1}]\n"
            f"E       AssertionError: assert 'abcdef'[:{number + 2}] == 'abcdef'[:{number + 1}]\n"
        )
    )
    summary = "3 passed" if resolved else "1 failed, 2 passed"
    test_log = "\n".join(lines) + "\n" + failure + f"\n======== {summary} in 0.{attempt + 2}1s ========\n"
    if tampered:  # what grading records for an agent that forged its pass (pytest_grading.py)
        return EvaluationResult(
            resolved=False,
            grade_reason=f"tampered: {FORGED_EVIDENCE}; left out of grading: conftest.py",
            diff=diff,
            trajectory=_trajectory(package, number, diff),
            test_log=test_log,
            agent_exit_code=0,
            dropped_for_grading=DROPPED_CONFTEST,
            tampered=FORGED_EVIDENCE,
        )
    return EvaluationResult(
        resolved=resolved,
        grade_reason="all FAIL_TO_PASS and PASS_TO_PASS tests pass"
        if resolved
        else f"FAIL_TO_PASS test failed: {fix}",
        tests=tests,
        fail_to_pass={fix: fixed},
        pass_to_pass=dict.fromkeys(keep, "PASSED"),
        diff=diff,
        trajectory=_trajectory(package, number, diff),
        agent_log=f"$ cat {package}/core.py\n$ python -m pytest -q tests\n",
        test_log=test_log,
        agent_exit_code=0,
        durations=Durations(setup_s=0.4, agent_s=3.1 + attempt % 3, grade_s=1.2, total_s=4.9 + attempt % 3),
    )


def _trajectory(package: str, number: int, diff: str) -> dict[str, Any]:
    call = {"id": "call_1", "type": "function", "function": {"name": "bash"}}
    messages = [
        {"role": "system", "content": "You are a careful software engineer with one tool: bash."},
        {"role": "user", "content": f"Fix issue {number} of {package}: handle() cuts values too short."},
        {
            "role": "assistant",
            "content": "Let me read the module first.",
            "tool_calls": [
                {**call, "function": {"name": "bash", "arguments": f'{{"command": "cat {package}/core.py"}}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "def handle(value):\n    ...\n"},
        {
            "role": "assistant",
            "content": "I will widen the slice and run the tests.",
            "tool_calls": [
                {**call, "id": "call_2", "function": {"name": "bash", "arguments": '{"command": "git diff"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_2", "content": diff},
        # The agent writes its trajectory: a role may be anything, e.g. class names of the page.
        {"role": "assistant error-box hidden", "content": "(a role the dashboard does not know)"},
        {"role": "assistant", "content": "The fix is in place."},
    ]
    return {
        "schema_version": 1,
        "agent": "clade-seed/0.1.0",
        "model": SOLVE_MODEL,
        "exit_reason": "completed",
        "error": None,
        "usage": {"prompt_tokens": 2400, "completion_tokens": 310, "total_tokens": 2710, "model_calls": 3},
        "messages": messages,
        "steps": [],
    }


def solve_usage(attempt: int) -> list[UsageRecord]:
    return [
        UsageRecord(
            purpose="solve",
            model=SOLVE_MODEL,
            prompt_tokens=800 + 40 * (attempt % 5),
            completion_tokens=100 + 10 * (attempt % 3),
            cost_usd=0.0009 + 0.0001 * (attempt % 4),
        )
        for _ in range(3)
    ]


def step_usage(number: int) -> list[UsageRecord]:
    return [
        UsageRecord(
            purpose="diagnose", model=SOLVE_MODEL, prompt_tokens=3200, completion_tokens=420, cost_usd=0.006
        ),
        UsageRecord(
            purpose="improve",
            model=SOLVE_MODEL,
            prompt_tokens=5100 + 100 * number,
            completion_tokens=900,
            cost_usd=0.011 + 0.001 * number,
        ),
    ]
