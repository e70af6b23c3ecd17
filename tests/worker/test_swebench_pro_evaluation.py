"""SWE-bench Pro through the worker's real evaluation path: the agent runs in the instance
image (the Polyglot toolchain image with the Go fixture repository at /app), the scripted
model makes the seed agent apply the gold patch, and the grade comes from the instance's own
run script and parser (tests/benchmarks/swebench_pro/fixture_set.py)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sandbox.docker_images import DockerImages
from tests.benchmarks.swebench_pro.fixture_set import (
    IMAGE_REPOSITORY,
    RUN_SCRIPTS,
    build_images,
    repositories,
    rows,
    write_jsonl,
)
from tests.images import required_polyglot_image
from tests.worker.harness import Evaluated, EvaluationStack, evaluation_stack
from worker.llm.script import Match, Reply, Rule, Script, ToolCall

pytestmark = pytest.mark.docker

SEED_AGENT = Path(__file__).resolve().parents[2] / "seed_agent"
SOLVED = "instance_clade-fixtures__gosum-7a41c2b9"  # the scripted model applies its gold patch
UNSOLVED = "instance_clade-fixtures__jsslug-c93e0d14-vnan"  # no rule matches: no change
LIMITS: dict[str, Any] = {"solve_timeout_s": 60, "test_timeout_s": 120, "memory_mb": 1024, "pids": 256}


@dataclass(frozen=True)
class ProRows:
    dataset: Path
    gold: str


def script(gold: str) -> Script:
    first_line = "Sum ignores negative numbers."
    apply = (
        f"echo PWD=$(pwd)\ncat > /tmp/gold.patch <<'CLADE_EOF'\n{gold}\nCLADE_EOF\ngit apply /tmp/gold.patch"
    )
    return Script(
        model="scripted",
        rules=[
            Rule(
                name="apply-gold",
                match=Match(last_user=re.escape(first_line)),
                replies=[
                    Reply(tool_calls=[ToolCall(name="bash", arguments={"command": apply})]),
                    Reply(content="(scripted) applied the fix"),
                ],
            )
        ],
        default=Reply(content="(scripted) nothing to do"),
    )


@pytest.fixture(scope="module")
def pro_rows(tmp_path_factory: pytest.TempPathFactory, docker_client: Any) -> ProRows:
    root = tmp_path_factory.mktemp("swebench-pro")
    repos = repositories(root / "repos")
    toolchain = required_polyglot_image(DockerImages(docker_client))
    images = build_images(docker_client, toolchain, repos)
    return ProRows(dataset=write_jsonl(rows(repos, images), root / "rows.jsonl"), gold=repos["gosum"].gold)


def benchmark(rows_file: Path) -> dict[str, Any]:
    options = {"dataset": str(rows_file), "scripts": str(RUN_SCRIPTS), "image_repository": IMAGE_REPOSITORY}
    return {"name": "swebench-pro", "options": options}


@pytest.fixture(scope="module")
def pro_stack(
    tmp_path_factory: pytest.TempPathFactory, pro_rows: ProRows, secret: str
) -> Iterator[EvaluationStack]:
    with evaluation_stack(
        tmp_path_factory.mktemp("stack"),
        secret=secret,
        owner=f"test-worker-{uuid.uuid4().hex[:10]}",
        script=script(pro_rows.gold),
        benchmark=benchmark(pro_rows.dataset),
        task_id=SOLVED,
    ) as started:
        yield started


def evaluate(stack: EvaluationStack, pro_rows: ProRows, task_id: str) -> Evaluated:
    return stack.evaluate(SEED_AGENT, benchmark=benchmark(pro_rows.dataset), task_id=task_id, **LIMITS)


def test_the_agent_resolves_a_pro_instance_in_its_image(
    pro_stack: EvaluationStack, pro_rows: ProRows
) -> None:
    evaluated = evaluate(pro_stack, pro_rows, SOLVED)
    result = evaluated.result
    assert result.failure is None, f"{result.failure}\n{result.agent_log}"
    assert result.resolved, f"{result.grade_reason}\n{result.test_log}\n{result.agent_log}"
    assert evaluated.detail["status"] == "done" and evaluated.detail["resolved"] is True
    assert result.fail_to_pass == {"TestSumNegative": "PASSED"}
    assert result.pass_to_pass == {"TestSumPositive": "PASSED"}
    assert "sum.go" in result.diff
    trajectory = result.trajectory
    assert isinstance(trajectory, dict)
    first = trajectory["steps"][0]["tool_calls"][0]["output"]
    assert "PWD=/app" in first, first  # the agent worked where Pro's images hold the repository


def test_an_empty_handed_agent_is_not_resolved(pro_stack: EvaluationStack, pro_rows: ProRows) -> None:
    evaluated = evaluate(pro_stack, pro_rows, UNSOLVED)
    result = evaluated.result
    assert result.failure is None, f"{result.failure}\n{result.agent_log}"
    assert not result.resolved and result.diff == ""
    assert result.fail_to_pass == {"test/slug.test.js | joins every word with a dash": "FAILED"}
    assert result.grade_reason.startswith("not resolved")
