"""`clade bench ...`: list benchmarks, check a benchmark's tasks, score one agent outside a run.

Every command that names a benchmark takes its options (`--option KEY=VALUE`,
`--options FILE.yaml`, see cli/options.py). With `--json`, stdout holds exactly one
JSON document; progress and summaries go to stderr.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cli.bench_prepare import prepare
from cli.client import ApiClient, CliError, UsageError, api_path
from cli.context import CliContext
from cli.options import OptionPairs, OptionsFile, benchmark_from_cli
from cli.output import err_console, fmt_score, fmt_usd, reported_errors
from contracts.quarantine import MAX_TRIALS

if TYPE_CHECKING:
    from benchmarks.check import TaskCheck

app = typer.Typer(no_args_is_help=True)
app.command("prepare")(prepare)


def _progress() -> Progress:
    # On stderr: stdout is for the result (one JSON document with --json).
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
    )


@app.command("list")
def list_benchmarks(
    ctx: typer.Context,
    name: Annotated[str | None, typer.Argument(help="One benchmark: list its tasks")] = None,
    option: OptionPairs = None,
    options: OptionsFile = None,
) -> None:
    """Benchmarks the service knows, with their tasks and named subsets; or one benchmark's tasks."""
    cli: CliContext = ctx.obj
    if name is not None:
        _list_tasks(cli, name, option, options)
        return
    if option or options:
        raise typer.BadParameter("options need a benchmark NAME", param_hint="--option/--options")
    with reported_errors():
        benchmarks = cli.client().get(api_path("/api/benchmarks"))
    if cli.as_json:
        cli.emit_json(benchmarks)
        return
    table = Table("benchmark", "tasks", "subsets", "note")
    for bench in benchmarks:
        subsets = ", ".join(f"{name} ({count})" for name, count in bench["subsets"].items())
        note = escape((bench["note"] or "")[:80])
        table.add_row(escape(bench["name"]), str(bench["tasks"] or "-"), escape(subsets), note)
    cli.console.print(table)


def _list_tasks(cli: CliContext, name: str, pairs: list[str] | None, path: Path | None) -> None:
    benchmark = benchmark_from_cli(name, pairs, path)
    with reported_errors():
        described = cli.client().post(
            api_path("/api/benchmarks/tasks"),
            json={"benchmark": benchmark.model_dump(mode="json", exclude_unset=True)},
        )
    if cli.as_json:
        cli.emit_json(described)
        return
    subsets = Table("subset", "tasks", title=f"{name}: {len(described['tasks'])} tasks")
    for subset, ids in described["subsets"].items():
        subsets.add_row(subset, str(len(ids)))
    cli.console.print(subsets)
    for task_id in described["tasks"]:
        cli.console.print(task_id, highlight=False, markup=False)


