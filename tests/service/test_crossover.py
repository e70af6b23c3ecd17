"""Crossover: a child merging two parents' changes, made with real git by the real run driver.

Two children of the seed change different files (a clean merge) or the same line (a conflict);
the third step is then a crossover of the better one with the other. The workers are played by
the test, as in test_driver.py; the improver that resolves a conflict is the real improve job
with its sandboxed agent replaced by an edit of the prepared repository.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from benchmarks.catalog import BenchmarkCatalog
from contracts.errors import PatchError
from contracts.jobs import EvaluateJob, ImproveJob
from service.archive import consistency
from service.archive.git_store import GitStore, MergeConflictError
from service.archive.limits import AgentLimits, TooLargeError
from service.db.models import Agent, Step
from service.driver.crossover import crossover_stream
from service.driver.loop import RunDriver
from tests.helpers import write_agent
from tests.service.driver_world import API_TOKEN, T, World, service_over
from tests.service.helpers import make_patch, object_count
from worker import improve
from worker.agent_runner import AgentRun
from worker.service_client import ServiceClient

TOKEN = API_TOKEN
GIT_ENV = os.environ | {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
}


@pytest.fixture
def crossing(world: World) -> World:
    """The world's driver, given the archive so that it can merge."""
    world.driver = RunDriver(
        sessions=world.sessions, dispatcher=world.outbox, interval_s=0.1, archive=world.archive
    )
    return world


@pytest.fixture
def app(crossing: World, tmp_path: Path) -> Iterator[TestClient]:
    """The service over the world's database and archive (no driver of its own)."""
    with service_over(tmp_path) as client:
        yield client


def tick(world: World) -> tuple[list[ImproveJob], list[EvaluateJob]]:
    world.driver.tick()
    return world.outbox.take()


def child(world: World, job: ImproveJob, path: str, new: str) -> str:
    old = (world.archive.git.read_file(job.parent_id, path) or b"").decode()
    return world.archive.create_child(step_id=job.step_id, patch=make_patch(old, new, path=path)).id


def two_children(
    world: World, on_conflict: str, a: tuple[str, str], b: tuple[str, str]
) -> tuple[str, str, str]:
    """Run until step 3 is opened: child A (score 0) and child B (score 1) of the seed, then a
    crossover of B (the best, strategy `best`) with A, the one candidate unrelated to B."""
    run_id = crossing_run(world, on_conflict)
    _, evaluate = tick(world)
    world.answer(evaluate[0], resolved=True)  # the seed: 1/1
    improve_jobs, _ = tick(world)
    first = child(world, improve_jobs[0], *a)
    _, evaluate = tick(world)
    world.answer(evaluate[0], resolved=False)  # A: 0/1, admitted (threshold 0), never the best
    improve_jobs, _ = tick(world)
    assert improve_jobs[0].parent_id == world.seed and improve_jobs[0].crossover is None  # A's ancestor
    second = child(world, improve_jobs[0], *b)
    _, evaluate = tick(world)
    world.answer(evaluate[0], resolved=True)  # B: 1/1
    return run_id, first, second


def crossing_run(world: World, on_conflict: str) -> str:
    return world.start(
        stages=[{"tasks": T[:1]}],
        budget={"max_children": 3},
        crossover={"rate": 1.0, "on_conflict": on_conflict},
    )


def git(repo: Path, *args: str, cwd: Path | None = None) -> str:
    command = ["git", *args] if cwd else ["git", f"--git-dir={repo}", *args]
    return subprocess.run(command, cwd=cwd, env=GIT_ENV, check=True, capture_output=True, text=True).stdout


