"""`clade bench ...` with benchmark options, in process: wrong options are usage errors
(exit code 2, the option named, no traceback) and `--json` prints one JSON document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from cli.main import app
from cli.options import OptionSyntaxError, parse_benchmark, parse_pairs
from contracts.benchmark_options import BenchmarkOptionError
from tests.servers import ServiceProcess, free_port


def clade(*args: str, url: str | None = None, token: str | None = None) -> Result:
    """The CLI in this process; stdout and stderr apart. By default no service is reachable,
    which shows that option errors are found before anything is sent."""
    options = ["--url", url or f"http://127.0.0.1:{free_port()}"]
    if token is not None:
        options += ["--token", token]
    return CliRunner().invoke(app, [*options, *args], env={"COLUMNS": "200"})


def assert_usage_error(result: Result, *words: str) -> None:
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.stdout == ""
    for word in words:
        assert word in result.stderr, result.stderr


def test_pairs_are_yaml_values_and_dotted_keys_nest() -> None:
    assert parse_pairs(
        ["dataset=x.jsonl", "cpus=2", "instance_ids=[a, b]", "subsets.small=[a]", "split="]
    ) == {
        "dataset": "x.jsonl",
        "cpus": 2,
        "instance_ids": ["a", "b"],
        "subsets": {"small": ["a"]},
        "split": "",
    }
    with pytest.raises(OptionSyntaxError, match="expected KEY=VALUE"):
        parse_pairs(["dataset"])
    with pytest.raises(OptionSyntaxError, match="subsets is not a mapping"):
        parse_pairs(["subsets=3", "subsets.small=[a]"])


def test_a_file_and_pairs_make_one_typed_configuration(tmp_path: Path) -> None:
    dataset = tmp_path / "instances.jsonl"
    dataset.write_text("")
    options = tmp_path / "options.yaml"
    options.write_text("dataset: lite\ninstance_ids: [a, b]\ncpus: 2\n")
    config = parse_benchmark("swebench", [f"dataset={dataset}", "cpus=4"], options)
    assert config.name == "swebench"
    assert (config.options["dataset"], config.options["instance_ids"], config.options["cpus"]) == (
        str(dataset),
        ["a", "b"],
        4,
    )
    polyglot = parse_benchmark("polyglot", ["exercises=[tide-table]"], None)
    assert polyglot.name == "polyglot" and polyglot.options["exercises"] == ["tide-table"]
    with pytest.raises(BenchmarkOptionError) as caught:
        parse_benchmark("polyglot", ["exercise=[tide-table]"], None)
    assert caught.value.field == "exercise"


def test_a_relative_dataset_path_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "local.jsonl").write_text("")
    monkeypatch.chdir(tmp_path)
    config = parse_benchmark("swebench", ["dataset=local.jsonl"], None)
    assert config.name == "swebench" and config.options["dataset"] == str(tmp_path / "local.jsonl")
    named = parse_benchmark("swebench", ["dataset=lite"], None)
    assert named.name == "swebench" and named.options["dataset"] == "lite"


@pytest.mark.parametrize("command", ["check", "run", "list"])
def test_a_missing_required_option_is_a_usage_error(command: str) -> None:
    extra = ["--agent", "a" * 40] if command == "run" else []
    assert_usage_error(
        clade("bench", command, "swebench", *extra), "swebench options", "dataset", "Field required"
    )


@pytest.mark.parametrize("command", ["check", "run", "list"])
def test_an_unknown_option_is_named(command: str) -> None:
    extra = ["--agent", "a" * 40] if command == "run" else []
    result = clade("bench", command, "swebench", "-o", "datset=x.jsonl", *extra)
    assert_usage_error(result, "datset", "unknown option of swebench", "known: dataset")


def test_other_option_mistakes_are_usage_errors(tmp_path: Path) -> None:
    assert_usage_error(
        clade("bench", "check", "polyglot", "-o", "languages=[cobol]"), "languages.0", "'python'"
    )
    assert_usage_error(clade("bench", "check", "polyglot", "--option", "languages"), "expected KEY=VALUE")
    assert_usage_error(clade("bench", "check", "nope"), "unknown benchmark 'nope'", "clade-mini")
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n- b\n")
    assert_usage_error(clade("bench", "check", "polyglot", "--options", str(listed)), "must be a mapping")
    assert_usage_error(clade("bench", "check", "polyglot", "--options", str(tmp_path / "no.yaml")), "no.yaml")
    assert_usage_error(clade("bench", "check", "clade-mini", "-o", "size=5"), "size", "known: none")


@pytest.mark.docker
def test_json_check_prints_one_document() -> None:
    """One exercise, graded in real sandboxes: stdout is the JSON, progress went to stderr."""
    result = clade("--json", "bench", "check", "polyglot", "-o", "exercises=[tide-table]", "--workers", "2")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    checks = json.loads(result.stdout)
    assert [(c["instance_id"], c["ok"]) for c in checks] == [("polyglot__python__tide-table", True)]
    assert "1 of 1 tasks: gold resolves, empty does not" in result.stderr


@pytest.fixture(params=["sqlite"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The CLI only speaks HTTP; one database is enough here."""
    return f"sqlite:///{tmp_path / 'clade.db'}"


def test_list_one_benchmark_with_options(live_service: ServiceProcess) -> None:
    service = live_service  # the CLI reaches it over HTTP
    token = service.secrets["admin_token"]
    listed = clade(
        "--json",
        "bench",
        "list",
        "polyglot",
        "-o",
        "exercises=[tide-table, token-bucket]",
        url=service.url,
        token=token,
    )
    assert listed.exit_code == 0, listed.stderr
    described = json.loads(listed.stdout)
    ids = ["polyglot__python__tide-table", "polyglot__python__token-bucket"]
    assert described == {"name": "polyglot", "tasks": ids, "subsets": {"all": ids, "python": ids}}
    table = clade("bench", "list", "polyglot", "-o", "exercises=[tide-table]", url=service.url, token=token)
    assert table.exit_code == 0 and "polyglot__python__tide-table" in table.stdout
    # What only loading finds is the service's 422, naming the option.
    missing = clade("bench", "list", "polyglot", "-o", "exercises=[nope]", url=service.url, token=token)
    assert missing.exit_code == 1 and "benchmark.options.exercises.0" in missing.stderr
    everything = json.loads(clade("--json", "bench", "list", url=service.url, token=token).stdout)
    notes = {bench["name"]: bench["note"] for bench in everything}
    assert notes["clade-mini"] is None and "needs options: dataset: Field required" in notes["swebench"]
