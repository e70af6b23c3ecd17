"""Entry point: `python -m agent`, configured by environment variables (see README.md)."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from agent.loop import Agent, Limits
from agent.model import REPLY_TOKENS, OpenAIModel
from agent.tools import BASH_TOOL
from agent.trajectory import ExitReason, Trajectory

PROMPTS = Path(__file__).parent / "prompts"


@dataclass(frozen=True)
class Config:
    model: str
    base_url: str | None
    api_key: str
    task_file: Path
    repo: Path
    output_dir: Path
    max_steps: int
    timeout_s: float
    max_tokens: int
    reply_tokens: int

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Config:
        missing = [name for name in ("CLADE_MODEL", "CLADE_TASK_FILE") if not env.get(name)]
        if missing:
            raise SystemExit(f"agent: set {', '.join(missing)} (see README.md)")
        return cls(
            model=env["CLADE_MODEL"],
            base_url=env.get("OPENAI_BASE_URL") or None,
            api_key=env.get("OPENAI_API_KEY") or "clade-sandbox",
            task_file=Path(env["CLADE_TASK_FILE"]),
            repo=Path(env.get("CLADE_REPO") or os.getcwd()),
            output_dir=Path(env.get("CLADE_OUTPUT_DIR") or "/tmp/clade-out"),
            max_steps=int(env.get("CLADE_MAX_STEPS") or 50),
            timeout_s=float(env.get("CLADE_TIMEOUT_S") or 1800),
            max_tokens=int(env.get("CLADE_MAX_TOKENS") or 2_000_000),
            reply_tokens=int(env.get("CLADE_REPLY_TOKENS") or REPLY_TOKENS),
        )


def render(template: str, **values: str) -> str:
    """Fill `{{name}}` markers; plain replacement, so prompts may contain braces freely."""
    for name, value in values.items():
        template = template.replace("{{" + name + "}}", value)
    return template


def _terminated(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # unwinds through `finally`, so the trajectory is saved


def main(env: Mapping[str, str]) -> int:
    config = Config.from_env(env)
    # Stop a little before the host's hard kill, to leave time to write the trajectory.
    deadline = time.monotonic() + config.timeout_s - min(30.0, config.timeout_s * 0.1)
    limits = Limits(max_steps=config.max_steps, deadline=deadline, max_tokens=config.max_tokens)
    model = OpenAIModel(
        config.model,
        base_url=config.base_url,
        api_key=config.api_key,
        tools=[BASH_TOOL],
        reply_tokens=config.reply_tokens,
    )
    trajectory = Trajectory(model=config.model)
    path = config.output_dir / "trajectory.json"
    agent = Agent(model, config.repo, limits, trajectory, on_step=lambda: trajectory.save(path))
    system = render((PROMPTS / "system.md").read_text())
    task = render(
        (PROMPTS / "task.md").read_text(),
        task=config.task_file.read_text(),
        repo=str(config.repo.resolve()),
    )
    signal.signal(signal.SIGTERM, _terminated)
    try:
        reason = agent.run(system, task)
    except BaseException as exc:  # record why, then fail loudly: re-raised below
        killed = isinstance(exc, SystemExit)
        reason = ExitReason.TERMINATED if killed else ExitReason.CRASHED
        trajectory.finish(reason, f"{type(exc).__name__}: {exc}")
        raise
    finally:
        trajectory.save(path)
    print(f"agent: stopped: {reason}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(os.environ))
