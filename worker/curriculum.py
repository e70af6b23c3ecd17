"""A scripted curriculum: model replies that make evolution visible and exactly predictable.

The scripted model (a stand-in for a real LLM, labelled as such) solves a task
only if the solving agent's system prompt carries the rule of the right
generation. Each improvement step appends the next rule to the agent's own
system prompt, so the test or demo knows which child resolves which task:

- the seed resolves `seed` tasks;
- a child whose prompt carries RULE-1 also resolves `gen1` tasks, RULE-2 `gen2`;
- the improvement after the last generation breaks the agent (`broken_after`),
  so its child is rejected at validation and stays visible with the reason;
- the judge (`worker/judge.py`, asked when a run's utility has one) scores an agent that
  changed nothing 0.0 and any other 0.9, so a threshold above 0.9 fails every agent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from benchmarks.base import Task
from worker.llm.script import Script

RULES = [
    "RULE-1: Read the whole function you are fixing, and the callers of it, before you edit.",
    "RULE-2: Check boundary values (empty input, zero, the last element) before you finish.",
]
SYSTEM_PROMPT_FILE = "agent/prompts/system.md"
BROKEN = "this line is not python ("
DIAGNOSIS = "Teach the agent a working rule\n\nAdd the next numbered RULE to its system prompt."
JUDGE_MARKER = "You judge the work of coding agents"  # worker/prompts/judge_system.md
JUDGE_SCORE = 0.9


def _judge_rules() -> list[dict[str, Any]]:
    """The scripted judge's answers: first, since its prompt carries the task's statement too."""

    def answer(score: float, reason: str) -> dict[str, Any]:
        return {"content": json.dumps({"score": score, "reason": f"(scripted judge) {reason}"})}

    return [
        {
            "name": "judge-empty",
            "match": {"system": JUDGE_MARKER, "last_user": r"\(empty: the agent changed nothing\)"},
            "reply": answer(0.0, "the agent changed nothing."),
        },
        {
            "name": "judge",
            "match": {"system": JUDGE_MARKER},
            "reply": answer(JUDGE_SCORE, "a focused change that addresses the task."),
        },
    ]


class Curriculum(BaseModel):
    seed: list[str] = Field(default_factory=list)
    gen1: list[str] = Field(default_factory=list)
    gen2: list[str] = Field(default_factory=list)
    break_after_last: bool = True


def statement_marker(task: Task) -> str:
    """A regex that finds this task's statement (its first line) in a conversation."""
    first = task.problem_statement.strip().splitlines()[0]
    return re.escape(first)


def _fix_replies(task: Task) -> list[dict[str, Any]]:
    command = f"git apply <<'CLADE_PATCH'\n{task.patch}\nCLADE_PATCH\n"
    return [
        {
            "content": "I found the cause; applying the fix.",
            "tool_calls": [{"name": "bash", "arguments": {"command": command}}],
        },
        {"content": f"Fixed {task.instance_id}."},
    ]


def _append_rule(rule: str) -> list[dict[str, Any]]:
    command = f"printf '%s\\n' '- {rule}' >> {SYSTEM_PROMPT_FILE}"
    return [
        {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
        {"content": f"Added to the system prompt: {rule}"},
    ]


def _break_agent() -> list[dict[str, Any]]:
    command = f"printf '%s\\n' '{BROKEN}' >> agent/loop.py"
    return [
        {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
        {"content": "Refactored the loop."},
    ]


def build_script(tasks: Sequence[Task], curriculum: Curriculum) -> Script:
    by_id = {task.instance_id: task for task in tasks}
    rules: list[dict[str, Any]] = _judge_rules()
    # Improvement: the improver is the parent itself, so its system prompt tells its generation.
    improve = {"last_user": "Improve this coding agent"}
    if curriculum.break_after_last:
        rules.append(
            {"name": "improve-breaks", "match": improve | {"system": "RULE-2"}, "replies": _break_agent()}
        )
    rules.append(
        {"name": "improve-rule-2", "match": improve | {"system": "RULE-1"}, "replies": _append_rule(RULES[1])}
    )
    rules.append({"name": "improve-rule-1", "match": improve, "replies": _append_rule(RULES[0])})
    rules.append(
        {
            "name": "diagnose",
            "match": {"system": "You diagnose coding agents"},
            "reply": {"content": DIAGNOSIS},
        }
    )
    for generation, ids in (
        ("RULE-2", curriculum.gen2),
        ("RULE-1", curriculum.gen1),
        (None, curriculum.seed),
    ):
        for task_id in ids:
            task = by_id[task_id]
            match: dict[str, Any] = {"last_user": statement_marker(task)}
            if generation is not None:
                match["system"] = generation
            rules.append({"name": f"solve-{task_id}", "match": match, "replies": _fix_replies(task)})
    return Script.model_validate(
        {
            "version": 1,
            "model": "scripted-curriculum",
            "rules": rules,
            "default": {"content": "I could not find the cause of this issue."},
        }
    )


def expected_resolved(curriculum: Curriculum, generation: int) -> set[str]:
    """The tasks an agent of `generation` (0 = seed, 1 = RULE-1, ...) resolves."""
    levels = [curriculum.seed, curriculum.gen1, curriculum.gen2]
    return {task for level in levels[: generation + 1] for task in level}


# The demo's held-out tasks (cli/demo.py): outside mini-10, of the kinds the rules teach. A failed
# shipment that still removes stock is found by reading the whole function (RULE-1); division by
# zero and a duration with no unit are boundary values (RULE-2). So a held-out pick means something.
DEMO_HELDOUT = ["clade-mini__ledger-3", "clade-mini__calcpy-3", "clade-mini__spanlib-5"]
# The demo's story on clade-mini's mini-10: the seed resolves 3 tasks, RULE-1 adds 3, RULE-2 adds 3;
# on the held-out tasks, the seed none, RULE-1 one, RULE-2 all three.
DEMO_CURRICULUM = Curriculum(
    seed=["clade-mini__textkit-1", "clade-mini__ledger-1", "clade-mini__spanlib-2"],
    gen1=["clade-mini__spanlib-1", "clade-mini__calcpy-1", "clade-mini__ledger-2", DEMO_HELDOUT[0]],
    gen2=["clade-mini__textkit-2", "clade-mini__calcpy-2", "clade-mini__textkit-3", *DEMO_HELDOUT[1:]],
)
