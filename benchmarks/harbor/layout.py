"""Read Harbor task folders (Terminal-Bench 2.x and Harbor's adapters): one task, or a folder of them.

A task folder holds `task.toml` (timeouts, resources, metadata), `instruction.md` (what the
agent is told), `environment/Dockerfile` or `[environment].docker_image` (where it works),
`tests/test.sh` (the verifier) and, optionally, `solution/solve.sh` (the reference solution).
What Clade cannot run faithfully is refused here, naming the file: multi-step tasks (`[[steps]]`,
`steps/`), a verifier in a separate environment, secrets named in `[verifier.env]`.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from benchmarks.base import BenchmarkError

DEFAULT_WORKDIR = "/app"  # Harbor's convention: the Dockerfile's WORKDIR for nearly every task
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)i?B?\s*$", re.IGNORECASE)
_SIZE_MB = {"": 1 / (1024 * 1024), "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}
_SECRET = re.compile(r"\$\{[^}]*\}")
_WORKDIR = re.compile(r"^\s*WORKDIR\s+(\S+)\s*$", re.IGNORECASE | re.MULTILINE)


class HarborLayoutError(BenchmarkError, ValueError):
    """A task folder is malformed or asks for what Clade cannot run; `path` is the file at fault."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


@dataclass(frozen=True)
class HarborTask:
    """One task folder, read and checked."""

    name: str  # the folder's name: the task's instance id
    folder: Path
    instruction: str
    environment: Path | None  # environment/ (the build context), when it has a Dockerfile
    docker_image: str | None  # [environment].docker_image: used as it is
    workdir: str  # where the agent works; what carries over to the verifier
    agent_timeout_s: float | None
    verifier_timeout_s: float | None
    build_timeout_s: float
    cpus: float | None
    memory_mb: int | None
    verifier_env: dict[str, str] = field(default_factory=dict)

    @property
    def tests(self) -> Path:
        return self.folder / "tests"

    @property
    def solution(self) -> Path | None:
        solve = self.folder / "solution" / "solve.sh"
        return solve if solve.is_file() else None


def find_task_folders(root: Path) -> list[Path]:
    """`root` itself when it is a task folder, else its task folders (any depth), sorted."""
    if (root / "task.toml").is_file():
        return [root]
    found = sorted(path.parent for path in root.rglob("task.toml") if ".git" not in path.parts)
    # A task's own files (tests/, environment/) never hold another task.
    return [folder for folder in found if not any(other in folder.parents for other in found)]


def read_task(folder: Path) -> HarborTask:
    """The task in `folder`; HarborLayoutError naming the file at fault."""
    toml_path = folder / "task.toml"
    config = _read_toml(toml_path)
    name = folder.name
    if not _NAME.match(name):
        raise HarborLayoutError(folder, "a task folder's name must be letters, digits, '.', '_' or '-'")
    _refuse_steps(folder, toml_path, config)
    environment = _table(config, "environment", toml_path)
    verifier = _table(config, "verifier", toml_path)
    agent = _table(config, "agent", toml_path)
    if verifier.get("environment_mode", "shared") != "shared":
        raise HarborLayoutError(
            toml_path, "[verifier].environment_mode: a verifier in a separate environment is not supported"
        )
    instruction_path = folder / "instruction.md"
    if not instruction_path.is_file():
        raise HarborLayoutError(instruction_path, "missing: the task's instruction")
    instruction = instruction_path.read_text(encoding="utf-8", errors="replace").strip()
    if not instruction:
        raise HarborLayoutError(instruction_path, "empty: the agent would be told nothing")
    if not (folder / "tests" / "test.sh").is_file():
        raise HarborLayoutError(folder / "tests" / "test.sh", "missing: the task's verifier")
    context = folder / "environment"
    dockerfile = context / "Dockerfile"
    docker_image = _optional_str(environment, "docker_image", toml_path)
    if docker_image is None and not dockerfile.is_file():
        raise HarborLayoutError(dockerfile, "missing, and task.toml names no [environment].docker_image")
    workdir = _workdir(dockerfile) if docker_image is None else DEFAULT_WORKDIR
    return HarborTask(
        name=name,
        folder=folder,
        instruction=instruction,
        environment=context if docker_image is None else None,
        docker_image=docker_image,
        workdir=workdir,
        agent_timeout_s=_seconds(agent, "timeout_sec", toml_path, "agent"),
        verifier_timeout_s=_seconds(verifier, "timeout_sec", toml_path, "verifier"),
        build_timeout_s=_seconds(environment, "build_timeout_sec", toml_path, "environment") or 600.0,
        cpus=_cpus(environment, toml_path),
        memory_mb=_memory_mb(environment, toml_path),
        verifier_env=_env(verifier, toml_path),
    )


