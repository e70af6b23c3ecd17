"""Python wheels for an image, downloaded on the host so that no container needs a network.

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
    blob = "\n".join([repr(target), *requirements]).encode()
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
        progress(f"downloading wheels for: {' '.join(requirements)}")
        command = [
            sys.executable, "-m", "pip", "download", "--disable-pip-version-check",
            "--no-input", *target.pip_options(), "--dest", str(work), *requirements,
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, errors="replace", check=False)
        if done.returncode != 0:
            raise SandboxError(f"pip download failed: {done.stderr.strip()[-3000:]}")
        (work / ".complete").write_text("\n".join(requirements) + "\n")
        if dest.exists():  # a stale, incomplete attempt
            shutil.rmtree(dest)
        os.replace(work, dest)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    count = sum(1 for _ in dest.glob("*.whl"))
    progress(f"{count} wheels ready in {dest}")
    return dest
