"""Shared pieces of the LLM tests: keys, a multi-turn script, the forwarder as a real process."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import openai

from worker.llm.forwarder import script_path
from worker.llm.script import Script

REAL_KEY = "sk-real-upstream-key-7f3a9c"
DUMMY_KEY = "clade-sandbox"

FIX_SCRIPT: dict[str, Any] = {
    "version": 1,
    "model": "scripted-fixer",
    "rules": [
        {
            "name": "fix-off-by-one",
            "match": {"system": "coding agent", "last_user": "(?i)off-by-one"},
            "replies": [
                {
                    "content": "Let me look first.",
                    "tool_calls": [{"name": "bash", "arguments": {"command": "cat counter.py"}}],
                },
                {
                    "tool_calls": [
                        {
                            "name": "bash",
                            "arguments": {"command": "sed -i 's/n - 1/n/' counter.py"},
                        }
                    ]
                },
                {"content": "Fixed: the loop now runs n times."},
            ],
        },
        {"name": "hello", "match": {"last_user": "^hello$"}, "reply": {"content": "hi there"}},
    ],
    "default": {"content": "nothing to do"},
}


def fix_script() -> Script:
    return Script.model_validate(FIX_SCRIPT)


def ask(text: str, system: str = "You are a coding agent.") -> list[dict[str, Any]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": text}]


def client(port: int) -> openai.OpenAI:
    """What an agent in a sandbox builds: the forwarder's address and the dummy key."""
    return openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=DUMMY_KEY, max_retries=0, timeout=20)


@contextmanager
def forwarder(
    socket_path: Path, python: str = sys.executable, user: int | None = None
) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """The forwarder as the sandbox runs it: its own process, without site-packages (-S)."""
    proc = subprocess.Popen(
        [python, "-I", "-S", str(script_path()), "--port", "0", "--socket", str(socket_path)],
        stderr=subprocess.PIPE,
        text=True,
        user=user,
        group=user,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
        assert found, f"forwarder did not start: {line!r}"
        yield proc, int(found.group(1))
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.wait(timeout=60)  # a deadline on a loaded machine, not a speed limit
        if proc.stderr is not None:
            proc.stderr.close()
