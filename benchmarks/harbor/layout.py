"""Read Harbor task folders (Terminal-Bench 2.x and Harbor's adapters): one task, or a folder of them.

A task folder holds `task.toml` (timeouts, resources, metadata), `instruction.md` (what the
agent is told), `environment/Dockerfile` or `[environment].docker_image` (where it works),
`tests/test.sh` (the verifier) and, optionally, `solution/solve.sh` (the reference solution).
What Clade cannot run faithfully is refused here, naming the file: multi-step tasks (`[[steps]]`,
`steps/`), a verifier in a separate environment, secrets named in `[verifier.env]`. So is what a
hostile folder could do to the host: a link out of the folder, a FIFO, a device or a huge file
where a file is read (benchmarks/userfiles.py).
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from benchmarks.base import BenchmarkError
from benchmarks.userfiles import UserFileError, inside, read_text

DEFAULT_WORKDIR = "/app"  # Harbor's convention: the Dockerfile's WORKDIR for nearly every task
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)i?B?\s*$", re.IGNORECASE)
_SIZE_MB = {"": 1 / (1024 * 1024), "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}
_SECRET = re.compile(r"\$\{[^}]*\}")
_WORKDIR = re.compile(r"^\s*WORKDIR\s+(\S+)\s*$", re.IGNORECASE | re.MULTILINE)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


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


def read_task(folder: Path, root: Path | None = None) -> HarborTask:
    """The task in `folder`; HarborLayoutError naming the file at fault. Nothing outside
    `root` (the folder given to Clade; default `folder`) is read or used through a link."""
    root = folder if root is None else root
    toml_path = folder / "task.toml"
    config = _read_toml(root, toml_path)
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
    try:
        instruction = read_text(root, instruction_path).strip()
    except FileNotFoundError as exc:
        raise HarborLayoutError(instruction_path, "missing: the task's instruction") from exc
    except UserFileError as exc:
        raise HarborLayoutError(instruction_path, exc.reason) from exc
    if not instruction:
        raise HarborLayoutError(instruction_path, "empty: the agent would be told nothing")
    # These are copied into sandboxes, mounted or sent to the engine as a build context: a
    # link out of the folder would hand the host's own files to the agent's code.
    for part in ("tests", "tests/test.sh", "environment", "environment/Dockerfile", "solution"):
        if (folder / part).exists():
            _inside(root, folder / part)
    if not (folder / "tests" / "test.sh").is_file():
        raise HarborLayoutError(folder / "tests" / "test.sh", "missing: the task's verifier")
    context = folder / "environment"
    dockerfile = context / "Dockerfile"
    docker_image = _optional_str(environment, "docker_image", toml_path)
    if docker_image is None and not dockerfile.is_file():
        raise HarborLayoutError(dockerfile, "missing, and task.toml names no [environment].docker_image")
    workdir = _workdir(root, dockerfile) if docker_image is None else DEFAULT_WORKDIR
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


def _read_toml(root: Path, path: Path) -> dict[str, Any]:
    try:
        text = read_text(root, path)
    except FileNotFoundError as exc:
        raise HarborLayoutError(path, "missing") from exc
    except UserFileError as exc:
        raise HarborLayoutError(path, exc.reason) from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise HarborLayoutError(path, f"not valid TOML: {exc}") from exc
    except RecursionError as exc:
        # tomllib recurses per level of nested arrays or tables.
        raise HarborLayoutError(path, "not valid TOML: nested too deep") from exc


def _inside(root: Path, path: Path) -> None:
    try:
        inside(root, path)
    except UserFileError as exc:
        raise HarborLayoutError(path, exc.reason) from exc


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
    if not _positive(value):
        raise HarborLayoutError(
            path, f"[{section}].{key} must be a positive number of seconds, not {value!r}"
        )
    return float(value)


def _cpus(table: Mapping[str, Any], path: Path) -> float | None:
    value = table.get("cpus")
    if value is None:
        return None
    if not _positive(value):
        raise HarborLayoutError(path, f"[environment].cpus must be a positive number, not {value!r}")
    return float(value)


def _memory_mb(table: Mapping[str, Any], path: Path) -> int | None:
    """`memory_mb` (schema 1.1), or the older `memory` ("4G", "2048M")."""
    if "memory_mb" in table:
        value = table["memory_mb"]
        if not _positive(value):
            raise HarborLayoutError(path, f"[environment].memory_mb must be a positive number, not {value!r}")
        return int(value)
    value = table.get("memory")
    if value is None:
        return None
    matched = _SIZE.match(str(value))
    if matched is None:
        raise HarborLayoutError(path, f'[environment].memory must be a size such as "4G", not {value!r}')
    return max(int(float(matched.group(1)) * _SIZE_MB[matched.group(2).upper()]), 1)


def _positive(value: object) -> bool:
    # TOML has inf and nan: neither is a timeout, a CPU count or a size.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and value > 0


def _env(verifier: Mapping[str, Any], path: Path) -> dict[str, str]:
    env = verifier.get("env", {})
    if not isinstance(env, dict):
        raise HarborLayoutError(path, "[verifier].env must be a table")
    out: dict[str, str] = {}
    for key, value in env.items():
        if not _ENV_NAME.match(key):
            raise HarborLayoutError(path, f"[verifier].env: {key!r} is not a variable name")
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise HarborLayoutError(path, f"[verifier].env.{key} must be a string")
        if _SECRET.search(str(value)):
            # A host secret never goes into a sandbox that runs the agent's code.
            raise HarborLayoutError(
                path, f"[verifier].env.{key} names a secret ({value}): Clade passes none into a sandbox"
            )
        out[str(key)] = str(value)
    return out


def _workdir(root: Path, dockerfile: Path) -> str:
    """The Dockerfile's last absolute WORKDIR (not `/`), else Harbor's `/app`."""
    try:
        text = read_text(root, dockerfile)
    except (OSError, UserFileError) as exc:
        raise HarborLayoutError(dockerfile, str(getattr(exc, "reason", exc))) from exc
    found = [match.group(1).strip("\"'") for match in _WORKDIR.finditer(text)]
    for candidate in reversed(found):
        path = PurePosixPath(candidate)
        if path.is_absolute() and str(path) != "/" and "$" not in candidate:
            return str(path)
    return DEFAULT_WORKDIR
