"""`clade agent transfer AGENT --model M ...`: re-score an agent on other solving models.

One evaluation-only run (`budget.max_children: 0`) per model, on the same benchmark and tasks,
started together; once they end, the agent's transfer table (`GET /api/agents/{id}/transfer`,
which pools every evaluation-only run that named the agent) is printed for those models.
"""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from cli.client import ApiClient, CliError, api_path
from cli.context import CliContext
from cli.options import OptionPairs, OptionsFile, benchmark_from_cli
from cli.output import err_console, fmt_interval, fmt_usd, reported_errors

POLL_S = 1.0


def transfer(
    ctx: typer.Context,
    agent_id: Annotated[str, typer.Argument(help="The agent to re-score (its id)")],
    model: Annotated[
        list[str],
        typer.Option("--model", "-m", help="A solving model (repeatable); a,b for a fallback order"),
    ],
    benchmark: Annotated[str, typer.Option(help="A registered benchmark")] = "clade-mini",
    option: OptionPairs = None,
    options: OptionsFile = None,
    subset: Annotated[str | None, typer.Option(help="Named subset (default: all tasks)")] = None,
    task: Annotated[list[str] | None, typer.Option("--task", help="One task id (repeatable)")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the runs")] = 24 * 3600,
) -> None:
    """Score AGENT on each --model (evaluation-only runs), then print resolved/total, the rate with
    its 95% Wilson interval and the cost, per model."""
    cli: CliContext = ctx.obj
    config = benchmark_from_cli(benchmark, option, options)
    if subset is not None and task:
        raise typer.BadParameter("give --subset or --task, not both", param_hint="--task")
    stage: dict[str, Any] = {"subset": subset} if subset else {"tasks": task} if task else {}
    chains = [[name.strip() for name in spec.split(",")] for spec in model]
    with reported_errors():
        client = cli.client()
        agent = _agent(client, agent_id)
        started = [
            _start(client, agent, chain, config.model_dump(mode="json", exclude_unset=True), stage)
            for chain in chains
        ]
        _wait(client, [run["id"] for run in started], timeout)
        table = client.get(api_path("/api/agents/{agent}/transfer", agent=agent))
    wanted = {chain[0] for chain in chains}
    rows = [row for row in table["rows"] if row["model"] in wanted and row["benchmark"] == config.name]
    if cli.as_json:
        cli.emit_json({"agent_id": agent, "runs": [run["id"] for run in started], "rows": rows})
        return
    cli.console.print(transfer_table(rows, title=f"agent {agent[:12]} on {config.name}"))


def transfer_table(rows: list[dict[str, Any]], *, title: str) -> Table:
    table = Table("model", "resolved", "rate [95% interval]", "cost", "tokens", "runs", title=title)
    for row in rows:
        name = " > ".join([row["model"], *row["fallbacks"]])
        table.add_row(
            escape(name),
            f"{row['resolved']}/{row['total']}",
            fmt_interval(row["rate"], row["low"], row["high"]),
            fmt_usd(row["usd"]),
            str(row["tokens"]),
            str(len(row["runs"])) + (f" ({row['running']} running)" if row["running"] else ""),
        )
    return table


def _agent(client: ApiClient, agent_id: str) -> str:
    try:
        return str(client.get(api_path("/api/agents/{agent_id}", agent_id=agent_id))["id"])
    except CliError as exc:
        if exc.http_status == 404:
            raise CliError(
                f"AGENT: no agent {agent_id!r} in the archive (`clade agent show` lists one)"
            ) from exc
        raise


def _start(
    client: ApiClient, agent: str, chain: list[str], benchmark: dict[str, Any], stage: dict[str, Any]
) -> dict[str, Any]:
    solve: str | list[str] = chain[0] if len(chain) == 1 else chain
    config = {
        "name": f"transfer {agent[:12]} {chain[0]}",
        "seed_agent": agent,
        "benchmark": benchmark,
        "stages": [stage],
        "models": {"solve": solve, "improve": chain[0], "diagnose": chain[0], "judge": chain[0]},
        "budget": {"max_children": 0},
    }
    run: dict[str, Any] = client.post(api_path("/api/runs"), json=config)
    err_console.print(f"run {run['id']}: {agent[:12]} with {' > '.join(chain)}")
    return run


def _wait(client: ApiClient, run_ids: list[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    pending = set(run_ids)
    while pending:
        for run_id in sorted(pending):
            state = client.get(api_path("/api/runs/{run_id}", run_id=run_id))
            if state["status"] == "running":
                continue
            pending.discard(run_id)
            if state["status"] != "completed":
                raise CliError(f"run {run_id} ended {state['status']}: {state['stop_reason']}")
        if pending and time.monotonic() > deadline:
            raise CliError(f"runs still running after {timeout:g}s: {', '.join(sorted(pending))}")
        if pending:
            time.sleep(POLL_S)
