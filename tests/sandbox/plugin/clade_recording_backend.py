"""A second sandbox backend, as a package outside Clade would write one: no engine at all.

An "image" is a folder under $RECORDING_ROOT/images/<name with / and : as _>; a sandbox runs
each command as a host subprocess whose PATH is only that image's bin/ folder, so `command -v`
finds what the image "has". It does not isolate anything, so it registers `isolated=False`.
Every call of the protocol is appended to $RECORDING_ROOT/calls.jsonl, for the test to read.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sandbox.base import ExecResult, Progress, SandboxFileError, SandboxSpec, SandboxUnavailable
from sandbox.images.recipes import LayeredImage
from sandbox.registry import BackendEntry

ROOT_VARIABLE = "RECORDING_ROOT"


def _root() -> Path:
    return Path(os.environ[ROOT_VARIABLE])


def record(call: str, **details: Any) -> None:
    with (_root() / "calls.jsonl").open("a") as log:
        log.write(json.dumps({"call": call, **details}, default=str) + "\n")


def image_folder(image: str) -> Path:
    return _root() / "images" / image.replace("/", "_").replace(":", "_")


class RecordingImages:
    def exists(self, image: str) -> bool:
        record("exists", image=image)
        return image_folder(image).is_dir()

    def base(self, *, progress: Progress | None = None) -> str:
        record("base")
        return self._make("recording/base:1")

    def for_agent(self, requirements: Sequence[str], *, progress: Progress | None = None) -> str:
        record("for_agent", requirements=list(requirements))
        return self.base()

    def for_task(self, image: str, *, progress: Progress | None = None) -> str:
        record("for_task", image=image)
        if not image_folder(image).is_dir():
            raise SandboxUnavailable(f"image {image} is not in {_root() / 'images'}")
        return image

    def runtime(self, image: str, *, progress: Progress | None = None) -> Path:
        record("runtime", image=image)
        folder = _root() / "runtime"
        folder.mkdir(exist_ok=True)
        return folder

    def build(self, recipe: LayeredImage, *, progress: Progress | None = None) -> str:
        record("build", tag=recipe.tag, commands=len(recipe.commands))
        return self._make(recipe.tag)

    def from_dockerfile(
        self, context: Path, tag: str, *, timeout_s: float, progress: Progress | None = None
    ) -> str:
        record("from_dockerfile", tag=tag)
        return self._make(tag)

    def copy_out(self, image: str, source: str, dest: Path) -> Path:
        record("copy_out", image=image, source=source)
        inside = image_folder(image) / source.lstrip("/")
        if not inside.is_dir():
            raise SandboxFileError(f"{image} has no {source}")
        target = dest / Path(source).name
        shutil.copytree(inside, target, symlinks=True)
        return target

    def _make(self, image: str) -> str:
        (image_folder(image) / "bin").mkdir(parents=True, exist_ok=True)
        return image


class RecordingSandbox:
    def __init__(self, spec: SandboxSpec) -> None:
        self.spec = spec
        self._id = uuid.uuid4().hex[:12]
        self.folder = image_folder(spec.image)

    @property
    def id(self) -> str:
        return self._id

    def exec(
        self,
        command: list[str],
        *,
        timeout_s: float,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> ExecResult:
        record("exec", sandbox=self._id, command=command)
        started = time.monotonic()
        # `sh` from the host, by its path; every other program only from the image's bin/.
        program = ["/bin/sh", *command[1:]] if command[0] == "sh" else command
        done = subprocess.run(
            program,
            env={**self.spec.env, **(env or {}), "PATH": str(self.folder / "bin")},
            cwd=self.folder,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        return ExecResult(
            exit_code=done.returncode,
            stdout=done.stdout,
            stderr=done.stderr,
            duration_s=time.monotonic() - started,
        )

    def write_file(self, path: str, data: bytes) -> None:
        raise SandboxFileError(f"{path}: this backend has no files")

    def read_file(self, path: str, *, max_bytes: int = 10_000_000) -> bytes:
        raise SandboxFileError(f"{path}: this backend has no files")

    def close(self) -> None:
        record("close", sandbox=self._id)


class RecordingBackend:
    name = "recording"

    def __init__(self, *, owner: str, **options: Any) -> None:
        record("backend", owner=owner, options=sorted(options))
        self.images = RecordingImages()

    def start(self, spec: SandboxSpec) -> RecordingSandbox:
        sandbox = RecordingSandbox(spec)
        record("start", sandbox=sandbox.id, image=spec.image, network=spec.network)
        return sandbox

    def remove_orphans(self, owner: str | None = None) -> list[str]:
        return []

    def remove_abandoned(self) -> list[str]:
        return []


BACKEND = BackendEntry(factory=RecordingBackend, isolated=False)
