"""Each step's improve model: the first of `models.improve`, or the bandit's choice by score gain
per dollar; chosen once, recorded on the step, sent as the job's model with the rest as fallbacks,
and answered by `GET /api/runs/{id}/steps` with the step's cost per model."""

from __future__ import annotations

from pathlib import Path

import pytest

from contracts.config import ModelsConfig
from contracts.records import UsageRecord
from service.db.models import Step
from service.selection.model_bandit import Pull, choose
from tests.service.driver_world import T, World, service_over
from tests.service.helpers import make_patch

GOOD, DEAR = "scripted-good", "scripted-dear"
# What a step costs with each model: the dear one pays 10 times as much for the same gain.
STEP_USD = {GOOD: 0.01, DEAR: 0.10}


def run_bandit(world: World, steps: int, seed: int) -> tuple[str, list[str]]:
    """A run whose children all gain one task on their parent, whichever model made them: the
    bandit should settle on the cheaper. Returns the run id and the models sent, step by step."""
    run_id = world.start(
        stages=[{"tasks": T}],
        selection={"strategy": "best"},
        budget={"max_children": steps},
        models={"improve": [DEAR, GOOD], "improve_choice": "bandit"},
        rng_seed=seed,
    )
    sent: list[str] = []
    resolved: dict[str, int] = {world.seed: 0}
    for _ in range(4 * steps + 4):
        world.driver.tick()
        improve, evaluate = world.outbox.take()
        for job in evaluate:
            world.answer(job, resolved=T.index(job.task_id) < resolved[job.agent_id])
        for job in improve:
            sent.append(job.improve_model)
            assert job.improve_fallbacks == [m for m in (DEAR, GOOD) if m != job.improve_model]
            usage = [
                UsageRecord(
                    purpose="improve",
                    model=job.improve_model,
                    prompt_tokens=100,
                    completion_tokens=10,
                    cost_usd=STEP_USD[job.improve_model],
                )
            ]
            child = world.archive.create_child(
                step_id=job.step_id, patch=_patch(world, job.parent_id), usage=usage
            ).id
            resolved[child] = min(len(T), resolved[job.parent_id] + 1) if resolved[job.parent_id] < 3 else 3
        if world.run(run_id).status != "running":
            break
    assert world.run(run_id).status == "completed"
    return run_id, sent


def _patch(world: World, parent_id: str) -> str:
    world.version += 1
    old = world.archive.git.read_file(parent_id, "x.txt") or b""
    return make_patch(old.decode(), f"{world.version}\n", path="x.txt")


def test_the_bandit_tries_each_model_then_prefers_the_cheaper_gain(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    world = World(tmp_path / "a")
    run_id, sent = run_bandit(world, steps=6, seed=7)
    assert set(sent[:2]) == {GOOD, DEAR}  # each model tried once first
    assert sent[2:].count(GOOD) > sent[2:].count(DEAR)
    # The same seed and the same answers choose the same models.
    _, again = run_bandit(World(tmp_path / "b"), steps=6, seed=7)
    assert again == sent

    with service_over(tmp_path / "a") as client:  # the world's database and archive
        page = client.get(f"/api/runs/{run_id}/steps")
        missing = client.get("/api/runs/no-such-run/steps")
    assert missing.status_code == 404
    assert page.status_code == 200, page.text
    steps = page.json()["items"]
    assert [s["model_choice"]["model"] for s in steps] == sent
    assert all(s["model_choice"]["why"] == "bandit" for s in steps)
    assert "not tried yet" in steps[0]["model_choice"]["reason"]
    later = steps[-1]["model_choice"]
    assert {arm["model"] for arm in later["arms"]} == {GOOD, DEAR}
    assert all(arm["pulls"] >= 1 for arm in later["arms"])
    for step, model in zip(steps, sent, strict=True):
        assert step["usd"] == pytest.approx(STEP_USD[model])
        assert [(u["purpose"], u["model"], u["calls"]) for u in step["usage"]] == [("improve", model, 1)]


def test_first_choice_is_recorded_and_kept_on_a_redispatch(world: World) -> None:
    run_id = world.start(stages=[{"tasks": T[:1]}], models={"improve": ["scripted-a", "scripted-b"]})
    world.driver.tick()
    for job in world.outbox.take()[1]:
        world.answer(job, resolved=False)
    world.driver.tick()
    (job,) = world.outbox.take()[0]
    assert (job.improve_model, job.improve_fallbacks) == ("scripted-a", ["scripted-b"])
    world.lose_jobs(Step)
    world.driver.tick()
    (again,) = world.outbox.take()[0]
    assert (again.step_id, again.improve_model) == (job.step_id, "scripted-a")
    with world.sessions() as session:
        step = session.get(Step, job.step_id)
        assert step is not None and step.model_choice is not None
        assert step.model_choice["why"] == "first" and step.model_choice["arms"] is None
    assert world.run(run_id).status == "running"


def test_bandit_choice_is_a_function_of_seed_and_history() -> None:
    history = [Pull(GOOD, 0.25, 0.01), Pull(DEAR, 0.25, 0.10), Pull(GOOD, None, 0.0)]
    first = [choose([DEAR, GOOD], history, seed="3:improve-model:4").model for _ in range(5)]
    assert len(set(first)) == 1
    # Untried models come first, in an order drawn from the seed.
    assert choose(["a", "b", "c"], [Pull("b", 0.5, 0.0)], seed="x").model in {"a", "c"}
    # With equal gains, the cheaper model's value is higher.
    choice = choose([DEAR, GOOD], [Pull(GOOD, 0.5, 0.01), Pull(DEAR, 0.5, 0.10)], seed="s")
    values = {arm.model: arm.value for arm in choice.arms}
    assert values[GOOD] is not None and values[DEAR] is not None and values[GOOD] > values[DEAR]
    assert choice.model == GOOD


def test_bandit_needs_several_improve_models() -> None:
    with pytest.raises(ValueError, match="improve_choice 'bandit'"):
        ModelsConfig.model_validate({"improve": "scripted", "improve_choice": "bandit"})
    assert ModelsConfig.model_validate({"improve": "x"}).chain("improve") == ("x",)
    assert ModelsConfig.model_validate({"solve": ["a", "b", "a"]}).chain("solve") == ("a", "b")