def test_a_clean_crossover_is_a_merge_commit_evaluated_and_admitted(crossing: World, app: TestClient) -> None:
    world = crossing
    run_id, a, b = two_children(world, "reject", ("tiny/__main__.py", "print('a')\n"), ("x.txt", "b\n"))
    improve_jobs, _ = tick(world)  # B admitted; step 3 merges B and A in the service
    assert improve_jobs == []  # no worker needed
    with world.sessions() as session:
        step = session.scalars(select(Step).where(Step.run_id == run_id, Step.number == 3)).one()
        assert (step.kind, step.parent_id, step.second_parent_id, step.status) == (
            "crossover",
            b,
            a,
            "evaluating",
        )
        merged = step.child_id
        assert merged is not None
    repo = world.archive.git.path
    assert git(repo, "rev-list", "--parents", "-n1", merged).split() == [merged, b, a]
    assert git(repo, "show", f"{merged}:x.txt") == "b\n"  # B's change
    assert git(repo, "show", f"{merged}:tiny/__main__.py") == "print('a')\n"  # and A's
    assert world.member(run_id, merged).second_parent_id == a
    assert (world.member(run_id, a).children, world.member(run_id, b).children) == (1, 1)
    report = consistency.check(world.archive.git, world.sessions, repair=False)
    assert report.consistent and report.refs_restored == [] and report.refs_removed == []

    _, evaluate = tick(world)
    assert [j.agent_id for j in evaluate] == [merged]  # evaluated like any child
    world.answer(evaluate[0], resolved=True)
    tick(world)
    assert world.member(run_id, merged).status == "admitted"
    assert world.run(run_id).status == "completed"

    shown = app.get(f"/api/agents/{merged}").json()
    assert (shown["parent_id"], shown["second_parent_id"], shown["lineage"]) == (
        b,
        a,
        [world.seed, b, merged],
    )
    listed = app.get("/api/agents", params={"kind": "child"}).json()["items"]
    assert {item["id"]: item["second_parent_id"] for item in listed} == {merged: a, a: None, b: None}
    nodes = {n["id"]: n for n in json.loads(app.get(f"/api/runs/{run_id}/lineage").content)["nodes"]}
    assert (nodes[merged]["parent_id"], nodes[merged]["second_parent_id"]) == (b, a)


def test_a_merge_child_exports_as_a_bundle_a_patch_series_and_a_tarball(
    crossing: World, app: TestClient, tmp_path: Path
) -> None:
    world = crossing
    _, a, b = two_children(world, "reject", ("tiny/__main__.py", "print('a')\n"), ("x.txt", "b\n"))
    tick(world)
    with world.sessions() as session:
        merged = session.scalars(select(Step.child_id).where(Step.number == 3)).one()
        assert merged is not None
        tree = session.get(Agent, merged).tree_id  # type: ignore[union-attr]

    bundle = tmp_path / "merged.bundle"
    bundle.write_bytes(app.get(f"/api/agents/{merged}/bundle").content)
    clone = tmp_path / "clone"
    git(clone, "clone", "--quiet", "--no-checkout", str(bundle), str(clone), cwd=tmp_path)
    assert git(clone, "rev-list", "--parents", "-n1", merged, cwd=clone).split() == [merged, b, a]

    # The series rebuilds the merge child from the seed along first parents.
    series = app.get(f"/api/agents/{merged}/patches")
    assert series.status_code == 200, series.text
    (tmp_path / "series.mbox").write_text(series.text)
    git(clone, "checkout", "--quiet", "--detach", world.seed, cwd=clone)
    git(clone, "am", "--quiet", str(tmp_path / "series.mbox"), cwd=clone)
    assert git(clone, "rev-parse", "HEAD^{tree}", cwd=clone).strip() == tree

    exported = app.get(f"/api/agents/{merged}/export")
    with tarfile.open(fileobj=io.BytesIO(exported.content), mode="r:gz") as tar:
        prefix = f"agent-{merged[:12]}"
        metadata = json.loads(tar.extractfile(f"{prefix}/metadata.json").read())  # type: ignore[union-attr]
        code = tar.extractfile(f"{prefix}/code/x.txt").read()  # type: ignore[union-attr]
    assert (metadata["parent_id"], metadata["second_parent_id"]) == (b, a)
    assert code == b"b\n"


def test_a_conflicting_crossover_is_rejected_naming_the_paths_and_nothing_is_written(crossing: World) -> None:
    world = crossing
    run_id, _, b = two_children(world, "reject", ("x.txt", "a\n"), ("x.txt", "b\n"))
    with world.sessions() as session:
        agents_before = session.scalar(select(func.count()).select_from(Agent))
    refs_before = world.archive.git.agent_refs()
    improve_jobs, _ = tick(world)
    assert improve_jobs == []
    with world.sessions() as session:
        step = session.scalars(select(Step).where(Step.run_id == run_id, Step.number == 3)).one()
        assert (step.kind, step.status, step.child_id) == ("crossover", "rejected", None)
        assert step.reason is not None and "conflicts in: x.txt" in step.reason
        assert session.scalar(select(func.count()).select_from(Agent)) == agents_before
    assert world.archive.git.agent_refs() == refs_before
    assert world.member(run_id, b).children == 0
    tick(world)
    assert world.run(run_id).status == "completed"


