"""Commands that run processes on this machine: the service, migrations."""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated
from urllib.parse import urlparse

import typer

from contracts.logs import configure_logging
from contracts.settings import get_settings

# Owner name of this command's backend: image builds start no sandbox, so it labels none.
IMAGES_OWNER = "clade-images"

if TYPE_CHECKING:
    from rich.console import Console

    from cli.demo import DemoModel
    from cli.stack import Stack
    from contracts.settings import Settings

db_app = typer.Typer(no_args_is_help=True)


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Apply database migrations (the service also does this when it starts)."""
    from service.db.migrate import upgrade

    os.umask(0o077)  # a new SQLite database is for this user only
    settings = get_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    upgrade(settings.resolved_database_url)
    typer.echo(f"database at {settings.resolved_database_url} is up to date")


def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (default: from CLADE_SERVICE_URL)")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default: from CLADE_SERVICE_URL)")] = None,
    fd: Annotated[
        int | None,
        # For a parent that bound the port itself (a test on a busy machine): no other process can
        # take it between picking it and serving on it.
        typer.Option(hidden=True, help="Serve on this inherited, bound TCP socket instead of binding"),
    ] = None,
) -> None:
    """Run the service: REST API, archive and run driver."""
    import socket

    import uvicorn
    from uvicorn.config import LOGGING_CONFIG

    from service.api.app import create_app
    from service.api.connections import server_options

    # Whatever the service creates (database, archive, broker files, logs) is for this user only.
    os.umask(0o077)
    settings = get_settings()
    where = urlparse(settings.service_url)
    # JSON lines: uvicorn's own loggers pass their records to the root's JSON handler (log_config=None).
    json_logs = settings.log_format == "json"
    if json_logs:
        configure_logging("json", process="service")
    log_config = None if json_logs else LOGGING_CONFIG
    if fd is not None:
        listener = socket.socket(fileno=fd)
        app = create_app(settings, bind_host=str(listener.getsockname()[0]))
        config = uvicorn.Config(app, log_config=log_config, **server_options(settings))
        uvicorn.Server(config).run(sockets=[listener])
        return
    bind_host = host or where.hostname or "127.0.0.1"
    app = create_app(settings, bind_host=bind_host)
    uvicorn.run(
        app,
        host=bind_host,
        port=port or where.port or 8420,
        log_config=log_config,
        **server_options(settings),
    )


def worker(
    concurrency: Annotated[int, typer.Option(min=1, help="Parallel task slots")] = 2,
    name: Annotated[
        str | None,
        typer.Option(
            help="Worker name, unique among live workers (its sandboxes' owner label)"
            " (default: CLADE_WORKER_NAME, else host name, pid and a random suffix)"
        ),
    ] = None,
) -> None:
    """Run a worker: needs CLADE_BROKER_URL, CLADE_SERVICE_URL, CLADE_WORKER_TOKEN, CLADE_LLM_BASE_URL."""
    settings = get_settings()
    if settings.worker_metrics_port is not None:
        prepare_multiprocess_metrics(settings.worker_metrics_dir)
    from worker.main import run_worker

    run_worker(settings, concurrency=concurrency, name=name)


def prepare_multiprocess_metrics(folder: Path) -> None:
    """prometheus-client's multiprocess mode has one switch, this variable, read when it is first
    imported: set here, before the worker's modules import it. Old processes' files are removed."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(folder)


def up(concurrency: Annotated[int, typer.Option(min=1, help="Worker task slots")] = 2) -> None:
    """Run the service, its run driver and one worker on this machine (Ctrl-C stops all)."""
    from cli.stack import local_stack

    settings = get_settings()
    stop_like_ctrl_c()
    with local_stack(settings, concurrency=concurrency) as stack:
        model = "the SCRIPTED offline model (not a real LLM)" if stack.scripted else stack.llm_base_url
        typer.echo(f"Clade is up at {stack.service_url} (API docs at /docs); model: {model}")
        typer.echo(f"logs: {stack.log_dir}; Ctrl-C to stop")
        hold(stack)


