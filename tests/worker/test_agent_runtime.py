"""The seed agent runs in task images that are not Clade's, on Clade's runtime.

Three images (tests/worker/foreign_images.py): Debian bullseye with python 3.9 and glibc
2.31, an image with no python at all, and a conda-like testbed whose repository python is
not first on the image's PATH. In each, the worker's agent runner starts the real seed
agent (Python 3.11 from the read-only runtime mount) against the scripted model; the
agent's bash tool prints which python its commands find, then changes the repository,
and the host takes the diff.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.swebench.harness import TESTBED_BIN
from contracts.config import LimitsConfig
from contracts.manifest import MANIFEST_FILE, parse_manifest
from sandbox.images.runtime import RUNTIME_PYTHON
from tests.helpers import tar_of
from tests.images import NO_LIBC_WORK, required
from tests.worker.foreign_images import MARKER, TESTBED_PYTHON, foreign_images, no_libc_image
from tests.worker.harness import EvaluationStack, evaluation_stack, make_agent
from worker.agent_runner import AgentOutcome, AgentRun, run_agent
from worker.llm import Budget
from worker.llm.script import Match, Reply, Rule, Script, ToolCall
from worker.workspace import init_repo

pytestmark = pytest.mark.docker

SEED_AGENT = Path(__file__).resolve().parents[2] / "seed_agent"
STATEMENT = "Record which image you ran in, in FIXED.txt."
PROBE = "; ".join(
    [
        f"echo IMAGE=$(cat {MARKER})",
        "echo PYTHON=$(command -v python || echo none)",
        "echo PYTHON3=$(command -v python3 || echo none)",
        "echo PYTHON_VERSION=$(python3 -c 'import sys; print(sys.version_info[1])' 2>/dev/null || echo none)",
        '"$CLADE_PYTHON" -c \'import sys, openai; print("AGENT_PYTHON=%d.%d" % sys.version_info[:2])\'',
        # As a compiler's test binary would: a program written to /tmp runs there.
        "cp \"$(command -v sh)\" /tmp/built-here; echo TMP_EXEC=$(/tmp/built-here -c 'echo yes' || echo no)",
    ]
)
EDIT = f'echo "fixed in $(cat {MARKER})" > FIXED.txt && git status --short'


def script() -> Script:
    return Script(
        model="scripted",
        rules=[
            Rule(
                name="probe-and-fix",
                match=Match(last_user=re.escape(STATEMENT)),
                replies=[
                    Reply(tool_calls=[ToolCall(name="bash", arguments={"command": PROBE})]),
                    Reply(tool_calls=[ToolCall(name="bash", arguments={"command": EDIT})]),
                    Reply(content="(scripted) done"),
                ],
            )
        ],
        default=Reply(content="(scripted) nothing to do"),
    )


@pytest.fixture(scope="module")
def images(docker_client: Any, base_image: str) -> dict[str, str]:
    del base_image  # the no-python image is derived from its OS layer
    images: dict[str, str] = required(docker_client, foreign_images)
    return images


@pytest.fixture(scope="module")
def runtime_stack(tmp_path_factory: pytest.TempPathFactory, secret: str) -> Iterator[EvaluationStack]:
    owner = f"test-worker-{uuid.uuid4().hex[:10]}"
    with evaluation_stack(
        tmp_path_factory.mktemp("stack"), secret=secret, owner=owner, script=script()
    ) as started:
        yield started


def run_seed(
    stack: EvaluationStack, image: str, tools_path: list[str], agent: Path = SEED_AGENT
) -> AgentOutcome:
    code = tar_of(agent)
    manifest = parse_manifest((agent / MANIFEST_FILE).read_bytes())

    def prepare(dest: Path) -> None:
        (dest / "README.md").write_text("a repository\n")
        init_repo(dest, "base")

    return run_agent(
        stack.ctx,
        AgentRun(
            agent_code=code,
            manifest=manifest,
            statement=STATEMENT,
            prepare_repo=prepare,
            repo_path="/testbed",
            model="scripted",
            purpose="solve",
            timeout_s=60,
            limits=LimitsConfig(memory_mb=512, max_agent_steps=5),
            budget=Budget(),
            image=image,
            runtime=stack.ctx.images.runtime(manifest.requirements),
            tools_path=tools_path,
        ),
    )


def printed(outcome: AgentOutcome) -> dict[str, str]:
    trajectory = outcome.trajectory
    assert isinstance(trajectory, dict), outcome.log
    outputs = [call["output"] for step in trajectory["steps"] for call in step["tool_calls"]]
    assert len(outputs) == 2, outputs
    assert "?? FIXED.txt" in outputs[1], outputs[1]
    return dict(line.split("=", 1) for line in outputs[0].splitlines() if "=" in line)


CASES = {
    # image name: (tools_path, python, python3, its minor version)
    "python39": ([], "none", "/usr/bin/python3", "9"),
    "no-python": ([], "none", "none", "none"),
    "conda": ([TESTBED_BIN], TESTBED_PYTHON, f"{TESTBED_BIN}/python3", "9"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_seed_agent_runs_in_an_image_whatever_its_python(
    runtime_stack: EvaluationStack, images: dict[str, str], name: str
) -> None:
    tools_path, python, python3, minor = CASES[name]
    outcome = run_seed(runtime_stack, images[name], tools_path)
    assert outcome.failure is None, f"{outcome.failure}\n{outcome.log}"
    assert outcome.exit_code == 0 and not outcome.timed_out
    assert f"+fixed in {name}" in outcome.diff, outcome.diff
    seen = printed(outcome)
    assert seen["IMAGE"] == name
    # The agent itself: Clade's Python 3.11 with its requirements, from the runtime mount.
    assert seen["AGENT_PYTHON"] == "3.11"
    # Its commands: the image's own python, or none; the runtime is not on their PATH.
    assert seen["PYTHON"] == python
    assert seen["PYTHON3"] == python3
    assert seen["PYTHON_VERSION"] == minor
    assert not seen["PYTHON3"].startswith(RUNTIME_PYTHON.rsplit("/", 3)[0])
    assert seen["TMP_EXEC"] == "yes"  # the agent can run its task's Go, Rust or C++ tests


def test_an_agent_runs_in_an_image_without_a_c_library(
    runtime_stack: EvaluationStack, docker_client: Any, tmp_path: Path
) -> None:
    image = required(docker_client, no_libc_image, NO_LIBC_WORK)
    agent = make_agent(tmp_path / "agent", "runtime_probe")
    # A C++ extension: its wheel's own RUNPATH must still lead to the runtime's libstdc++.
    with (agent / MANIFEST_FILE).open("a") as manifest:
        manifest.write('requirements = ["numpy"]\n')
    outcome = run_seed(runtime_stack, image, [], agent)
    assert outcome.failure is None, f"{outcome.failure}\n{outcome.log}"
    found = json.loads(next(line for line in outcome.diff.splitlines() if line.startswith("+{"))[1:])
    assert found["image"] == "no-libc" and found["image_has_libc"] is False
    # Clade's Python, its own glibc and OpenSSL, and the model reached through the forwarder.
    assert found["python"] == "3.11" and found["libc"] == "glibc" and found["ssl"] == "OpenSSL"
    assert found["executable"] == RUNTIME_PYTHON
    assert found["model"] == "(scripted) nothing to do"
    assert found["numpy"] == "15"
