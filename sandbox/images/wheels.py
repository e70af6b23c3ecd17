"""Python wheels for an image, downloaded on the host so that no container needs a network.

The requirements are first resolved for the target interpreter and platform by `uv pip
compile`, which evaluates environment markers for that target (pip evaluates them for the
host's python: `exceptiongroup; python_version < "3.11"` would never be fetched for a 3.9
image from a 3.11 host); pip then downloads exactly the pinned set, without dependencies.

Requirements come from `agent.toml`, which the agent itself may have written, and pip
runs on the host: only plain `name[extras] <specifiers>` lines are accepted (no URLs,
paths or pip options), and only wheels are fetched, so nothing is built or run here.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from sandbox.base import SandboxError

Progress = Callable[[str], None]

_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_EXTRAS = rf"\[\s*{_NAME}(?:\s*,\s*{_NAME})*\s*\]"
_VERSION = r"[A-Za-z0-9.*+!_-]+"
_CLAUSE = rf"(?:===|==|!=|<=|>=|~=|<|>)\s*{_VERSION}"
_REQUIREMENT = re.compile(rf"^{_NAME}\s*(?:{_EXTRAS})?\s*(?:{_CLAUSE}(?:\s*,\s*{_CLAUSE})*)?$")


class InvalidRequirement(SandboxError, ValueError):
    """A requirement that is not a plain `name[extras] <specifiers>` line."""


@dataclass(frozen=True)
class WheelTarget:
    """The interpreter and C library the wheels must run on (the image's, not the host's)."""

    python_version: str = "3.11"
    glibc_minor: int = 36  # Debian bookworm ships glibc 2.36
    machine: str = platform.machine()

    def pip_options(self) -> list[str]:
        abi = "cp" + self.python_version.replace(".", "")
        options = [
            "--only-binary=:all:",
            f"--python-version={self.python_version}",
            "--implementation=cp",
            f"--abi={abi}",
        ]
        # Older pips do not expand manylinux_2_N to the lower levels themselves.
        for minor in range(self.glibc_minor, 4, -1):
            options.append(f"--platform=manylinux_2_{minor}_{self.machine}")
        for legacy in ("manylinux2014", "manylinux2010", "manylinux1"):
            options.append(f"--platform={legacy}_{self.machine}")
        return options

    def uv_platform(self) -> str:
        """The nearest manylinux level `uv --python-platform` knows, at most the target's."""
        levels = [minor for minor in _UV_MANYLINUX if minor <= self.glibc_minor] or [_UV_MANYLINUX[0]]
        return f"{self.machine}-manylinux_2_{levels[-1]}"


_UV_MANYLINUX = (17, 28, *range(31, 41))
# Part of the cache key: bump when the way wheels are chosen changes.
_RESOLVER = "uv-compile-1"


def normalise(requirements: Iterable[str]) -> list[str]:
    """Validated, stripped, de-duplicated and sorted requirement lines."""
    cleaned = sorted({" ".join(req.split()) for req in requirements if req.strip()})
    for req in cleaned:
        if not _REQUIREMENT.match(req):
            raise InvalidRequirement(
                f"requirement {req!r} is not allowed: use `name[extras] <specifiers>`, "
                "without URLs, paths, markers or pip options"
            )
    return cleaned


def requirements_key(requirements: list[str], target: WheelTarget) -> str:
    blob = "\n".join([_RESOLVER, repr(target), *requirements]).encode()
    return hashlib.sha256(blob).hexdigest()


def ensure_wheels(
    requirements: list[str],
    cache_dir: Path,
    *,
    target: WheelTarget,
    progress: Progress,
) -> Path:
    """Directory holding wheels for `requirements` and their dependencies (cached)."""
    requirements = normalise(requirements)
    dest = cache_dir / "wheels" / requirements_key(requirements, target)[:16]
    if (dest / ".complete").is_file():
        progress(f"reusing cached wheels {dest}")
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    for stale in dest.parent.glob("download-*"):  # the caller holds the build lock
        shutil.rmtree(stale, ignore_errors=True)
    work = Path(tempfile.mkdtemp(prefix="download-", dir=dest.parent))
    try:
        progress(f"resolving {' '.join(requirements)} for Python {target.python_version}")
        pinned = resolve(requirements, target, work)
        progress(f"downloading {len(pinned)} wheel(s)")
        command = [
            sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-input",
            "--no-deps", *target.pip_options(), "--dest", str(work), *pinned,
        ]  # fmt: skip
        _check(command, "pip download")
        (work / ".complete").write_text("\n".join(requirements) + "\n")
        if dest.exists():  # a stale, incomplete attempt
            shutil.rmtree(dest)
        os.replace(work, dest)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    count = sum(1 for _ in dest.glob("*.whl"))
    progress(f"{count} wheels ready in {dest}")
    return dest


def resolve(requirements: list[str], target: WheelTarget, work: Path) -> list[str]:
    """`name==version` of every package `requirements` need on `target`, markers evaluated
    for the target's Python and platform; only versions with wheels are chosen."""
    wanted = work / "requirements.in"
    wanted.write_text("\n".join(requirements) + "\n")
    command = [
        sys.executable, "-m", "uv", "pip", "compile", "--quiet", "--no-header", "--no-annotate",
        "--only-binary", ":all:", "--python-version", target.python_version,
        "--python-platform", target.uv_platform(), str(wanted),
    ]  # fmt: skip
    # From the work folder: uv reads the user's index settings (uv.toml, UV_INDEX_URL), and
    # no project's configuration from wherever the worker was started.
    output = _check(command, "resolving the requirements (uv pip compile)", cwd=work)
    pinned = [line.strip() for line in output.splitlines() if line.strip() and not line.startswith("#")]
    if not pinned:
        raise SandboxError(f"uv pip compile resolved nothing for {' '.join(requirements)}")
    return pinned


def _check(command: list[str], what: str, cwd: Path | None = None) -> str:
    done = subprocess.run(command, capture_output=True, text=True, errors="replace", check=False, cwd=cwd)
    if done.returncode != 0:
        raise SandboxError(f"{what} failed: {done.stderr.strip()[-3000:]}")
    return done.stdout
