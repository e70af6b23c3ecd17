"""SWE-bench through the worker's real evaluation path: the agent runs in the instance image.

The fixture instances (tests/benchmarks/swebench/fixture_set.py) are built here from
Clade's base image, then derived twice, each with a marker file that only the instance
image holds (`/etc/clade-instance`):

  clade-venv   the fixture image as built (it carries Clade's venv, first on its PATH)
  own-python   Clade's venv moved to /opt/testbed-env, first on PATH and without `openai`:
               an image with a python of its own and no Clade venv, like a real SWE-bench
               image with its conda env; the agent runs on Clade's runtime mount regardless

A run on `benchmark: {name: swebench, options: {dataset: ...}}` with the seed agent, one
tick of the driver, `worker.evaluate.evaluate`; the scripted model makes the seed agent
apply the gold patch through its bash tool, and prints where it is and which python is which.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from benchmarks.registry import benchmark_config
from benchmarks.swebench import load_harness
from sandbox.images.layers import VENV
from sandbox.images.runtime import RUNTIME_PYTHON
from tests.benchmarks.swebench.fixture_set import build_images, instance_rows, instances, repositories
from tests.worker.foreign_images import derive
from tests.worker.harness import Evaluated, EvaluationStack, evaluation_stack
from worker.llm.script import Match, Reply, Rule, Script, ToolCall

pytestmark = pytest.mark.docker

SEED_AGENT = Path(__file__).resolve().parents[2] / "seed_agent"
MARKER = "/etc/clade-instance"
REPO_ENV = "/opt/testbed-env"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
VARIANTS = ("clade-venv", "own-python")
INSTANCES = {instance.meta["instance_id"]: instance for instance in instances()}
SOLVED = "clade-fixtures__tinyinv-1"  # the scripted model applies its gold patch
UNSOLVED = "clade-fixtures__wrapkit-1"  # no rule matches: the agent stops without a change
LIMITS: dict[str, Any] = {"solve_timeout_s": 60, "test_timeout_s": 90, "memory_mb": 1024, "pids": 256}


def probe_command() -> str:
    """What the agent prints first: where it is, the marker, and which python is which."""
    return "; ".join(
        [
            "echo PWD=$(pwd)",
            f"echo MARKER=$(cat {MARKER})",
            "echo COMMAND_PYTHON=$(command -v python)",
            'echo IMAGE_PYTHON=$(PATH="$CLADE_IMAGE_PATH" command -v python)',
            "echo CLADE_PYTHON=$CLADE_PYTHON",
            '"$CLADE_PYTHON" -c \'import openai; print("AGENT_OPENAI=ok")\'',
            "PATH=\"$CLADE_IMAGE_PATH\" python -c 'import openai' 2>/dev/null"
            " && echo IMAGE_OPENAI=yes || echo IMAGE_OPENAI=no",
        ]
    )


def apply_command(gold: str) -> str:
    heredoc = f"cat > /tmp/gold.patch <<'CLADE_EOF'\n{gold}\nCLADE_EOF\n"
    return heredoc + "git apply /tmp/gold.patch && git status --short"


def script() -> Script:
    solved = INSTANCES[SOLVED]
    first_line = solved.statement.splitlines()[0]
    return Script(
        model="scripted",
        rules=[
            Rule(
                name="apply-gold",
                match=Match(last_user=re.escape(first_line)),
                replies=[
                    Reply(tool_calls=[ToolCall(name="bash", arguments={"command": probe_command()})]),
                    Reply(
                        tool_calls=[ToolCall(name="bash", arguments={"command": apply_command(solved.gold)})]
                    ),
                    Reply(content="(scripted) applied the fix"),
                ],
            )
        ],
        default=Reply(content="(scripted) nothing to do"),
    )


def variant_images(client: Any, images: dict[str, str], variant: str) -> dict[str, str]:
    derived = {}
    for repo, image in images.items():
        marker = f"echo 'instance image of {repo} ({variant})' > {MARKER}"
        if variant == "clade-venv":
            derived[repo] = derive(client, image, f"{repo}-{variant}", [marker], ["WORKDIR /testbed"])
            continue
        commands = [
            f"cp -a {VENV} {REPO_ENV} && rm -rf {VENV}",
            f"{REPO_ENV}/bin/python -m pip uninstall --yes --disable-pip-version-check openai",
            marker,
        ]
        changes = [
            "WORKDIR /testbed",
            f"ENV PATH={REPO_ENV}/bin:{SYSTEM_PATH}",
            'LABEL dev.clade.venv="none"',
        ]
        derived[repo] = derive(client, image, f"{repo}-{variant}", commands, changes)
    return derived


@dataclass
class Datasets:
    images: dict[str, dict[str, str]]  # variant -> repository -> image
    files: dict[str, Path]  # variant -> dataset file


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory, docker_client: Any, base_image: str) -> Datasets:
    root = tmp_path_factory.mktemp("swebench")
    repos = repositories(root / "repos")
    images = build_images(docker_client, base_image, repos)
    commits = {name: commit for name, (_, commit) in repos.items()}
    fmt = load_harness().instance_format
    by_variant = {variant: variant_images(docker_client, images, variant) for variant in VARIANTS}
    files = {}
    for variant, derived in by_variant.items():
        path = root / f"{variant}.jsonl"
        path.write_text("".join(json.dumps(row) + "\n" for row in instance_rows(fmt, commits, derived)))
        files[variant] = path
    return Datasets(by_variant, files)


@pytest.fixture(scope="module")
def swebench_stack(
    tmp_path_factory: pytest.TempPathFactory, datasets: Datasets, secret: str
) -> Iterator[EvaluationStack]:
    owner = f"test-worker-{uuid.uuid4().hex[:10]}"
    benchmark = {"name": "swebench", "options": {"dataset": str(datasets.files["clade-venv"])}}
    with evaluation_stack(
        tmp_path_factory.mktemp("stack"),
        secret=secret,
        owner=owner,
        script=script(),
        benchmark=benchmark,
        task_id=SOLVED,
    ) as started:
        yield started


def evaluate(stack: EvaluationStack, datasets: Datasets, variant: str, task_id: str) -> Evaluated:
    benchmark = {"name": "swebench", "options": {"dataset": str(datasets.files[variant])}}
    return stack.evaluate(SEED_AGENT, benchmark=benchmark, task_id=task_id, **LIMITS)


def tool_outputs(evaluated: Evaluated) -> list[str]:
    trajectory = evaluated.result.trajectory
    assert isinstance(trajectory, dict), evaluated.result.agent_log
    return [call["output"] for step in trajectory["steps"] for call in step["tool_calls"]]


def printed(output: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in output.splitlines() if "=" in line)


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_agent_resolves_the_instance_in_its_own_image(
    swebench_stack: EvaluationStack, datasets: Datasets, variant: str
) -> None:
    evaluated = evaluate(swebench_stack, datasets, variant, SOLVED)
    result = evaluated.result
    assert result.failure is None, f"{result.failure}\n{result.agent_log}"
    assert result.resolved, f"{result.grade_reason}\n{result.test_log}\n{result.agent_log}"
    assert result.patch_applied and evaluated.returned.resolved
    assert evaluated.detail["status"] == "done" and evaluated.detail["resolved"] is True

    # Per-test statuses, as the service recorded them.
    instance = INSTANCES[SOLVED]
    assert result.fail_to_pass == {test: "PASSED" for test in instance.meta["FAIL_TO_PASS"]}
    assert result.pass_to_pass == {test: "PASSED" for test in instance.meta["PASS_TO_PASS"]}
    assert all(result.tests[test] == "PASSED" for test in instance.meta["FAIL_TO_PASS"])
    assert "tinyinv/stock.py" in result.diff and "InsufficientStock" in result.diff

    # The agent ran in the instance image, at /testbed, on Clade's python, while the commands
    # its bash tool runs find the image's own python first (the seed agent restores the PATH).
    outputs = tool_outputs(evaluated)
    seen = printed(outputs[0])
    assert seen["PWD"] == "/testbed", outputs[0]
    assert seen["MARKER"] == f"instance image of tinyinv ({variant})", outputs[0]
    assert seen["CLADE_PYTHON"] == RUNTIME_PYTHON
    assert seen["AGENT_OPENAI"] == "ok"
    assert seen["COMMAND_PYTHON"] == seen["IMAGE_PYTHON"]
    if variant == "own-python":
        assert seen["IMAGE_PYTHON"] == f"{REPO_ENV}/bin/python", outputs[0]
        assert seen["IMAGE_OPENAI"] == "no", outputs[0]
    assert "M tinyinv/stock.py" in outputs[1], outputs[1]


def test_the_task_image_is_used_as_it_is(
    swebench_stack: EvaluationStack, datasets: Datasets, docker_client: Any
) -> None:
    image = datasets.images["own-python"]["tinyinv"]
    task = next(
        t
        for t in swebench_stack.ctx.catalog.get(
            benchmark_config("swebench", {"dataset": str(datasets.files["own-python"])})
        ).tasks()
        if t.instance_id == SOLVED
    )
    assert task.image == image
    assert swebench_stack.ctx.images.for_task(task, []) == image
    env = dict(item.split("=", 1) for item in docker_client.images.get(image).attrs["Config"]["Env"])
    assert env["PATH"] == f"{REPO_ENV}/bin:{SYSTEM_PATH}"


@pytest.mark.parametrize("variant", VARIANTS)
def test_an_empty_handed_agent_is_not_resolved(
    swebench_stack: EvaluationStack, datasets: Datasets, variant: str
) -> None:
    evaluated = evaluate(swebench_stack, datasets, variant, UNSOLVED)
    result = evaluated.result
    assert result.failure is None, f"{result.failure}\n{result.agent_log}"
    assert not result.resolved and not evaluated.returned.resolved
    assert evaluated.detail["status"] == "done" and evaluated.detail["resolved"] is False
    assert result.diff == ""
    instance = INSTANCES[UNSOLVED]
    assert result.fail_to_pass == {test: "FAILED" for test in instance.meta["FAIL_TO_PASS"]}
    assert result.pass_to_pass == {test: "PASSED" for test in instance.meta["PASS_TO_PASS"]}
    assert result.grade_reason.startswith("not resolved")
