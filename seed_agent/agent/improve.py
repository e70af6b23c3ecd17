"""The agent's own improvement procedure: `python -m agent.improve` (Clade's hyperagent mode).

Clade runs it with a copy of this agent's code as the working directory and the agent's
evaluation records in CLADE_EVALUATIONS_FILE (JSON). It asks the model to diagnose one
failed task (one call), then lets the agent's own loop make the proposed change in the
copy; Clade takes the copy's diff as the child. The diagnosis goes to CLADE_NOTE_FILE.
This file and `prompts/improve/` are the agent's meta part (`meta` in agent.toml): a
child may change them as freely as the rest.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent.__main__ import PROMPTS, Config, render
from agent.loop import Agent, Limits
from agent.model import ModelClient, ModelError, OpenAIModel
from agent.tools import BASH_TOOL
from agent.trajectory import Trajectory

IMPROVE_PROMPTS = PROMPTS / "improve"
MAX_SECTION = 4_000
ALL_RESOLVED = (
    "You resolved every task you were evaluated on. Make yourself more reliable: for example, "
    "run the repository's tests before you finish."
)


def diagnose(model: ModelClient, records: list[dict[str, Any]], repo: Path, timeout_s: float) -> str:
    """One model call on the first unresolved record (Clade lists those first)."""
    failed = [r for r in records if not r.get("resolved")]
    if not failed:
        return ALL_RESOLVED
    record = failed[0]
    verdict = [record.get("grade_reason") or "not resolved"]
    if record.get("agent_failure"):
        verdict.append(f"Your run failed: {record['agent_failure']}")
    if record.get("failing_tests"):
        verdict.append("Tests that should pass but did not: " + ", ".join(record["failing_tests"]))
    if record.get("broken_tests"):
        verdict.append("Tests that passed before and broke: " + ", ".join(record["broken_tests"]))
    user = render(
        (IMPROVE_PROMPTS / "diagnose_user.md").read_text(),
        task_id=str(record.get("task_id")),
        statement=str(record.get("statement") or "(no statement)")[:MAX_SECTION],
        verdict="\n".join(verdict),
        diff=str(record.get("diff") or "(empty: you changed nothing)")[:MAX_SECTION],
        trajectory=str(record.get("trajectory_tail") or "(none recorded)")[-MAX_SECTION:],
        log=str(record.get("agent_log_tail") or "(empty)")[-MAX_SECTION:],
        summary=f"{len(records) - len(failed)} of {len(records)} tasks resolved.",
        files="\n".join(f"- {p}" for p in own_files(repo))[:MAX_SECTION],
    )
    messages = [
        {"role": "system", "content": (IMPROVE_PROMPTS / "diagnose_system.md").read_text()},
        {"role": "user", "content": user},
    ]
    reply = model.query(messages, timeout_s=timeout_s)
    return str(reply.message.get("content") or "").strip() or ALL_RESOLVED


def own_files(repo: Path) -> list[str]:
    return sorted(
        str(p.relative_to(repo))
        for p in repo.rglob("*")
        if p.is_file() and ".git" not in p.parts and "__pycache__" not in p.parts
    )


def main(env: Mapping[str, str], model: ModelClient | None = None) -> int:
    config = Config.from_env(env)
    records = json.loads(Path(env["CLADE_EVALUATIONS_FILE"]).read_text()).get("evaluations", [])
    deadline = time.monotonic() + config.timeout_s - min(30.0, config.timeout_s * 0.1)
    if model is None:
        model = OpenAIModel(config.model, base_url=config.base_url, api_key=config.api_key, tools=[BASH_TOOL])
    try:
        diagnosis = diagnose(model, records, config.repo, timeout_s=deadline - time.monotonic())
    except ModelError as exc:
        print(f"improve: the diagnosis failed: {exc}", file=sys.stderr)
        return 1
    if env.get("CLADE_NOTE_FILE"):
        Path(env["CLADE_NOTE_FILE"]).write_text(diagnosis + "\n")
    trajectory = Trajectory(model=config.model)
    path = config.output_dir / "trajectory.json"
    limits = Limits(max_steps=config.max_steps, deadline=deadline, max_tokens=config.max_tokens)
    agent = Agent(model, config.repo, limits, trajectory, on_step=lambda: trajectory.save(path))
    task = render(
        (IMPROVE_PROMPTS / "task.md").read_text(), diagnosis=diagnosis, repo=str(config.repo.resolve())
    )
    try:
        reason = agent.run(render((PROMPTS / "system.md").read_text()), task)
    finally:
        trajectory.save(path)
    print(f"improve: stopped: {reason}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(os.environ))
