"""`clade doctor`: is this machine ready? One line per check: ok, warn or fail, and what to do.

Each check asks the real component (the Docker engine, the broker, the database, the service,
the model) with a short timeout and turns the one kind of failure it expects into advice.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import httpx
import typer
from pydantic import BaseModel, SecretStr
from rich.markup import escape

from cli.context import CliContext
from contracts.settings import TOKEN_NAMES, Settings, load_or_create_secrets

if TYPE_CHECKING:
    from sandbox.docker_health import ImagesState

TIMEOUT_S = 5.0
GIB = 1024**3
DISK_FAIL_BYTES = GIB // 2
DISK_WARN_BYTES = 5 * GIB


class Status(StrEnum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"


class Check(BaseModel):
    name: str
    status: Status
    detail: str
    advice: str | None = None


def ok(name: str, detail: str) -> Check:
    return Check(name=name, status=Status.OK, detail=detail)


def warn(name: str, detail: str, advice: str) -> Check:
    return Check(name=name, status=Status.WARN, detail=detail, advice=advice)


def fail(name: str, detail: str, advice: str) -> Check:
    return Check(name=name, status=Status.FAIL, detail=detail, advice=advice)


# -- the checks ----------------------------------------------------------------------


def check_docker(settings: Settings) -> list[Check]:
    """The engine and its version, then the sandbox images a worker needs."""
    from sandbox.base import SandboxUnavailable
    from sandbox.docker_health import engine_state

    try:
        state = engine_state(settings.image_cache_dir, timeout_s=TIMEOUT_S)
    except SandboxUnavailable as exc:
        return [
            fail(
                "docker",
                f"the Docker engine is unreachable ({exc})",
                "start it (`systemctl start docker`) or point DOCKER_HOST at it; workers need it",
            )
        ]
    engine = ok("docker", f"Docker engine {state.version} (API {state.api_version})")
    return [engine, check_images(state.images)]


def check_images(images: ImagesState) -> Check:
    tag = images.base_tag
    build = "build them with `clade images build` (a few minutes; workers also build them on first use)"
    if not images.base_present:
        return warn("images", f"missing: the base image {tag} and the agent runtime", build)
    if not images.runtime_present:
        missing = f"missing: the agent runtime in {images.runtime}"
        return warn("images", f"base image {tag} present; {missing}", build)
    return ok("images", f"base image {tag} and the agent runtime present")


def check_broker(settings: Settings) -> Check:
    from kombu.connection import Connection
    from kombu.exceptions import OperationalError

    if settings.broker_url is None:
        folder = settings.broker_folder
        return ok(
            "broker",
            f"the embedded file broker in {folder}"
            " (this machine only; set CLADE_BROKER_URL to Redis for workers elsewhere)",
        )
    shown = _hide_password(settings.broker_url)
    try:
        # kombu has no type hints; any kombu URL works here as it does for Celery.
        with Connection(settings.broker_url, connect_timeout=TIMEOUT_S) as connection:  # type: ignore[no-untyped-call]
            connection.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=TIMEOUT_S)
    except (OperationalError, OSError) as exc:
        return fail("broker", f"cannot reach {shown} ({exc})", "start Redis, or fix CLADE_BROKER_URL")
    return ok("broker", f"{shown} answers")


def check_database(settings: Settings) -> Check:
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory
    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import SQLAlchemyError

    from service.db.migrate import alembic_config

    url = settings.resolved_database_url
    parsed = make_url(url)
    shown = parsed.render_as_string(hide_password=True)
    if parsed.get_backend_name() == "sqlite" and parsed.database and not Path(parsed.database).exists():
        return warn(
            "database", f"no database yet at {shown}", "it is created when the service starts (`clade serve`)"
        )
    head = ScriptDirectory.from_config(alembic_config(url)).get_current_head()
    connect_args = {"connect_timeout": int(TIMEOUT_S)} if parsed.get_backend_name() == "postgresql" else {}
    engine = create_engine(url, connect_args=connect_args)
    try:
        with engine.connect() as connection:
            current = MigrationContext.configure(connection).get_current_revision()
    except SQLAlchemyError as exc:
        first = str(exc).strip().splitlines()[0]
        return fail(
            "database",
            f"cannot reach {shown} ({first})",
            "start the database, or fix CLADE_DATABASE_URL",
        )
    finally:
        engine.dispose()
    if current != head:
        return warn(
            "database",
            f"{shown} is at migration {current or 'none'}, the code's head is {head}",
            "run `clade db upgrade` (the service also migrates when it starts)",
        )
    return ok("database", f"{shown} answers, migrations at head ({head})")


def check_service(url: str, tokens: dict[str, str]) -> list[Check]:
    """The service's health, then each configured token on an endpoint that needs it."""
    try:
        health = httpx.get(f"{url}/api/health", timeout=TIMEOUT_S)
    except httpx.HTTPError as exc:
        return [
            fail(
                "service",
                f"cannot reach {url} ({exc})",
                "start it with `clade serve` (or `clade up`), or point --url / CLADE_SERVICE_URL at it",
            )
        ]
    if health.status_code == 503:
        service = warn(
            "service",
            f"{url} answers, but its run driver is unhealthy: {health.text[:200]}",
            "see the service's log; runs do not move until the driver ticks again",
        )
    elif health.status_code != 200:
        return [
            fail("service", f"{url}/api/health answered {health.status_code}", "is this a Clade service?")
        ]
    else:
        service = ok("service", f"{url} answers, run driver healthy")
    probes = {
        # Endpoints that need exactly that role and write nothing; a 401 means the token is refused.
        "admin_token": "/api/admin/consistency",
        "worker_token": "/api/worker/agents/0000000000000000000000000000000000000000/code",
        "read_token": "/api/runs?limit=1",
    }
    checks = [service]
    for name, token in tokens.items():
        label = f"{name.removesuffix('_token')} token"
        try:
            answer = httpx.get(
                f"{url}{probes[name]}", headers={"Authorization": f"Bearer {token}"}, timeout=60
            )
        except httpx.HTTPError as exc:
            checks.append(fail(label, f"no answer from {url} ({exc})", "check the service's log"))
            continue
        if answer.status_code == 401:
            variable = f"CLADE_{name.upper()}"
            checks.append(fail(label, "refused by the service", f"set {variable} to the service's value"))
        else:
            checks.append(ok(label, "accepted"))
    return checks


