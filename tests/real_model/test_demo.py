"""`clade demo --model smollm2` against the real server: it completes, costs $0 (a local model with
no price known, declared free, as the demo says), and counts the tokens the server counted."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.real_model.llama import LlamaServer
from tests.real_model.records import server_counts


@pytest.mark.timeout(3000)
def test_demo_with_a_real_model_completes_at_no_cost_with_the_real_tokens(
    llama: LlamaServer, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLADE_")}
    env |= {
        "CLADE_DATA_DIR": str(tmp_path / "data"),
        "CLADE_SERVICE_URL": "http://127.0.0.1:0",
        "CLADE_LLM_BASE_URL": llama.base_url,
        "COLUMNS": "200",
    }
    before = server_counts(llama)
    demo = subprocess.run(
        [sys.executable, "-m", "cli.main", "demo", "--children", "1", "--no-serve", "--model", llama.model],
        env=env,
        capture_output=True,
        text=True,
        timeout=2700,
    )
    output = demo.stdout + demo.stderr
    assert demo.returncode == 0, output
    assert "SCRIPTED" not in output
    assert f"model: {llama.model} at {llama.base_url}" in output
    assert f"no price known for {llama.model}: declared free" in output
    totals = re.search(r"run completed: (.+); cost \$(\d+\.\d+), (\d+) tokens", output)
    assert totals, output
    assert float(totals.group(2)) == 0
    prompt, completion = (after - start for after, start in zip(server_counts(llama), before, strict=True))
    assert int(totals.group(3)) == prompt + completion > 0, output
