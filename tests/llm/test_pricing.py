from __future__ import annotations

import json
from pathlib import Path

import pytest

from worker.llm.config_files import ConfigFileError
from worker.llm.pricing import ModelPrice, PriceTable, load_price_table


def test_exact_name_beats_globs_and_the_longest_glob_wins() -> None:
    table = PriceTable(
        {
            "gpt-4o*": ModelPrice(prompt=2.5, completion=10),
            "gpt-4o-mini*": ModelPrice(prompt=0.15, completion=0.6),
            "gpt-4o-mini-special": ModelPrice(prompt=9, completion=9),
            "*/llama3*": ModelPrice(prompt=0.1, completion=0.1),
        }
    )
    assert table.price("gpt-4o-2024-08-06") == ModelPrice(prompt=2.5, completion=10)
    assert table.price("gpt-4o-mini-2024-07-18") == ModelPrice(prompt=0.15, completion=0.6)
    assert table.price("gpt-4o-mini-special") == ModelPrice(prompt=9, completion=9)
    assert table.price("ollama/llama3.1:8b") == ModelPrice(prompt=0.1, completion=0.1)


def test_cost_is_per_million_tokens() -> None:
    table = PriceTable({"m": ModelPrice(prompt=2.0, completion=8.0)})
    cost, known = table.cost("m", 1_000_000, 500_000)
    assert known and cost == pytest.approx(6.0)


def test_unknown_model_costs_nothing_and_says_so() -> None:
    assert PriceTable.default().cost("my-local-model", 1000, 1000) == (0.0, False)


def test_default_table_prices_the_scripted_model() -> None:
    cost, known = PriceTable.default().cost("scripted-fixer", 1000, 1000)
    assert known and cost > 0


def test_load_yaml_and_json(tmp_path: Path) -> None:
    yaml_path = tmp_path / "prices.yaml"
    yaml_path.write_text("version: 1\nmodels:\n  'local-*': {prompt: 0.5, completion: 1}\n")
    table = load_price_table(yaml_path)
    cost, known = table.cost("local-qwen", 2_000_000, 0)
    assert known and cost == pytest.approx(1.0)
    assert table.price("gpt-4o") is None  # a file replaces the defaults ...
    json_path = tmp_path / "prices.json"
    json_path.write_text(
        json.dumps({"include_defaults": True, "models": {"x": {"prompt": 1, "completion": 1}}})
    )
    layered = load_price_table(json_path)
    assert layered.price("x") is not None and layered.price("gpt-4o") is not None  # ... or not
    assert load_price_table(None).price("scripted") is not None


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("models:\n  m: {prompt: -1, completion: 1}\n", "models.m.prompt"),
        ("models:\n  m: {prompt: 1, completion: 1, cached: 1}\n", "models.m.cached"),
        ("modles: {}\n", "modles"),
        ("version: 2\nmodels: {}\n", "version"),
        ("models: [unclosed\n", "cannot read"),
    ],
)
def test_invalid_table_names_the_field(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(text)
    with pytest.raises(ConfigFileError, match=needle):
        load_price_table(path)


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="cannot read price table"):
        load_price_table(tmp_path / "nope.yaml")