def test_a_conflict_goes_to_the_improver_and_its_child_records_both_parents(
    crossing: World, app: TestClient
) -> None:
    world = crossing
    run_id, a, b = two_children(world, "improver", ("x.txt", "a\n"), ("x.txt", "b\n"))
    (job,) = tick(world)[0]
    assert job.crossover is not None and job.parent_id == b
    assert (job.crossover.second_parent_id, job.crossover.conflicts) == (a, ["x.txt"])

    seen: dict[str, Any] = {}

    def resolve(_ctx: Any, run: AgentRun) -> Any:
        repo = Path(seen.setdefault("repo", world.archive.git.tmp_dir / "improver-repo"))
        repo.mkdir(parents=True)
        run.prepare_repo(repo)
        seen["statement"], seen["conflicted"] = run.statement, (repo / "x.txt").read_text()
        (repo / "x.txt").write_text("a and b\n")
        git(repo, "add", "-A", cwd=repo)
        diff = git(repo, "diff", "--cached", "--binary", "HEAD", cwd=repo)
        return mock.Mock(diff=diff, calls=[], failure=None)

    client = ServiceClient("http://testserver", TOKEN)
    client._http = app
    ctx = mock.Mock(client=client, catalog=BenchmarkCatalog())
    with (
        mock.patch.object(improve, "run_agent", side_effect=resolve),
        mock.patch.object(improve, "validate_child", return_value=None),
    ):
        outcome = improve.improve(ctx, job)
    assert outcome.startswith("child ")
    assert "<<<<<<<" in seen["conflicted"] and "x.txt" in seen["statement"]

    with world.sessions() as session:
        step = session.scalars(select(Step).where(Step.run_id == run_id, Step.number == 3)).one()
        merged = step.child_id
        assert merged is not None and step.status == "evaluating"
        assert step.diagnosis is not None and "conflicts in: x.txt" in step.diagnosis
    repo = world.archive.git.path
    assert git(repo, "rev-list", "--parents", "-n1", merged).split() == [merged, b, a]
    assert git(repo, "show", f"{merged}:x.txt") == "a and b\n"
    assert world.member(run_id, merged).second_parent_id == a


def test_conflict_markers_left_by_the_improver_reject_the_child() -> None:
    diff = "--- a/x.txt\n+++ b/x.txt\n@@ -1 +1,5 @@\n-b\n+<<<<<<< one\n+b\n+=======\n+a\n+>>>>>>> two\n"
    assert improve._markers_left(diff) == "conflict markers left in: x.txt"
    assert improve._markers_left("--- a/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n-b\n+a and b\n") is None


def test_the_crossover_draw_is_a_function_of_the_seed_and_the_step() -> None:
    def draws(seed: int, rate: float) -> list[bool]:
        return [crossover_stream(seed, number, rate) is not None for number in range(1, 401)]

    assert draws(7, 0.3) == draws(7, 0.3)
    assert draws(7, 0.3) != draws(8, 0.3)
    assert 80 < sum(draws(7, 0.3)) < 160  # about 120 of 400
    assert not any(draws(7, 0.0)) and all(draws(7, 1.0))
    first, again = crossover_stream(3, 5, 1.0), crossover_stream(3, 5, 1.0)
    assert first is not None and again is not None and first.random() == again.random()


def test_a_merge_over_the_limits_adding_nothing_or_conflicting_keeps_nothing(tmp_path: Path) -> None:
    store = GitStore(tmp_path / "archive.git")
    seed = store.commit_folder(write_agent(tmp_path / "seed", {"x.txt": "0\n"}))
    a, _ = store.commit_patch(seed, make_patch("", "a = 1\n", path="tiny/__init__.py"), "a")
    b, _ = store.commit_patch(seed, make_patch("0\n", "b\n", path="x.txt"), "b")
    c, _ = store.commit_patch(seed, make_patch("0\n", "c\n", path="x.txt"), "c")
    grandchild, _ = store.commit_patch(a, make_patch("0\n", "g\n", path="x.txt"), "g")
    big = "y" * 200
    d, _ = store.commit_patch(seed, make_patch("print('hi')\n", big + "\n", path="tiny/__main__.py"), "d")
    before = object_count(tmp_path)
    limits = AgentLimits(max_agent_bytes=10**6, max_agent_files=10, max_file_bytes=100)
    with pytest.raises(TooLargeError, match="max_file_bytes"):
        store.merge_commit(a, d, "merge", limits)  # tiny/__main__.py of d is over 100 bytes
    with pytest.raises(PatchError, match="identical to"):
        store.merge_commit(grandchild, a, "merge")  # a's changes are in its grandchild already
    with pytest.raises(MergeConflictError, match=r"conflicts in: x\.txt") as conflict:
        store.merge_commit(b, c, "merge")
    assert conflict.value.paths == ["x.txt"]
    assert b"<<<<<<<" in store.merged_tar(b, c)
    assert object_count(tmp_path) == before  # the merges' objects stayed in their quarantines
    merged, tree = store.merge_commit(a, b, "merge", limits)
    assert (
        store.read_file(merged, "x.txt") == b"b\n"
        and store.read_file(merged, "tiny/__init__.py") == b"a = 1\n"
    )
    assert tree == store.tree_of(merged)
