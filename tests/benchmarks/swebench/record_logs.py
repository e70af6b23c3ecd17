"""Record the test logs of fixtures/logs/ by running the fixture instances in Docker.

    python -m tests.benchmarks.swebench.record_logs

Each case's diff is applied as it is, without Clade's filter (so the log shows what the
official harness would see), and the instance's eval script runs in a fresh sandbox of
its image, as Clade grades. Needs swebench 5.x (the fixture eval scripts are 5.x's).
"""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

import docker

from benchmarks.gitops import apply_patch
from benchmarks.swebench import load_harness
from benchmarks.swebench.grading import Resources, run_eval_script
from benchmarks.swebench.tasks import to_task
from benchmarks.swebench.testbed import export_base
from sandbox.docker_images import DockerImages
from sandbox.images.build import ensure_base_image
from sandbox.ownership import give_to_sandbox_user
from sandbox.registry import get_backend
from tests.benchmarks.swebench.agent_diffs import named_diff
from tests.benchmarks.swebench.fixture_set import (
    LOGS,
    build_images,
    instance_rows,
    instances,
    repositories,
)
from tests.benchmarks.swebench.log_cases import log_cases

APPLY_PATCH_FAIL = ">>>>> Patch Apply Failed"


def main() -> None:
    harness = load_harness()
    assert harness.major == 5, "record with swebench 5.x"
    client = docker.from_env()
    owner = f"record-swebench-{uuid.uuid4().hex[:8]}"
    backend = get_backend("docker", owner=owner)
    by_name = {instance.name: instance for instance in instances()}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            repos = repositories(Path(tmp) / "repos")
            images = build_images(client, ensure_base_image(client), repos)
            commits = {name: commit for name, (_, commit) in repos.items()}
            rows = {row["instance_id"]: row for row in instance_rows("swebench-5", commits, images)}
            for case in log_cases():
                if case.diff is None:
                    continue
                instance = by_name[case.instance]
                task = to_task(rows[instance.meta["instance_id"]], harness)
                work = Path(tmp) / case.name
                repo = export_base(DockerImages(client), task, work)
                applied = apply_patch(repo, named_diff(case.diff, instance))
                if not applied.applied:
                    log = f"{APPLY_PATCH_FAIL}:\n{applied.error}\n"
                else:
                    eval_dir = work / "eval"
                    eval_dir.mkdir()
                    (eval_dir / "eval.sh").write_text(harness.test_spec(task.instance()).eval_script)
                    give_to_sandbox_user(repo)
                    run = run_eval_script(
                        task, repo, eval_dir, backend=backend, timeout_s=case.timeout_s, resources=Resources()
                    )
                    assert run.timed_out == case.timed_out, case.name
                    log = run.log
                case.log_file.write_text(log)
                print(f"{case.name}: {len(log)} characters -> {case.log_file.relative_to(LOGS.parent)}")
    finally:
        backend.remove_orphans(owner)


if __name__ == "__main__":
    main()
