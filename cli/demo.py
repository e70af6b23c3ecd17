"""`clade demo`: a small evolution run on clade-mini, from a fresh machine, with progress.

After the summary the demo says what to do next with commands that work as printed: while it
keeps serving (the default, until Ctrl-C) they go to another terminal; with `--no-serve` the
service has stopped, so they start with `clade up`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cli.client import ApiClient, api_path
from cli.events import describe_event
from cli.output import fmt_best, fmt_counts, fmt_score, fmt_usd, short
from cli.seeds import pack_agent
from cli.stack import SEED_AGENT_DIR, Stack
from contracts.settings import Settings
from worker.curriculum import DEMO_HELDOUT

DEMO_CONFIG: dict[str, Any] = {
    "name": "demo",
    "benchmark": {"name": "clade-mini"},
    "stages": [{"subset": "mini-5", "threshold": 0.2}, {"subset": "mini-10"}],
    "selection": {"strategy": "score_child_prop"},
    "budget": {"max_children": 4, "max_wall_time_s": 1800},
    "limits": {
        "solve_timeout_s": 120,
        "improve_timeout_s": 180,
        "test_timeout_s": 120,
        "max_agent_steps": 10,
    },
    "parallelism": 2,
    "rng_seed": 0,
    # The pick is made on 3 tasks no stage used, of the kinds the scripted rules teach
    # (worker/curriculum.py): the best agent by selection lower bound at half the evaluation
    # budget and at the end, then the top 2 by score.
    "evaluation": {
        "heldout": {"tasks": list(DEMO_HELDOUT), "top_k": 2},
        "checkpoints": [0.5, 1.0],
    },
}
# Each agent runs at most mini-10's 10 tasks; the pick's scorings (2 checkpoints and the held-out
# phase's 2 agents) 3 tasks each.
EVALUATIONS_PER_AGENT = 10
HELDOUT_SCORINGS = 4
# The model of a demo on the scripted stand-in: it answers to any name, and has a made-up price.
SCRIPTED_MODEL = "scripted"
# A real model's replies are capped so that one call fits in the demo's 120 s solve limit: the
# seed asks for up to 4,096 tokens, and a small local model at tens of tokens a second would be
# cut off by the limit (its try counted at its estimate, docs/money.md) before it answered.
REAL_MODEL_REPLY_TOKENS = 1024
PURPOSES = ("solve", "diagnose", "improve", "judge")


@dataclass(frozen=True)
class DemoModel:
    """The model the demo's run asks for every purpose, and the price the run declares for it
    (USD per million prompt and completion tokens); None leaves it to the service's price table."""

    name: str
    price: tuple[float, float] | None = None


SCRIPTED = DemoModel(SCRIPTED_MODEL)


def parse_price(text: str) -> tuple[float, float]:
    """`PROMPT_PER_MTOK:COMPLETION_PER_MTOK` (USD per million tokens), e.g. `0.15:0.6` or `0:0`."""
    prompt, sep, completion = text.partition(":")
    try:
        if not sep:
            raise ValueError
        prices = float(prompt), float(completion)
    except ValueError:
        raise ValueError(
            f"--price {text!r}: expected PROMPT_PER_MTOK:COMPLETION_PER_MTOK, e.g. 0:0 or 0.15:0.6"
        ) from None
    if any(price < 0 or price != price or price == float("inf") for price in prices):
        raise ValueError(f"--price {text!r}: prices are finite and not negative (USD per million tokens)")
    return prices


SHOWN = (
    "child_created",
    "agent_admitted",
    "agent_rejected",
    "step_rejected",
    "checkpoint_reached",
    "checkpoint_scored",
    "heldout_started",
    "heldout_finished",
    "run_completed",
    "run_cancelled",
)


def demo_config(seed_id: str, max_children: int, model: DemoModel = SCRIPTED) -> dict[str, Any]:
    """The demo's run configuration for `max_children` children, asking `model` for every purpose:
    evaluations enough for every agent and the pick's scorings, so that only the children bound it."""
    evaluations = EVALUATIONS_PER_AGENT * (max_children + 1) + HELDOUT_SCORINGS * len(DEMO_HELDOUT)
    budget = DEMO_CONFIG["budget"] | {"max_children": max_children, "max_evaluations": evaluations}
    if model.name != SCRIPTED_MODEL:
        budget |= {"max_reply_tokens": REAL_MODEL_REPLY_TOKENS}
    models: dict[str, Any] = dict.fromkeys(PURPOSES, model.name)
    if model.price is not None:
        prompt, completion = model.price
        models["prices"] = {model.name: {"prompt": prompt, "completion": completion}}
    return DEMO_CONFIG | {
        "seed_agent": seed_id,
        "budget": budget,
        "models": models,
    }