def check_llm(settings: Settings, model: str) -> Check:
    """One call for one token through the worker's upstream, priced as the worker prices it: by
    the model asked for (`model`), with the worker's price table and pricing function."""
    from worker.llm.pricing import load_price_table, price_reply
    from worker.llm.upstream import UpstreamConfig, UpstreamError, make_upstream

    if not settings.llm_base_url:
        return warn(
            "llm",
            "no LLM endpoint configured (CLADE_LLM_BASE_URL)",
            "workers need one; `clade up` and `clade demo` start the scripted offline model without it",
        )
    upstream = make_upstream(
        UpstreamConfig(base_url=settings.llm_base_url, api_key=settings.llm_api_key, timeout_s=30)
    )
    started = time.monotonic()
    try:
        reply = upstream.chat_completions(
            {"model": model, "messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 1}
        )
    except UpstreamError as exc:
        return fail(
            "llm",
            f"{settings.llm_base_url} refused a one-token call to {model}"
            f" ({exc.status}: {exc.message[:200]})",
            "check CLADE_LLM_BASE_URL (with /v1), CLADE_LLM_API_KEY and the model name (--model)",
        )
    finally:
        upstream.close()
    seconds = time.monotonic() - started
    priced = price_reply(load_price_table(settings.price_table_path), model, reply)
    scripted = (
        " (the SCRIPTED model, not a real LLM)" if reply.get("system_fingerprint") == "clade-scripted" else ""
    )
    answered = priced.answered_model
    named = f" as {answered!r}" if answered and answered != model else ""
    tokens = (
        f"{priced.usage.prompt}+{priced.usage.completion} tokens" if priced.usage else "no usage reported"
    )
    detail = f"{model} at {settings.llm_base_url} answered{named} in {seconds:.1f}s{scripted}: {tokens}"
    if not priced.price_known:
        return warn(
            "llm",
            f"{detail}, no price known for {model}",
            f"a run calling {model} is refused unless it gives models.prices (0 for a local server)"
            " or the price table has it (CLADE_PRICE_TABLE_PATH)",
        )
    return ok("llm", f"{detail}, ${priced.cost_usd:.6f}")


def check_disk(settings: Settings) -> Check:
    folder = settings.data_dir
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    free = shutil.disk_usage(folder).free
    detail = f"{free / GIB:.1f} GiB free for the data dir {settings.data_dir}"
    advice = f"free space on the file system of {folder} (the archive and the database grow with every run)"
    if free < DISK_FAIL_BYTES:
        return fail("disk", detail, advice)
    if free < DISK_WARN_BYTES:
        return warn("disk", detail, advice)
    return ok("disk", detail)


# -- the command ---------------------------------------------------------------------


def configured_tokens(settings: Settings) -> dict[str, str]:
    """The tokens this machine has: from the environment, else from the local data dir's secrets."""
    stored = (
        load_or_create_secrets(settings.data_dir) if (settings.data_dir / "secrets.json").exists() else {}
    )
    tokens: dict[str, str] = {}
    for name in TOKEN_NAMES:
        value: SecretStr | None = getattr(settings, name)
        if value is not None:
            tokens[name] = value.get_secret_value()
        elif name in stored:
            tokens[name] = stored[name]
    return tokens


def run_checks(settings: Settings, *, url: str, llm: bool, model: str) -> list[Check]:
    steps: list[Callable[[], list[Check]]] = [
        lambda: check_docker(settings),
        lambda: [check_broker(settings)],
        lambda: [check_database(settings)],
        lambda: check_service(url, configured_tokens(settings)),
    ]
    if llm:
        steps.append(lambda: [check_llm(settings, model)])
    steps.append(lambda: [check_disk(settings)])
    return [check for step in steps for check in step()]


def doctor(
    ctx: typer.Context,
    llm: Annotated[bool, typer.Option("--llm/--no-llm", help="Make a one-token call to the model")] = True,
    model: Annotated[str, typer.Option(help="The model to call")] = "gpt-4o-mini",
) -> None:
    """Check this machine: Docker, images, broker, database, service and tokens, the model, disk."""
    cli: CliContext = ctx.obj
    checks = run_checks(Settings(), url=cli.url.rstrip("/"), llm=llm, model=model)
    failed = any(check.status is Status.FAIL for check in checks)
    if cli.as_json:
        cli.emit_json({"ok": not failed, "checks": [check.model_dump(mode="json") for check in checks]})
    else:
        colours = {Status.OK: "green", Status.WARN: "yellow", Status.FAIL: "red"}
        for check in checks:
            advice = f" -> {escape(check.advice)}" if check.advice else ""
            colour = colours[check.status]
            mark = f"[{colour}]{check.status.value:<4}[/{colour}]"
            cli.console.print(
                f"{mark} {check.name:<13} {escape(check.detail)}{advice}",
                markup=True,
                highlight=False,
                soft_wrap=True,
            )
    if failed:
        raise typer.Exit(1)


def _hide_password(url: str) -> str:
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except ValueError:
        return url
