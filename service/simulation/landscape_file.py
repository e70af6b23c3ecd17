"""A landscape from a YAML file (`clade sim --landscape FILE`): the fields of `LandscapeConfig`,
optionally on top of a built-in landscape named by `base`. Every key is checked: an unknown key,
a value of the wrong type or out of range is refused naming the key and the file.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from contracts.safe_yaml import YamlInputError, load_yaml
from service.simulation.landscape import LANDSCAPE_NAME, LANDSCAPE_NAME_RULE, LANDSCAPES, LandscapeConfig

MAX_LANDSCAPE_CHARS = 100_000  # a landscape is a few dozen lines
MAX_LANDSCAPE_BYTES = 4 * MAX_LANDSCAPE_CHARS  # UTF-8: at most 4 bytes a character


class LandscapeFileError(ValueError):
    """A landscape file that cannot be used; the message names the file (and the key)."""


def _fields() -> dict[str, dataclasses.Field[Any]]:
    return {f.name: f for f in dataclasses.fields(LandscapeConfig)}


def _typed(path: Path, key: str, value: object, default: object) -> object:
    """`value` as the type of the field's default, or a refusal naming the key."""
    if isinstance(default, bool) or isinstance(value, bool):
        raise LandscapeFileError(f"{path}: {key}: expected a number, got {value!r}")
    if isinstance(default, int):
        if not isinstance(value, int):
            raise LandscapeFileError(f"{path}: {key}: expected a whole number, got {value!r}")
        return value
    if isinstance(default, float):
        if not isinstance(value, int | float):
            raise LandscapeFileError(f"{path}: {key}: expected a number, got {value!r}")
        return float(value)
    if not isinstance(value, str) or not value.strip():
        raise LandscapeFileError(f"{path}: {key}: expected a non-empty name, got {value!r}")
    return value


def load_landscape(path: Path) -> LandscapeConfig:
    """The landscape `path` describes; its name is `name`, else the file's stem."""
    # Only a regular file: a device would read for ever, a pipe would wait for a writer.
    if path.exists() and not path.is_file():
        raise LandscapeFileError(f"{path}: not a regular file")
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_LANDSCAPE_BYTES + 1)
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LandscapeFileError(f"{path}: cannot be read: {exc}") from exc
    if len(raw) > MAX_LANDSCAPE_BYTES:
        raise LandscapeFileError(
            f"{path}: larger than {MAX_LANDSCAPE_BYTES:,} bytes (a landscape is a few lines)"
        )
    try:
        data = load_yaml(text, max_chars=MAX_LANDSCAPE_CHARS)
    except YamlInputError as exc:
        raise LandscapeFileError(f"{path}: {exc}") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise LandscapeFileError(
            f"{path}: expected a mapping of landscape parameters, got {type(data).__name__}"
        )
    fields = _fields()
    known = ["base", *fields]
    for key in data:
        if key not in known:
            raise LandscapeFileError(
                f"{path}: unknown key {key!r}; known keys: {', '.join(known)} (docs/simulation.md)"
            )
    base_name = data.get("base", "default")
    if not isinstance(base_name, str) or base_name not in LANDSCAPES:
        raise LandscapeFileError(
            f"{path}: base: unknown landscape {base_name!r}; known: {', '.join(LANDSCAPES)}"
        )
    base = LANDSCAPES[base_name]
    if "name" not in data and not LANDSCAPE_NAME.fullmatch(path.stem):
        raise LandscapeFileError(
            f"{path}: the file's stem {path.stem!r} is not a landscape name ({LANDSCAPE_NAME_RULE}); "
            "rename the file or give it a `name`"
        )
    values: dict[str, object] = {"name": path.stem}
    for key, value in data.items():
        if key != "base":
            values[key] = _typed(path, key, value, getattr(base, key))
    try:
        config = dataclasses.replace(base, **values)  # type: ignore[arg-type]
    except ValueError as exc:
        raise LandscapeFileError(f"{path}: {exc}") from exc
    # Tables, plots and `--load` know a landscape by its name: a built-in's name means its numbers.
    if config.name in LANDSCAPES and config != LANDSCAPES[config.name]:
        raise LandscapeFileError(
            f"{path}: name {config.name!r} is a built-in landscape's and these parameters differ from "
            "it; rename the file or give it a `name`"
        )
    return config


def resolve_landscape(name_or_path: str) -> LandscapeConfig:
    """A built-in landscape by name, else the YAML file at that path."""
    if name_or_path in LANDSCAPES:
        return LANDSCAPES[name_or_path]
    path = Path(name_or_path)
    if path.suffix.lower() in (".yaml", ".yml", ".json") or path.exists():
        return load_landscape(path)
    raise LandscapeFileError(
        f"unknown landscape {name_or_path!r}: neither a built-in ({', '.join(LANDSCAPES)}) nor a file"
    )
