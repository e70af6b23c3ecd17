"""`clade doctor` against the real model server: every check passes, and its one-token call shows
the server's own prompt count, one completion token, and the price the deployment declared ($0)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.real_model.llama import LlamaServer
from tests.servers import service_env, start_service


def test_doctor_calls_the_real_model_and_prices_it_as_declared(llama: LlamaServer, tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text(f"models:\n  {llama.model}: {{prompt: 0, completion: 0}}\n")
    service = start_service(service_env(tmp_path / "data", f"sqlite:///{tmp_path / 'clade.db'}", 0))
    try:
        env = service.env | {"CLADE_LLM_BASE_URL": llama.base_url, "CLADE_PRICE_TABLE_PATH": str(prices)}
        result = subprocess.run(
            [sys.executable, "-m", "cli.main", "--json", "doctor", "--model", llama.model],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        service.stop()
    report = json.loads(result.stdout)
    checks = {check["name"]: check for check in report["checks"]}
    assert result.returncode == 0 and report["ok"], result.stdout + result.stderr
    llm = checks["llm"]
    assert llm["status"] == "ok", llm
    assert "SCRIPTED" not in llm["detail"]
    found = re.search(
        rf"{llama.model} at {re.escape(llama.base_url)} answered in [\d.]+s: (\d+)\+(\d+) tokens, (\S+)",
        llm["detail"],
    )
    assert found, llm["detail"]
    expected_prompt = llama.count_prompt_tokens([{"role": "user", "content": "Say OK."}])
    assert (int(found.group(1)), int(found.group(2))) == (expected_prompt, 1)
    assert found.group(3) == "$0.000000"
