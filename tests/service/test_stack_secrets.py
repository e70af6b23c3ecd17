"""`clade up`'s processes: the model key only where it is used, the data for this user only."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import httpx
import pytest

from cli.stack import Stack, local_stack
from contracts.settings import Settings


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode(errors="replace").partition("=")[::2] for item in raw if item)


def _wait_until_worker_ready(stack: Stack, timeout_s: float = 180) -> None:
    """A process that died reads as an empty environment: check the worker is up (Celery's `ready`) first."""
    log = stack.log_dir / "worker.log"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            stack.check_alive()
        except RuntimeError as error:
            raise AssertionError(f"{error}:\n{log.read_text(errors='replace')[-4000:]}") from error
        if log.exists() and " ready." in log.read_text(errors="replace"):
            return
        time.sleep(0.2)
    raise AssertionError(
        f"the worker was not ready within {timeout_s} s:\n{log.read_text(errors='replace')[-4000:]}"
    )


@pytest.mark.docker  # the stack's worker starts only with an engine
def test_the_service_never_holds_the_model_key_and_its_files_are_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(os.environ):
        if name.startswith("CLADE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("CLADE_LLM_API_KEY", "sk-only-for-workers")
    # Port 0: the stack binds a free one itself and serves on it (never picked, then bound later).
    settings = Settings(data_dir=tmp_path / "data", service_url="http://127.0.0.1:0").with_tokens()
    with local_stack(settings, concurrency=1) as stack:
        assert not stack.service_url.endswith(":0") and stack.llm_base_url.endswith("/v1")
        _wait_until_worker_ready(stack)
        service, worker = stack.processes["service"], stack.processes["worker"]
        assert "CLADE_LLM_API_KEY" not in _environ(service.pid)
        assert _environ(worker.pid)["CLADE_LLM_API_KEY"] == "sk-only-for-workers"
        # On loopback the dashboard reads without a token.
        assert httpx.get(f"{stack.service_url}/api/runs", timeout=30).status_code == 200
    data = settings.data_dir
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    for name in ("clade.db", "secrets.json"):
        mode = stat.S_IMODE((data / name).stat().st_mode)
        assert mode & 0o077 == 0, f"{name} is {oct(mode)}"
    archive_files = [p for p in (data / "archive.git").rglob("*") if p.is_file()]
    assert archive_files and all(stat.S_IMODE(p.stat().st_mode) & 0o077 == 0 for p in archive_files)
