"""The layers hold: import-linter's contracts pass, a worker host needs no web stack, and the run
driver and the simulator load nothing of the API."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WEB_STACK = ("fastapi", "starlette", "uvicorn", "sqlalchemy", "alembic")


def test_import_contracts_are_kept() -> None:
    result = subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_a_worker_imports_none_of_the_service_web_stack() -> None:
    probe = (
        "import sys, worker.main, worker.tasks, worker.context;"
        f"print(','.join(m for m in {WEB_STACK!r} if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip() == "", f"a worker process loaded {result.stdout.strip()}"


def test_the_driver_and_the_simulator_load_nothing_of_the_api() -> None:
    # The interior contract keeps `service.api` above the driver; loading the modules also sees
    # an import made through importlib, which import-linter cannot.
    probe = (
        "import sys, service.driver.loop, service.simulation.runner, service.simulation.batch;"
        "print(','.join(sorted(m for m in sys.modules if m.startswith('service.api'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip() == "", f"the driver loaded {result.stdout.strip()}"
