"""Hyperagent mode on the service side: the manifest's `improve`/`meta`, hyper steps and their
jobs, the fallback for a parent without an improvement procedure, and `meta_changed`."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from contracts.config import ConfigFieldError, ImproverConfig
from contracts.errors import InvalidAgentError
from contracts.jobs import ImproveJob
from contracts.manifest import parse_manifest
from service.db.models import Agent, Step
from tests.helpers import write_agent
from tests.service.driver_world import T, World
from tests.service.helpers import make_patch

HYPER_TOML = 'name = "tiny"\nsolve = "python -m tiny"\nimprove = "python -m tiny.improve"\n'
FILES = {"agent.toml": HYPER_TOML, "tiny/improve.py": "print('improving')\n", "tiny/core.py": "x = 0\n"}


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('improve = "  "', "agent.toml: improve: Value error, must be a command line, not blank"),
        ("improve = 'python \"x.py'", "agent.toml: improve: Value error, is not a valid command line"),
        ("improve = 3", "agent.toml: improve: Input should be a valid string"),
        ('improve = "make better"', "agent.toml: meta: Value error, cannot tell which files"),
        ('meta = ["tiny/improve.py"]', "agent.toml: meta: Value error, lists the files of the `improve`"),
        (
            'improve = "python x.py"\nmeta = ["../escape.py"]',
            "agent.toml: meta: Value error, '../escape.py' is not a relative path",
        ),
        ('improve = "python x.py"\nmeta = []', "agent.toml: meta: Value error, must list at least one"),
    ],
)
def test_a_bad_improve_declaration_is_refused_naming_the_field(toml: str, message: str) -> None:
    with pytest.raises(InvalidAgentError) as refused:
        parse_manifest(f'solve = "python -m tiny"\n{toml}\n'.encode())
    assert str(refused.value).startswith(message)


def test_meta_defaults_to_the_script_the_improve_command_runs() -> None:
    old = parse_manifest(b'solve = "python -m tiny"\n')
    assert (old.improve, old.meta, old.meta_paths()) == (None, None, [])  # manifests before hyper mode
    assert parse_manifest(HYPER_TOML.encode()).meta == ["tiny/improve.py"]
    declared = parse_manifest(b'solve = "s"\nimprove = "sh run.sh"\nmeta = ["run.sh", "./prompts/"]\n')
    assert declared.meta == ["run.sh", "prompts"]


def test_hyper_mode_needs_an_improver_free_config_and_a_seed_with_an_improve_command(world: World) -> None:
    assert ImproverConfig(mode="hyper").agent is None
    with pytest.raises(ValueError, match="only used with improver mode 'fixed'"):
        ImproverConfig(mode="hyper", agent="a" * 40)
    with pytest.raises(ConfigFieldError) as refused:
        world.start(improver={"mode": "hyper"})  # the world's seed has no `improve` command
    assert refused.value.field == "improver.mode"


def hyper_world(world: World, tmp_path: Path) -> str:
    seed = world.archive.import_seed_folder(write_agent(tmp_path / "hyper-seed", FILES))[0].id
    return world.start(
        seed_agent=seed,
        improver={"mode": "hyper"},
        stages=[{"tasks": T[:2]}],
        budget={"max_children": 3},
        selection={"strategy": "best"},
    )


def scored_step(world: World, resolved: set[str]) -> ImproveJob:
    """Answer the evaluations sent so far (resolving `resolved`), then take the step's job."""
    world.driver.tick()
    _, evaluate = world.outbox.take()
    for job in evaluate:
        world.answer(job, resolved=job.task_id in resolved)
    world.driver.tick()
    (improve,), _ = world.outbox.take()
    return improve


def child(world: World, job: ImproveJob, path: str, new: str) -> Agent:
    old = (world.archive.git.read_file(job.parent_id, path) or b"").decode()
    return world.archive.create_child(step_id=job.step_id, patch=make_patch(old, new, path=path))


def test_hyper_steps_carry_records_and_children_record_meta_changed(world: World, tmp_path: Path) -> None:
    run_id = hyper_world(world, tmp_path)
    job = scored_step(world, {T[1]})
    # The parent's own procedure gets its records (unresolved first), not Clade's diagnosis.
    assert job.failure is None and job.records is not None
    assert [(r.task_id, r.resolved) for r in job.records] == [(T[0], False), (T[1], True)]
    meta = child(world, job, "tiny/improve.py", "print('improving better')\n")
    with world.sessions() as session:
        step = session.scalars(select(Step).where(Step.child_id == meta.id)).one()
        assert step.kind == "hyper"
        assert session.get(Agent, meta.id).meta_changed is True  # type: ignore[union-attr]
    assert world.member(run_id, meta.id).meta_changed is True

    job = scored_step(world, {T[0], T[1]})  # the child scores 2/2: `best` picks it next
    assert job.parent_id == meta.id and job.records is not None
    solver = child(world, job, "tiny/core.py", "x = 1\n")
    assert world.member(run_id, solver.id).meta_changed is False  # only its task-solving part changed


def test_a_parent_without_an_improve_command_falls_back_to_clades_improver(
    world: World, tmp_path: Path
) -> None:
    run_id = hyper_world(world, tmp_path)
    job = scored_step(world, set())
    # The child drops its improvement procedure: a change of its meta part.
    dropped = child(world, job, "agent.toml", 'name = "tiny"\nsolve = "python -m tiny"\n')
    assert world.member(run_id, dropped.id).meta_changed is True
    job = scored_step(world, {T[0], T[1]})
    assert job.parent_id == dropped.id
    assert job.records is None and job.failure is None  # Clade's diagnosis (nothing failed)
    with world.sessions() as session:
        assert session.get(Step, job.step_id).kind == "improve"  # type: ignore[union-attr]
    plain = child(world, job, "tiny/core.py", "x = 2\n")
    assert world.member(run_id, plain.id).meta_changed is None  # no procedure, no meta part


def test_self_mode_records_meta_changed_too(world: World, tmp_path: Path) -> None:
    seed = world.archive.import_seed_folder(write_agent(tmp_path / "hyper-seed", FILES))[0].id
    run_id = world.start(seed_agent=seed, stages=[{"tasks": T[:1]}])
    job = scored_step(world, set())
    assert job.records is None and job.failure is not None
    with world.sessions() as session:
        assert session.get(Step, job.step_id).kind == "improve"  # type: ignore[union-attr]
    assert world.member(run_id, child(world, job, "tiny/improve.py", "pass\n").id).meta_changed is True
