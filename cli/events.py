"""How `clade run watch` and `clade demo` show a run's events: one renderer per kind.

An event is parsed with the typed union of `contracts.events`; `RENDERERS` maps each of its
models to a renderer (tests/architecture/test_event_renderers.py fails when a kind has none). A
kind without a line of its own is shown as its name and JSON payload. An event this version
cannot parse (a newer service's kind) is shown the same way, from what was received.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError
from rich.markup import escape

from cli.output import fmt_score, short
from contracts import events as ev

_EVENT: TypeAdapter[ev.RunEvent] = TypeAdapter(ev.RunEvent)


def describe_event(event: Mapping[str, Any]) -> str:
    """One line (rich markup) for an event as the API answered it."""
    stamp = str(event.get("created_at", ""))[11:19]
    try:
        typed = _EVENT.validate_python(event)
    except ValidationError:
        return f"{stamp} {escape(str(event.get('kind')))} {escape(json.dumps(event.get('payload')))}"
    return f"{stamp} {RENDERERS[type(typed)](typed)}"


def _as_json(event: ev.Envelope) -> str:
    return escape(f"{event.kind} {json.dumps(event.payload.model_dump(mode='json'))}")


def _child_created(event: ev.ChildCreatedEvent) -> str:
    p = event.payload
    parent = short(p.parent_id)
    if p.second_parent_id:
        parent += f" and {short(p.second_parent_id)} (crossover)"
    return f"step {p.step}: child {short(p.agent_id)} of {parent}"


def _evaluation_done(event: ev.EvaluationDoneEvent) -> str:
    p = event.payload
    if p.infrastructure_failure:
        cause = escape(p.infrastructure_failure)
        return f"  {short(p.agent_id)} on {p.task_id}: [yellow]not run: {cause}[/yellow]"
    mark = "[green]resolved[/green]" if p.resolved else "[red]unresolved[/red]"
    return f"  {short(p.agent_id)} on {p.task_id}: {mark}"


def _stage_stopped(event: ev.StageStoppedEvent) -> str:
    p = event.payload
    verdict = "passed" if p.passed else "failed"
    return (
        f"agent {short(p.agent_id)} stage {p.stage + 1} {verdict}: {escape(p.reason)} after {p.tasks} of "
        f"{p.stage_tasks} tasks ({p.resolved}/{p.evaluations} resolved)"
    )


def _agent_verdict(event: ev.AgentAdmittedEvent | ev.AgentRejectedEvent) -> str:
    p = event.payload
    verdict = "admitted" if isinstance(event, ev.AgentAdmittedEvent) else "rejected"
    extra = f" score {fmt_score(p.score)}" if p.score is not None else ""
    reason = f" ({escape(p.reason)})" if p.reason else ""
    return f"agent {short(p.agent_id)} {verdict}{extra}{reason}"


def _island_migration(event: ev.IslandMigrationEvent) -> str:
    p = event.payload
    return f"agent {short(p.agent_id)} migrates from island {p.from_} to {p.to}"


def _experience_updated(event: ev.ExperienceUpdatedEvent) -> str:
    p = event.payload
    return f"experience pool version {p.version} ({p.finished_steps} finished steps)"


def _heldout_started(event: ev.HeldoutStartedEvent) -> str:
    agents = ", ".join(short(a) for a in event.payload.agents)
    return f"held-out phase: {agents} on {len(event.payload.tasks)} held-out tasks"


def _heldout_finished(event: ev.HeldoutFinishedEvent) -> str:
    return f"held-out phase over: best agent {short(event.payload.best_agent_id)}"


def _checkpoint_reached(event: ev.CheckpointReachedEvent) -> str:
    p = event.payload
    when = "search stopped" if p.final else f"{p.spent:.0%} of the budget spent"
    if p.agent_id is None:
        return f"checkpoint {p.fraction:g} ({when}): no agent admitted yet"
    rule = {"score": "selection lower bound", "family": "family estimate", "tree": "lineage estimate"}
    by = rule.get(p.chosen_by, p.chosen_by)
    agent = short(p.agent_id)
    return (
        f"checkpoint {p.fraction:g} ({when}): {agent}, the best by {by}, to be scored on the held-out tasks"
    )


def _checkpoint_scored(event: ev.CheckpointScoredEvent) -> str:
    p = event.payload
    return (
        f"checkpoint {p.fraction:g}: {short(p.agent_id)} held-out {p.resolved}/{p.total}"
        f" [{p.low:.2f}, {p.high:.2f}]; the pick is {short(p.pick_agent_id)}"
    )


def _driver_error(event: ev.DriverErrorEvent) -> str:
    p = event.payload
    return f"[yellow]run driver failed ({p.failed_ticks} ticks): {escape(p.error)}[/yellow]"


def _policy_record(event: ev.PolicyRecordEvent) -> str:
    # Under the policy's own kind, as a kind without a line of its own is shown.
    return escape(f"{event.payload.name} {json.dumps(event.payload.data)}")


def _unreadable(event: ev.UnreadableEvent) -> str:
    # As stored: what an older `clade` showed for any event it had no line for.
    return escape(f"{event.payload.stored_kind} {json.dumps(event.payload.stored_payload)}")


# Every model of the union: a kind added there and not here fails the renderer test.
RENDERERS: dict[type[ev.Envelope], Callable[[Any], str]] = {
    ev.SeedImportedEvent: _as_json,
    ev.RunCreatedEvent: _as_json,
    ev.RunPausedEvent: _as_json,
    ev.RunRunningEvent: _as_json,
    ev.RunCancelledEvent: _as_json,
    ev.RunCompletedEvent: _as_json,
    ev.StepOpenedEvent: _as_json,
    ev.CrossoverOpenedEvent: _as_json,
    ev.ChildCreatedEvent: _child_created,
    ev.StepRejectedEvent: _as_json,
    ev.EvaluationDoneEvent: _evaluation_done,
    ev.AgentAdmittedEvent: _agent_verdict,
    ev.AgentRejectedEvent: _agent_verdict,
    ev.AgentRescoredEvent: _as_json,
    ev.StageStoppedEvent: _stage_stopped,
    ev.EpochStartedEvent: _as_json,
    ev.IslandMigrationEvent: _island_migration,
    ev.ExperienceUpdatedEvent: _experience_updated,
    ev.HeldoutStartedEvent: _heldout_started,
    ev.HeldoutFinishedEvent: _heldout_finished,
    ev.CheckpointReachedEvent: _checkpoint_reached,
    ev.CheckpointScoredEvent: _checkpoint_scored,
    ev.PolicyRecordEvent: _policy_record,
    ev.DriverErrorEvent: _driver_error,
    ev.UnreadableEvent: _unreadable,
}
