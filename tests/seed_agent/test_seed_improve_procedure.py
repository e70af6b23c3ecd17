"""The seed agent's own improvement procedure (`python -m agent.improve`), run as a subprocess
on a copy of its code against the scripted curriculum (worker/curriculum.py: the deterministic
stand-in for a model that the demo and the end-to-end tests use): in hyper mode the seed tells
the same story as Clade's own improver, adding RULE-1 to its system prompt."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from benchmarks.registry import get_benchmark
from worker.curriculum import DEMO_CURRICULUM, DIAGNOSIS, RULES, SYSTEM_PROMPT_FILE, build_script
from worker.llm.scripted import ScriptedServer

SEED_AGENT = Path(__file__).resolve().parents[2] / "seed_agent"
FAILED = "clade-mini__spanlib-1"  # a task the seed does not resolve in the curriculum


def test_the_seed_procedure_diagnoses_and_changes_its_own_copy(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(SEED_AGENT, copy, ignore=shutil.ignore_patterns("__pycache__", ".benchmarks"))
    records = {
        "schema_version": 1,
        "evaluations": [
            {"task_id": FAILED, "resolved": False, "statement": "a statement", "grade_reason": "not resolved"}
        ],
    }
    (tmp_path / "evaluations.json").write_text(json.dumps(records))
    (tmp_path / "statement.md").write_text("Make a child of yourself.")
    script = build_script(get_benchmark("clade-mini").tasks(), DEMO_CURRICULUM)
    with ScriptedServer(script) as server:
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path),
            "PYTHONPATH": str(SEED_AGENT),
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "clade-sandbox",
            "CLADE_MODEL": "scripted-curriculum",
            "CLADE_TASK_FILE": str(tmp_path / "statement.md"),
            "CLADE_REPO": str(copy),
            "CLADE_OUTPUT_DIR": str(tmp_path / "out"),
            "CLADE_EVALUATIONS_FILE": str(tmp_path / "evaluations.json"),
            "CLADE_NOTE_FILE": str(tmp_path / "out" / "diagnosis.md"),
            "CLADE_TIMEOUT_S": "60",
        }
        (tmp_path / "out").mkdir()
        proc = subprocess.run(
            [sys.executable, "-m", "agent.improve"],
            cwd=copy,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        rules = [r.rule for r in server.requests if r.path.endswith("/chat/completions")]
    assert proc.returncode == 0, proc.stderr
    assert rules == ["diagnose", "improve-rule-1", "improve-rule-1"]
    assert (tmp_path / "out" / "diagnosis.md").read_text().strip() == DIAGNOSIS
    assert f"- {RULES[0]}" in (copy / SYSTEM_PROMPT_FILE).read_text()
    assert RULES[0] not in (SEED_AGENT / SYSTEM_PROMPT_FILE).read_text()  # only the copy changed
