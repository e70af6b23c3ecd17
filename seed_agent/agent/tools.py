"""The agent's only tool: run a bash command in the repository."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BASH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": (
            "Run one bash command in the repository and get its exit code and output "
            "(stdout and stderr together). Each call starts a fresh shell: `cd` and "
            "variables do not carry over. Commands must not wait for input."
        ),
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The command to run."}},
            "required": ["command"],
        },
    },
}


@dataclass
class CommandResult:
    command: str
    output: str
    exit_code: int | None  # None when the command was killed on timeout
    timed_out: bool
    truncated: bool
    duration_s: float

    def for_model(self) -> str:
        if self.timed_out:
            header = f"The command timed out after {self.duration_s:.0f}s and was killed."
        else:
            header = f"Exit code: {self.exit_code}"
        return f"{header}\n{self.output}" if self.output else header


def truncate(text: str, limit: int) -> tuple[str, bool]:
    """Keep the head and the tail: errors tend to be at the end, context at the start."""
    if len(text) <= limit:
        return text, False
    half = limit // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[... {cut} characters truncated ...]\n{text[-half:]}", True


def command_env(env: Mapping[str, str]) -> dict[str, str]:
    """The repository's own tools come first in commands: Clade puts the image's original
    PATH in CLADE_IMAGE_PATH (the agent itself runs on Clade's Python, the repo may not)."""
    image_path = env.get("CLADE_IMAGE_PATH")
    return dict(env) | ({"PATH": image_path} if image_path else {})


def run_bash(command: str, *, cwd: Path, timeout_s: float, max_output_chars: int) -> CommandResult:
    start = time.monotonic()
    # A session of its own lets a timeout kill the whole process group, so children that
    # bash started do not outlive it and keep the output pipe open.
    proc = subprocess.Popen(
        ["bash", "-c", command],
        cwd=cwd,
        env=command_env(os.environ),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    timed_out = False
    try:
        raw, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        try:
            raw, _ = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:  # a daemonised grandchild still holds the pipe
            raw = b""
    except BaseException:  # the agent itself is stopping (SIGTERM): take the command along
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    output, truncated = truncate(raw.decode("utf-8", errors="replace"), max_output_chars)
    return CommandResult(
        command=command,
        output=output,
        exit_code=None if timed_out else proc.returncode,
        timed_out=timed_out,
        truncated=truncated,
        duration_s=round(time.monotonic() - start, 3),
    )
