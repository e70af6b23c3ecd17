"""A hyper step end to end: a real worker context, Docker sandboxes, the live service, and the
scripted model (a deterministic stand-in for an LLM, labelled scripted).

The seed agent's own improvement procedure (`python -m agent.improve`) runs in the improver's
sandbox on its evaluation records; the scripted replies make it change both its task-solving
part (its system prompt) and its improving part (agent/improve.py), so the child is recorded
with `meta_changed`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from service.db.models import Agent, LLMUsage, Run, RunAgent, Step
from service.driver.jobs import Outbox
from service.driver.tick import drive
from tests.worker.harness import TASK_ID, EvaluationStack, evaluation_stack
from worker.evaluate import evaluate
from worker.improve import improve
from worker.llm.script import Match, Reply, Rule, Script, ToolCall

SEED_AGENT = Path(__file__).resolve().parents[2] / "seed_agent"
RULE = "- RULE-H: read the failing test before you edit the code."
META_LINE = "# (scripted) the improvement procedure changed itself"
EDIT = (
    f"printf '%s\\n' '{RULE}' >> agent/prompts/system.md && printf '%s\\n' '{META_LINE}' >> agent/improve.py"
)
DIAGNOSIS = "(scripted) Read the tests first\n\nAdd a rule to the system prompt, and note it in improve.py."
SCRIPT = Script(
    model="scripted",
    rules=[
        Rule(
            name="hyper-diagnose",
            match=Match(system="the agent you diagnose is yourself", last_user=TASK_ID),
            reply=Reply(content=DIAGNOSIS),
        ),
        Rule(
            name="hyper-change",
            match=Match(last_user="Improve this coding agent", any="Read the tests first"),
            replies=[
                Reply(tool_calls=[ToolCall(name="bash", arguments={"command": EDIT})]),
                Reply(content="(scripted) Both changes are made."),
            ],
        ),
    ],
    default=Reply(content="(scripted) no rule matched"),
)


@pytest.fixture(scope="module")
def hyper_stack(tmp_path_factory: pytest.TempPathFactory, base_image: str) -> Iterator[EvaluationStack]:
    secret = f"sk-hyper-{uuid.uuid4().hex}"
    owner = f"test-hyper-{uuid.uuid4().hex[:10]}"
    with evaluation_stack(
        tmp_path_factory.mktemp("hyper"), secret=secret, owner=owner, script=SCRIPT
    ) as stack:
        yield stack


def test_the_parents_own_procedure_makes_a_child_that_changed_its_meta_part(
    hyper_stack: EvaluationStack,
) -> None:
    stack = hyper_stack
    seed = stack.import_agent(SEED_AGENT)
    run_id = stack.create_run(seed, {"improve_timeout_s": 120}, extra={"improver": {"mode": "hyper"}})
    evaluated = evaluate(stack.ctx, stack.dispatch(run_id))
    assert not evaluated.resolved  # the scripted model gives the solver nothing to do

    outbox = Outbox()
    with stack.sessions.begin() as session:
        run = session.get(Run, run_id)
        assert run is not None
        drive(session, run, outbox)  # admits the seed and opens its hyper step
    (job,) = outbox.improve
    assert job.records is not None and [(r.task_id, r.resolved) for r in job.records] == [(TASK_ID, False)]

    outcome = improve(stack.ctx, job)
    assert outcome.startswith("child") and "rejected" not in outcome, outcome

    with stack.sessions() as session:
        step = session.get(Step, job.step_id)
        assert step is not None and step.child_id is not None
        assert step.kind == "hyper" and step.diagnosis == DIAGNOSIS  # the procedure's own note
        child = session.get(Agent, step.child_id)
        member = session.get(RunAgent, (run_id, step.child_id))
        assert child is not None and member is not None
        assert child.meta_changed is True and member.meta_changed is True
        purposes = session.scalars(select(LLMUsage.purpose).where(LLMUsage.step_id == step.id)).all()
    # Two metered calls by the procedure (diagnosis, edit) and its closing one: no Clade diagnosis.
    assert sorted(purposes) == ["improve"] * 3

    with stack.service.anonymous as reader:
        diff = reader.get(f"/api/agents/{step.child_id}/diff").text
        nodes = reader.get(f"/api/runs/{run_id}/lineage").json()["nodes"]
    assert f"+{RULE}" in diff and f"+{META_LINE}" in diff  # its solving part and its improving part
    assert {n["id"]: n["meta_changed"] for n in nodes} == {seed: None, step.child_id: True}
    # The procedure was given its records: the diagnosis request carried the failed task.
    rules = [r.rule for r in stack.llm.requests if r.path.endswith("/chat/completions")]
    assert rules.count("hyper-diagnose") == 1 and rules.count("hyper-change") == 2
