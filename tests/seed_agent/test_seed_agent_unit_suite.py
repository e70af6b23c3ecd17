"""The seed agent's own unit tests, run the way a meta-agent would: from the agent's root."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

SEED_AGENT = Path(__file__).resolve().parents[2] / "seed_agent"


def test_seed_agent_unit_tests_pass_from_the_agent_root() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=SEED_AGENT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_agent_toml_declares_the_solve_command() -> None:
    manifest = tomllib.loads((SEED_AGENT / "agent.toml").read_text())
    assert manifest["solve"] == "python -m agent"
    assert manifest["requirements"] == []
    assert manifest["name"] and manifest["description"]