@app.command("check")
def check(
    ctx: typer.Context,
    name: str,
    option: OptionPairs = None,
    options: OptionsFile = None,
    workers: Annotated[int, typer.Option(min=1, help="Tasks graded in parallel")] = 2,
    timeout: Annotated[float, typer.Option(help="Seconds for each task's tests")] = 300,
    trials: Annotated[
        int,
        typer.Option(min=1, max=MAX_TRIALS, help="Grade each task's gold and empty patches this many times"),
    ] = 1,
    quarantine_out: Annotated[
        Path | None,
        typer.Option(
            help="Write the quarantined tasks and their evidence here (JSON, for a run's quarantine.file)"
        ),
    ] = None,
) -> None:
    """Grade every task with its gold patch and with the empty patch, here (needs Docker).

    NAME is a registered benchmark, or the path of a benchmark folder (docs/own-benchmark.md).
    With --trials k each task is graded k times: a task whose gold patch fails in any trial or
    whose empty patch resolves in any is quarantined, and its flaky tests named.
    """
    from benchmarks.base import BenchmarkError, OptionError, check_environment
    from benchmarks.check import check_benchmark, quarantine_record
    from benchmarks.images import build_benchmark_image, has_image
    from benchmarks.registry import build_benchmark
    from cli.sandboxes import local_backend
    from sandbox.base import SandboxError

    cli: CliContext = ctx.obj
    config = benchmark_from_cli(name, option, options)
    with reported_errors():
        try:
            backend = local_backend("bench-check")
            image = backend.images.base()
            if has_image(config.name):  # its toolchains must exist before it grades
                err_console.print(
                    f"building {config.name}'s image if needed (the first time takes a while) ..."
                )
                build_benchmark_image(config.name, backend.images, progress=lambda _: None)
            benchmark = build_benchmark(config)
            check_environment(benchmark, benchmark.tasks(), backend)
        except OptionError as exc:
            raise CliError(f"{name} option {exc.field}: {exc}") from exc
        except BenchmarkError as exc:
            raise CliError(f"{name} cannot load: {exc}") from exc
        except SandboxError as exc:
            raise CliError(f"cannot run sandboxes: {exc}") from exc
        try:
            total = len(benchmark.tasks())
            with _progress() as bar:
                job = bar.add_task(
                    f"checking {name}" + (f" ({trials} trials)" if trials > 1 else ""), total=total
                )
                results = check_benchmark(
                    benchmark,
                    backend,
                    image,
                    timeout,
                    progress=lambda *_: bar.advance(job),
                    workers=workers,
                    trials=trials,
                )
        except SandboxError as exc:
            raise CliError(f"cannot run sandboxes: {exc}") from exc
        if quarantine_out is not None:
            record = quarantine_record(config.name, config.options, trials, results)
            try:
                quarantine_out.write_text(record.model_dump_json(indent=2) + "\n")
            except OSError as exc:
                raise CliError(f"--quarantine-out {quarantine_out}: cannot write it ({exc})") from exc
            err_console.print(f"{len(record.tasks)} quarantined task(s) written to {quarantine_out}")
    report_check(cli, name, results, trials=trials, quarantine=trials > 1 or quarantine_out is not None)


def report_check(
    cli: CliContext, name: str, results: list[TaskCheck], *, trials: int = 1, quarantine: bool = False
) -> None:
    """The check's results on stdout (a table, or one JSON document); the verdict on stderr
    with --json; exit code 1 if any task failed. Tasks whose starting code already passes
    (nothing to solve) are listed apart, not as failures. With `quarantine` (several trials,
    or a quarantine file asked for), the quarantined tasks with their evidence and the flaky
    tests follow the table, and the JSON carries each task's trials and verdict."""
    passing_stubs = [r for r in results if r.starting_code_passes]
    bad = [r for r in results if not r.ok and not r.starting_code_passes]
    if cli.as_json:
        exclude = {"gold", "empty"} | (set() if quarantine else set(_TRIAL_FIELDS))
        cli.emit_json([r.model_dump(mode="json", exclude=exclude) for r in results])
    else:
        table = Table(
            "task", "gold resolves", "empty does not", "note", title=f"{name}: {len(results)} tasks"
        )
        for r in results:
            note = "; ".join(r.problems + r.warnings)
            table.add_row(
                escape(r.instance_id), _mark(r.gold_resolves), _mark(not r.empty_resolves), escape(note[:80])
            )
        cli.console.print(table)
    summary = err_console if cli.as_json else cli.console
    if quarantine:
        _report_quarantine(summary, results, trials)
    if passing_stubs:
        summary.print(
            f"[yellow]{len(passing_stubs)} task(s) already pass as shipped (nothing to solve): "
            f"{', '.join(r.instance_id for r in passing_stubs)}[/yellow]"
        )
    if bad:
        summary.print(f"[red]{len(bad)} of {len(results)} tasks failed the check[/red]")
        raise typer.Exit(1)
    good = len(results) - len(passing_stubs)
    summary.print(f"[green]{good} of {len(results)} tasks: gold resolves, empty does not[/green]")


_TRIAL_FIELDS = ("trials", "quarantined", "evidence", "flaky_tests")


