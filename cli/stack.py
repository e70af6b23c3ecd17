"""Starting Clade's processes on one machine: the scripted model (if no LLM is configured),
the service with its run driver, and a worker. Used by `clade up` and `clade demo`."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from urllib.parse import urlparse

import httpx

from contracts.lifetime import parent_death_hook
from contracts.settings import Settings


def seed_agent_dir() -> Path:
    """The seed agent's folder: inside the installed `cli` package (a wheel carries it, see
    setup.py), else the checkout's `seed_agent/` next to `cli/`."""
    packaged = resources.files("cli") / "seed_agent"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(str(resources.files("cli"))).parent / "seed_agent"


SEED_AGENT_DIR = seed_agent_dir()


@dataclass
class Stack:
    service_url: str
    llm_base_url: str
    scripted: bool
    log_dir: Path
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def check_alive(self) -> None:
        for name, process in self.processes.items():
            if process.poll() is not None:
                log = self.log_dir / f"{name}.log"
                raise RuntimeError(f"the {name} process exited with {process.returncode}; see {log}")


def listening_socket(host: str) -> socket.socket:
    """A socket listening on a port of `host` that the kernel picks: handed to the service so that
    no other process can take the port between picking it and serving on it."""
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    try:
        listener.bind((host, 0))
        listener.listen(128)
    except OSError:
        listener.close()
        raise
    return listener


def write_demo_script(settings: Settings) -> Path:
    """The scripted curriculum for clade-mini, used when no real model endpoint is configured."""
    from benchmarks.registry import get_benchmark
    from worker.curriculum import DEMO_CURRICULUM, build_script

    script = build_script(get_benchmark("clade-mini").tasks(), DEMO_CURRICULUM)
    path = settings.data_dir / "scripted-demo.json"
    path.write_text(script.model_dump_json(indent=2))
    return path


@contextmanager
def local_stack(settings: Settings, *, concurrency: int) -> Iterator[Stack]:
    """Start the processes, wait until the service answers, stop them all on exit."""
    # The database, archive, broker and secrets live here: for this user only.
    settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    log_dir = settings.data_dir / "logs"
    log_dir.mkdir(exist_ok=True, mode=0o700)
    env = dict(os.environ) | {
        "CLADE_DATA_DIR": str(settings.data_dir),
        "CLADE_SERVICE_URL": settings.service_url,
    }
    scripted = not settings.llm_base_url
    stack = Stack(
        service_url=settings.service_url,
        llm_base_url=settings.llm_base_url or "",
        scripted=scripted,
        log_dir=log_dir,
    )
    try:
        if scripted:
            # On a port the server picks and reports once listening: never one picked here and
            # bound later, which another process could take in between.
            ready = log_dir / "scripted-model.url"
            ready.unlink(missing_ok=True)
            script = write_demo_script(settings)
            argv = ["-m", "worker.llm.scripted", "--script", str(script), "--port", "0"]
            argv += ["--ready-file", str(ready)]
            _spawn(stack, "scripted-model", argv, env)
            stack.llm_base_url = _read_ready_file(stack, ready)
            env["CLADE_LLM_BASE_URL"] = stack.llm_base_url
        # Only workers call the model: the service process never holds its key.
        where = urlparse(settings.service_url)
        if where.port == 0:  # any free port: bound here, served by the service on that socket
            with listening_socket(where.hostname or "127.0.0.1") as listener:
                host, port = listener.getsockname()[:2]
                stack.service_url = f"{where.scheme}://{_url_host(host)}:{port}"
                env["CLADE_SERVICE_URL"] = stack.service_url
                argv = ["-m", "cli.main", "serve", "--fd", str(listener.fileno())]
                _spawn(stack, "service", argv, service_env(env), pass_fds=(listener.fileno(),))
        else:
            _spawn(stack, "service", ["-m", "cli.main", "serve"], service_env(env))
        _wait_for(stack, f"{stack.service_url}/api/health")
        _spawn(stack, "worker", ["-m", "cli.main", "worker", "--concurrency", str(concurrency)], env)
        yield stack
    finally:
        for process in reversed(stack.processes.values()):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in stack.processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


SERVICE_WITHHELD = ("CLADE_LLM_API_KEY",)


def service_env(env: dict[str, str]) -> dict[str, str]:
    """The environment of the service process: the stack's, less what only workers need."""
    return {name: value for name, value in env.items() if name not in SERVICE_WITHHELD}


def _spawn(
    stack: Stack, name: str, argv: list[str], env: dict[str, str], pass_fds: tuple[int, ...] = ()
) -> None:
    with (stack.log_dir / f"{name}.log").open("ab") as log:
        stack.processes[name] = subprocess.Popen(
            [sys.executable, *argv],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            pass_fds=pass_fds,
            # Stopped as the stack stops them, even when the stack is killed outright (SIGKILL).
            preexec_fn=parent_death_hook(signal.SIGTERM),
        )


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _read_ready_file(stack: Stack, path: Path, timeout_s: float = 120) -> str:
    """What a process of the stack wrote to `path` once it listened (it writes it whole)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        stack.check_alive()
        if path.is_file():
            return path.read_text().strip()
        time.sleep(0.1)
    raise RuntimeError(f"{path} was not written within {timeout_s:.0f}s; see {stack.log_dir}")


def _wait_for(stack: Stack, url: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        stack.check_alive()
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {timeout_s:.0f}s; see {stack.log_dir}")