def stop_like_ctrl_c() -> None:
    """`kill` (SIGTERM) and a closed terminal (SIGHUP) stop the whole stack as Ctrl-C does, so no
    child process is left behind; under `nohup` (SIGHUP ignored) it stays up."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    if signal.getsignal(signal.SIGHUP) is signal.SIG_DFL:
        signal.signal(signal.SIGHUP, signal.default_int_handler)


def hold(stack: Stack) -> None:
    """Keep the stack up until Ctrl-C or SIGTERM; a process of it that dies ends the wait with an error."""
    try:
        while True:
            stack.check_alive()
            time.sleep(1)
    except KeyboardInterrupt:
        typer.echo("stopping")


def demo(
    children: Annotated[int, typer.Option(min=1, max=50, help="Children to make")] = 4,
    concurrency: Annotated[int, typer.Option(min=1, help="Worker task slots")] = 2,
    serve: Annotated[
        bool,
        typer.Option("--serve/--no-serve", help="Serve the archive and dashboard after the run until Ctrl-C"),
    ] = True,
    model: Annotated[
        str | None,
        typer.Option(
            help="The model the endpoint in CLADE_LLM_BASE_URL serves, for every purpose (needed with an"
            " endpoint; without one the demo plays the scripted stand-in)"
        ),
    ] = None,
    price: Annotated[
        str | None,
        typer.Option(
            metavar="PROMPT_PER_MTOK:COMPLETION_PER_MTOK",
            help="USD per million prompt:completion tokens declared for --model (default: the price"
            " table's, else 0:0, as for a local server)",
        ),
    ] = None,
) -> None:
    """`clade up`, plus a small evolution run on clade-mini with progress and a final summary."""
    from cli.client import ApiClient, CliError
    from cli.demo import next_steps, run_demo
    from cli.output import SafeConsole, reported_errors
    from cli.stack import local_stack

    settings = get_settings()
    console = SafeConsole()
    with reported_errors():
        chosen = demo_model(settings, model, price, console)
    stop_like_ctrl_c()  # as in `up`: stop the stack, leave nothing
    console.print(f"data directory: {settings.data_dir}")
    console.print("building the sandbox image if needed (the first time takes a few minutes) ...")
    build_images(quiet=True)
    with reported_errors(), local_stack(settings, concurrency=concurrency) as stack:
        assert settings.admin_token is not None
        client = ApiClient(stack.service_url, settings.admin_token.get_secret_value(), timeout=120)
        try:
            run_id, best = run_demo(stack, client, console, children, chosen)
        except RuntimeError as exc:
            raise CliError(str(exc)) from exc
        next_steps(console, service_url=stack.service_url, run_id=run_id, best=best, serving=serve)
        if serve:
            hold(stack)


def demo_model(settings: Settings, model: str | None, price: str | None, console: Console) -> DemoModel:
    """The demo's model: the scripted stand-in without an endpoint; with one, `--model` (required:
    a real server refuses the name "scripted") and its price: `--price`, else the price table's,
    else declared free (a local server's), said on the console."""
    from cli.client import CliError
    from cli.demo import SCRIPTED_MODEL, DemoModel, parse_price
    from contracts.prices import load_price_table

    if not settings.llm_base_url:
        if model is not None or price is not None:
            raise CliError(
                "--model and --price name a real model: set CLADE_LLM_BASE_URL to its endpoint (with /v1);"
                " without one the demo runs the scripted stand-in"
            )
        return DemoModel(SCRIPTED_MODEL)
    if model is None:
        raise CliError(
            f"CLADE_LLM_BASE_URL is {settings.llm_base_url}: give --model NAME, the model it serves"
            " (e.g. --model gpt-4o-mini, or the alias of a local llama-server)"
        )
    if price is not None:
        try:
            return DemoModel(model, parse_price(price))
        except ValueError as exc:
            raise CliError(str(exc)) from exc
    if load_price_table(settings.price_table_path).price(model) is not None:
        return DemoModel(model)
    console.print(
        f"no price known for {model}: declared free ($0, as for a local server); give --price"
        " PROMPT_PER_MTOK:COMPLETION_PER_MTOK for a paid endpoint",
        soft_wrap=True,
    )
    return DemoModel(model, (0.0, 0.0))


def build_images(quiet: bool = False) -> None:
    """Build the sandbox base image locally (debootstrap, wheels from the host) and the agent
    runtime made from it, or reuse them."""
    from cli.sandboxes import local_backend

    images = local_backend(IMAGES_OWNER).images
    progress = (lambda _line: None) if quiet else typer.echo
    tag = images.base(progress=progress)
    runtime = images.runtime(tag, progress=progress)
    if not quiet:
        typer.echo(f"base image ready: {tag}")
        typer.echo(f"agent runtime ready: {runtime}")


images_app = typer.Typer(no_args_is_help=True)


@images_app.command("build")
def images_build(
    benchmark: Annotated[
        str | None, typer.Option(help="Also build this benchmark's own image (e.g. polyglot's toolchains)")
    ] = None,
) -> None:
    """Build (or reuse) the sandbox base image and the agent runtime, and a benchmark's image when asked."""
    build_images()
    if benchmark is not None:
        from benchmarks.base import BenchmarkError
        from benchmarks.images import build_benchmark_image
        from cli.client import CliError
        from cli.output import reported_errors
        from cli.sandboxes import local_backend
        from sandbox.base import SandboxError

        started = time.monotonic()
        with reported_errors():
            try:
                images = local_backend(IMAGES_OWNER).images
                tag = build_benchmark_image(benchmark, images, progress=typer.echo)
            except (BenchmarkError, SandboxError) as exc:
                raise CliError(str(exc)) from exc
        typer.echo(f"{benchmark} image ready: {tag} ({time.monotonic() - started:.0f}s)")


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
    app.command("worker")(worker)
    app.command("up")(up)
    app.command("demo")(demo)
    app.add_typer(images_app, name="images", help="Sandbox images.")