def _report_quarantine(out: Console, results: list[TaskCheck], trials: int) -> None:
    """Each quarantined task with its evidence, every trial and its flaky tests; then the flaky
    tests of the tasks that are not quarantined."""
    from benchmarks.trials import describe_flaky

    quarantined = [r for r in results if r.quarantined]
    heading = f"quarantined: {len(quarantined)} of {len(results)} tasks ({trials} trial(s) each)"
    out.print(f"[bold]{heading}[/bold]" if quarantined else heading, highlight=False)
    for r in quarantined:
        out.print(f"  {escape(r.instance_id)}", highlight=False)
        for line in r.evidence:
            out.print(f"    {escape(line)}", highlight=False)
        for t in r.trials:
            out.print(
                f"    trial {t.trial}: gold {'resolved' if t.gold_resolved else 'NOT resolved'}"
                f" ({escape(t.gold_reason)}); empty {'RESOLVED' if t.empty_resolved else 'not resolved'}"
                f" ({escape(t.empty_reason)})",
                highlight=False,
            )
        for test in r.flaky_tests:
            out.print(f"    flaky: {escape(describe_flaky(test))}", highlight=False)
    for r in results:
        if not r.quarantined and r.flaky_tests:
            flaky = "; ".join(describe_flaky(test) for test in r.flaky_tests)
            out.print(f"  flaky tests in {escape(r.instance_id)} (not quarantined): {escape(flaky)}")


def _mark(ok: bool) -> str:
    return "[green]yes[/green]" if ok else "[red]NO[/red]"


@app.command("run")
def run(
    ctx: typer.Context,
    name: str,
    agent: Annotated[str, typer.Option(help="Agent id to score")],
    option: OptionPairs = None,
    options: OptionsFile = None,
    subset: Annotated[str | None, typer.Option(help="Named subset (default: all tasks)")] = None,
    model: Annotated[str, typer.Option(help="Model the agent solves with")] = "scripted",
) -> None:
    """Score one agent on a benchmark outside any evolution (an evaluation-only run)."""
    cli: CliContext = ctx.obj
    benchmark = benchmark_from_cli(name, option, options)
    with reported_errors():
        client = cli.client()
        agent = _known_agent(client, agent)
    config: dict[str, Any] = {
        "name": f"bench {name} {agent[:12]}",
        "seed_agent": agent,
        "benchmark": benchmark.model_dump(mode="json", exclude_unset=True),
        "stages": [{"subset": subset}] if subset else [{}],
        "models": {"solve": model, "improve": model, "diagnose": model},
        "budget": {"max_children": 0},
    }
    with reported_errors():
        started = client.post(api_path("/api/runs"), json=config)
        run_id, total = started["id"], len(started["stage_tasks"][0])
        with _progress() as bar:
            job = bar.add_task(f"{name}: agent {agent[:12]}", total=total)
            while True:
                state = client.get(api_path("/api/runs/{run_id}", run_id=run_id))
                evaluations = _evaluations(client.get(api_path("/api/agents/{agent}", agent=agent)), run_id)
                bar.update(job, completed=sum(1 for e in evaluations if e["status"] == "done"))
                if state["status"] != "running":
                    break
                time.sleep(1)
        if state["status"] != "completed":
            raise CliError(f"run {run_id} ended {state['status']}: {state['stop_reason']}")
    resolved = sum(1 for e in evaluations if e["resolved"])
    if cli.as_json:
        cli.emit_json({"run_id": run_id, "resolved": resolved, "total": total, "evaluations": evaluations})
        return
    table = Table("task", "resolved", "cost", "tokens", title=f"{name}: agent {agent[:12]} (run {run_id})")
    for e in evaluations:
        tokens = e["prompt_tokens"] + e["completion_tokens"]
        table.add_row(e["task_id"], _mark(bool(e["resolved"])), fmt_usd(e["cost_usd"]), str(tokens))
    cli.console.print(table)
    cli.console.print(f"resolved {resolved}/{total} = {fmt_score(resolved / total if total else None)}")


def _known_agent(client: ApiClient, agent: str) -> str:
    """The id of the agent `--agent` names, or a UsageError naming `--agent`."""
    if not agent:
        raise UsageError("--agent is empty: give an agent id")
    try:
        return str(client.get(api_path("/api/agents/{agent}", agent=agent))["id"])
    except CliError as exc:
        if exc.http_status == 404:
            raise UsageError(
                f"--agent: no agent {agent!r} in the archive (`clade seed import` adds one)"
            ) from exc
        raise


def _evaluations(agent: dict[str, Any], run_id: str) -> list[dict[str, Any]]:
    in_run = next((r for r in agent["runs"] if r["run_id"] == run_id), None)
    return list(in_run["evaluations"]) if in_run else []
