"""Reading hand-written YAML/JSON files (price tables, model scripts) into pydantic models.

Errors name the file and the field path (`rules.0.match.last_user: ...`), so a
typo in a hand-written file is found without reading a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


class ConfigFileError(ValueError):
    """A file is missing, unreadable, not YAML/JSON, or fails validation."""


def load_model_file(path: Path, model: type[M], what: str) -> M:
    try:
        text = path.read_text()
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise ConfigFileError(f"{path}: cannot read {what}: {exc}") from exc
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigFileError(f"{path}: invalid {what}: {describe(exc)}") from exc


def describe(exc: ValidationError, limit: int = 5) -> str:
    """`field.path: message` for the first few errors."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors()[:limit]
    )