def _read_toml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise HarborLayoutError(path, "missing")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise HarborLayoutError(path, f"not valid TOML: {exc}") from exc


def _refuse_steps(folder: Path, toml_path: Path, config: Mapping[str, Any]) -> None:
    if "steps" in config or (folder / "steps").is_dir():
        raise HarborLayoutError(
            toml_path, "a multi-step task ([[steps]], steps/) is not supported: Clade grades one instruction"
        )


def _table(config: Mapping[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = config.get(key, {})
    if not isinstance(value, dict):
        raise HarborLayoutError(path, f"[{key}] must be a table")
    return value


def _optional_str(table: Mapping[str, Any], key: str, path: Path) -> str | None:
    value = table.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise HarborLayoutError(path, f"[environment].{key} must be a string")
    return value


def _seconds(table: Mapping[str, Any], key: str, path: Path, section: str) -> float | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise HarborLayoutError(
            path, f"[{section}].{key} must be a positive number of seconds, not {value!r}"
        )
    return float(value)


def _cpus(table: Mapping[str, Any], path: Path) -> float | None:
    value = table.get("cpus")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise HarborLayoutError(path, f"[environment].cpus must be a positive number, not {value!r}")
    return float(value)


def _memory_mb(table: Mapping[str, Any], path: Path) -> int | None:
    """`memory_mb` (schema 1.1), or the older `memory` ("4G", "2048M")."""
    if "memory_mb" in table:
        value = table["memory_mb"]
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise HarborLayoutError(path, f"[environment].memory_mb must be a positive number, not {value!r}")
        return int(value)
    value = table.get("memory")
    if value is None:
        return None
    matched = _SIZE.match(str(value))
    if matched is None:
        raise HarborLayoutError(path, f'[environment].memory must be a size such as "4G", not {value!r}')
    return max(int(float(matched.group(1)) * _SIZE_MB[matched.group(2).upper()]), 1)


def _env(verifier: Mapping[str, Any], path: Path) -> dict[str, str]:
    env = verifier.get("env", {})
    if not isinstance(env, dict):
        raise HarborLayoutError(path, "[verifier].env must be a table")
    out: dict[str, str] = {}
    for key, value in env.items():
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise HarborLayoutError(path, f"[verifier].env.{key} must be a string")
        if _SECRET.search(str(value)):
            # A host secret never goes into a sandbox that runs the agent's code.
            raise HarborLayoutError(
                path, f"[verifier].env.{key} names a secret ({value}): Clade passes none into a sandbox"
            )
        out[str(key)] = str(value)
    return out


def _workdir(dockerfile: Path) -> str:
    """The Dockerfile's last absolute WORKDIR (not `/`), else Harbor's `/app`."""
    text = dockerfile.read_text(encoding="utf-8", errors="replace")
    found = [match.group(1).strip("\"'") for match in _WORKDIR.finditer(text)]
    for candidate in reversed(found):
        path = PurePosixPath(candidate)
        if path.is_absolute() and str(path) != "/" and "$" not in candidate:
            return str(path)
    return DEFAULT_WORKDIR
