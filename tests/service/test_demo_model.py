"""`clade demo --model/--price`: what the demo's run asks for, and the refusals that name the flag."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli.demo import DEMO_CONFIG, DemoModel, demo_config, parse_price
from contracts.config import ConfigFieldError, RunConfig
from contracts.prices import PriceTable
from service.plan import price_models


def demo(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CLADE_")}
    clean |= {"CLADE_DATA_DIR": str(tmp_path / "data"), "COLUMNS": "200"} | env
    return subprocess.run(
        [sys.executable, "-m", "cli.main", "demo", "--no-serve", *args],
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_run_asks_the_named_model_for_every_purpose() -> None:
    config = demo_config("a" * 40, 2, DemoModel("smollm2"))
    assert config["models"] == dict.fromkeys(("solve", "diagnose", "improve", "judge"), "smollm2")
    assert config["budget"]["max_children"] == 2 and config["seed_agent"] == "a" * 40
    assert config["budget"]["max_reply_tokens"] == 1024  # a reply fits in the demo's solve limit
    assert "max_reply_tokens" not in demo_config("a" * 40, 2)["budget"]  # the stand-in answers at once
    assert config["stages"] == DEMO_CONFIG["stages"]
    parsed = RunConfig.model_validate(config)  # a configuration the service accepts
    assert (parsed.models.solve, parsed.models.improve) == ("smollm2", "smollm2")


def test_price_flag_parses_prompt_and_completion_per_million() -> None:
    assert parse_price("0:0") == (0.0, 0.0)
    assert parse_price("0.15:0.6") == (0.15, 0.6)
    for bad in ("0.15", "a:b", "-1:0", "1:inf", ""):
        with pytest.raises(ValueError, match=r"--price"):
            parse_price(bad)


def test_a_real_endpoint_needs_model_and_the_scripted_one_refuses_it(tmp_path: Path) -> None:
    # Both refusals come before anything starts (no image build, no service).
    endpoint = demo(tmp_path, CLADE_LLM_BASE_URL="http://127.0.0.1:9/v1")
    assert endpoint.returncode == 1
    assert "give --model NAME" in endpoint.stderr and "http://127.0.0.1:9/v1" in endpoint.stderr
    scripted = demo(tmp_path, "--model", "smollm2")
    assert scripted.returncode == 1
    assert "set CLADE_LLM_BASE_URL" in scripted.stderr
    price = demo(tmp_path, "--model", "m", "--price", "cheap", CLADE_LLM_BASE_URL="http://127.0.0.1:9/v1")
    assert price.returncode == 1 and "--price 'cheap'" in price.stderr
    assert not (tmp_path / "data" / "logs").exists()  # nothing was started


def test_the_demos_run_is_priced_at_plan_time_as_documented() -> None:
    # What the service stores with the run: the scripted model's made-up price, the declared $0
    # of a local model, the price table's for a model it knows.
    def planned(model: DemoModel) -> dict[str, tuple[float, float]]:
        config = price_models(RunConfig.model_validate(demo_config("a" * 40, 1, model)), PriceTable.default())
        return {name: (price.prompt, price.completion) for name, price in config.models.prices.items()}

    assert planned(DemoModel("scripted")) == {"scripted": (1.0, 2.0)}
    assert planned(DemoModel("smollm2", (0.0, 0.0))) == {"smollm2": (0.0, 0.0)}
    assert planned(DemoModel("gpt-4o-mini")) == {"gpt-4o-mini": (0.15, 0.6)}
    with pytest.raises(ConfigFieldError, match="smollm2"):  # why the demo declares an unknown model free
        planned(DemoModel("smollm2"))
