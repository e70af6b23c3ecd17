"""Benchmark options on the command line: `--option KEY=VALUE` (repeatable) and `--options FILE.yaml`.

Both are validated by the benchmark's own options model, as a run configuration's `benchmark`
is (benchmarks/registry.py), so a wrong option is refused here, naming it,
before anything is loaded or sent. Commands add the two options with `OptionPairs`
and `OptionsFile`, and turn them into a typed configuration with `benchmark_from_cli`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.text import Text

from benchmarks.registry import benchmark_config, installed_registry
from cli.config_file import ConfigFileError, json_problem, load_config_file
from cli.output import err_console
from contracts.benchmark_options import BenchmarkConfig, BenchmarkOptionError
from contracts.safe_yaml import YamlInputError, load_yaml

# Exit code of a command given wrong options (as for any usage error).
USAGE_ERROR = 2

OptionPairs = Annotated[
    list[str] | None,
    typer.Option(
        "--option",
        "-o",
        metavar="KEY=VALUE",
        help="A benchmark option (repeatable). VALUE is read as YAML: 3, true, \\[a, b]. "
        "A dotted KEY sets a nested value: subsets.small=\\[a, b].",
        show_default=False,
    ),
]
OptionsFile = Annotated[
    Path | None,
    typer.Option(
        "--options",
        metavar="FILE.yaml",
        help="Benchmark options as a YAML or JSON mapping; --option values override it.",
        show_default=False,
    ),
]


class OptionSyntaxError(ValueError):
    """An --option or --options value that is not an option at all (no '=', not a mapping)."""


def parse_pairs(pairs: list[str]) -> dict[str, Any]:
    """`["dataset=x.jsonl", "instance_ids=[a, b]", "subsets.small=[a]"]` -> nested options."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise OptionSyntaxError(f"--option {pair!r}: expected KEY=VALUE")
        try:
            value = load_yaml(raw) if raw.strip() else ""
        except YamlInputError as exc:
            raise OptionSyntaxError(f"--option {key}: cannot read {raw!r} as a value ({exc})") from exc
        problem = json_problem(value)
        if problem is not None:
            loc, message = problem
            raise OptionSyntaxError(f"--option {'.'.join(str(part) for part in (key, *loc))}: {message}")
        *parents, leaf = key.split(".")
        target = options
        for depth, part in enumerate(parents):
            child = target.setdefault(part, {})
            if not isinstance(child, dict):
                raise OptionSyntaxError(f"--option {key}: {'.'.join(parents[: depth + 1])} is not a mapping")
            target = child
        target[leaf] = value
    return options


def read_options_file(path: Path) -> dict[str, Any]:
    try:
        data = load_config_file(path)
    except ConfigFileError as exc:
        raise OptionSyntaxError(f"--options {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise OptionSyntaxError(f"--options {path}: the options must be a mapping (key: value)")
    return data


def parse_benchmark(name: str, pairs: list[str] | None, path: Path | None) -> BenchmarkConfig:
    """The typed benchmark configuration; raises OptionSyntaxError or BenchmarkOptionError.

    A dataset (and swebench-pro's scripts folder) given as a path that exists here is made
    absolute: the service that loads it runs in another directory. A NAME that is no
    benchmark's name but a folder here is a benchmark folder of the user's own (the `folder`
    benchmark, `path` = NAME).
    """
    options = read_options_file(path) if path is not None else {}
    options.update(parse_pairs(pairs or []))
    known = installed_registry().names()
    if name not in known and _is_dir(name):
        name, options = "folder", {**options, "path": str(Path(name).expanduser().resolve())}
    elif name not in known and (name == "" or "/" in name or name.startswith((".", "~"))):
        # Meant as a folder: "unknown benchmark '/data/x'" would not say what is wrong.
        raise OptionSyntaxError(
            f"no folder {name!r} here: NAME is a benchmark ({', '.join(known)}) or a benchmark folder"
        )
    config = benchmark_config(name, options)
    paths = {"swebench": ("dataset",), "swebench-pro": ("dataset", "scripts")}.get(name, ())
    for option in paths:
        value = config.options.get(option)
        if isinstance(value, str) and _exists(value):
            config = config.model_copy(
                update={"options": {**config.options, option: str(Path(value).resolve())}}
            )
    return config


def _is_dir(name: str) -> bool:
    # "" would be the current folder; a name too long for a path is no folder (not a traceback).
    try:
        return name != "" and Path(name).expanduser().is_dir()
    except (OSError, RuntimeError):  # RuntimeError: "~user" of no user
        return False


def _exists(value: str) -> bool:
    try:
        return Path(value).exists()
    except OSError:
        return False


def benchmark_from_cli(name: str, pairs: list[str] | None, path: Path | None) -> BenchmarkConfig:
    """`parse_benchmark` for a command: a wrong option is one line on stderr and exit code 2."""
    try:
        return parse_benchmark(name, pairs, path)
    except OptionSyntaxError as exc:
        fail_usage(str(exc))
    except BenchmarkOptionError as exc:
        if exc.field == "name":
            fail_usage(exc.problems[0][1])
        fail_usage(f"{name} options: {exc}")


def fail_usage(message: str) -> NoReturn:
    # As Text, so that brackets in a value ([a, b]) are not read as markup.
    err_console.print(Text.assemble(("error:", "red"), " ", message), highlight=False, soft_wrap=True)
    raise typer.Exit(USAGE_ERROR)