def run_demo(
    stack: Stack, client: ApiClient, console: Console, max_children: int, model: DemoModel
) -> tuple[str, str | None]:
    """Import the seed, run the demo to its end, print the archive; the run's id and its best agent."""
    if stack.scripted:
        console.print(
            "[yellow]model: the SCRIPTED offline model (a deterministic stand-in, not a real LLM)[/yellow] "
            f"at {stack.llm_base_url}"
        )
    else:
        price = (
            "priced by the price table"
            if model.price is None
            else "declared ${:g}:${:g} per 1M tokens".format(*model.price)
        )
        console.print(f"model: {model.name} at {stack.llm_base_url} ({price})", soft_wrap=True)
    seed = client.post(
        api_path("/api/seeds"),
        files={"file": ("seed.tar", pack_agent(SEED_AGENT_DIR), "application/x-tar")},
        data={"name": "clade-seed"},
    )
    console.print(f"seed agent imported: {seed['id']}")
    run = client.post(api_path("/api/runs"), json=demo_config(seed["id"], max_children, model))
    console.print(
        f"run {run['id']} started: {max_children} children, stages mini-5 (>= 20% to go on) then mini-10;"
        " its pick measured on 3 held-out tasks at half its evaluations and at the end, then the top 2"
    )
    console.print(
        f"watch it elsewhere with: clade run watch {run['id']}   (dashboard: {stack.service_url}/)",
        soft_wrap=True,
    )
    last = 0
    while True:
        stack.check_alive()
        for event in client.get(
            api_path("/api/runs/{run_id}/events", run_id=run["id"]), after=last, limit=500
        ):
            last = event["id"]
            if event["kind"] in SHOWN:
                console.print(describe_event(event))
        state = client.get(api_path("/api/runs/{run_id}", run_id=run["id"]))
        if state["status"] in ("completed", "cancelled", "failed"):
            break
        time.sleep(1.0)
    best = summarize(client, console, run["id"])
    return str(run["id"]), best


def summarize(client: ApiClient, console: Console, run_id: str) -> str | None:
    """The archive as a table, the run's totals, and the best agent's lineage; its id."""
    run = client.get(api_path("/api/runs/{run_id}", run_id=run_id))
    nodes = client.get(api_path("/api/runs/{run_id}/lineage", run_id=run_id))["nodes"]
    table = Table("agent", "parent", "step", "status", "score", "children", "reason", title="the archive")
    for node in nodes:
        table.add_row(
            short(node["id"]),
            short(node["parent_id"]),
            str(node["step"] or 0),
            node["status"],
            fmt_counts(node.get("resolved"), node.get("attempted")),
            str(node["children"]),
            escape((node["reason"] or "")[:70]),
        )
    console.print(table)
    progress = run["progress"]
    console.print(
        f"run {run['status']}: {run['stop_reason']}; cost {fmt_usd(progress['usd'])}, "
        f"{progress['tokens']} tokens, {progress['elapsed_s']:.0f}s; "
        f"{progress.get('evaluations_reused', 0)} evaluations reused (identical code, same task)"
    )
    best = progress["best_agent_id"]
    if best:
        by_id = {node["id"]: node for node in nodes}
        lineage = client.get(api_path("/api/agents/{agent_id}", agent_id=best))["lineage"]
        path = " -> ".join(
            f"{short(a)} ({fmt_score(by_id[a]['score'] if a in by_id else None)})" for a in lineage
        )
        score = fmt_best(progress)
        if progress.get("best_heldout_score") is not None:
            score += f", held-out {fmt_best(progress, heldout=True)}"
        console.print(f"best agent {best}: score {score}")
        console.print(f"its lineage: {path}")
    return str(best) if best else None


def next_steps(console: Console, *, service_url: str, run_id: str, best: str | None, serving: bool) -> None:
    """Commands to go on with, each on one unwrapped line so that it can be copied as it is."""
    default_url = Settings.model_fields["service_url"].default
    clade = "clade" if service_url == default_url else f"clade --url {service_url}"
    commands = [f"{clade} run show {run_id}"]
    if best:
        commands.append(f"{clade} agent export {best} --out best-agent.tar.gz")
    if serving:
        console.print(
            f"the archive and the dashboard stay up at {service_url}/ until Ctrl-C; in another terminal:",
            soft_wrap=True,
        )
    else:
        console.print(
            "the service stops with the demo: start it again with `clade up`, then in another terminal:",
            soft_wrap=True,
        )
    for command in commands:
        console.print(f"  {command}", soft_wrap=True, highlight=False)
