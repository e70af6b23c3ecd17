"""Run mini-swe-agent's DefaultAgent on the task Clade gives (docs/sandbox-layout.md).

In: the statement in CLADE_TASK_FILE, the repository in CLADE_REPO, the model CLADE_MODEL at
OPENAI_BASE_URL (the sandbox's forwarder to Clade's gateway), the step and time limits.
Out: mini-swe-agent's own trajectory as CLADE_OUTPUT_DIR/trajectory.json; the change is what it
leaves in the repository (Clade takes the git diff).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
# Seconds kept back from Clade's time limit, so the loop ends and the trajectory is written first.
MARGIN_S = 20

# The sandbox has no network: litellm must use its bundled price list, and mini-swe-agent must
# neither print its banner nor stop on a cost it cannot find for a local model (the gateway meters).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
os.environ.setdefault("MSWEA_COST_TRACKING", "ignore_errors")
# A refused call (the gateway's budget, a context overflow) is not retried for minutes.
os.environ.setdefault("MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT", "2")


def settings() -> dict[str, Any]:
    """mini-swe-agent's own `mini.yaml`, this folder's settings.yaml over it, Clade's values last."""
    import yaml
    from minisweagent.config import get_config_from_spec
    from minisweagent.utils.serialize import recursive_merge

    ours = yaml.safe_load((HERE / "settings.yaml").read_text()) or {}
    timeout = int(os.environ.get("CLADE_TIMEOUT_S", "1800"))
    clade = {
        "agent": {
            "step_limit": int(os.environ.get("CLADE_MAX_STEPS", "50")),
            "wall_time_limit_seconds": max(1, timeout - MARGIN_S),
            "output_path": str(
                Path(os.environ.get("CLADE_OUTPUT_DIR", "/tmp/clade-out")) / "trajectory.json"
            ),
        },
        "environment": {"cwd": os.environ.get("CLADE_REPO", os.getcwd())},
        "model": {
            # litellm's "openai/" prefix: any OpenAI-compatible endpoint, by its base URL.
            "model_name": "openai/" + os.environ["CLADE_MODEL"],
            "model_kwargs": {
                "api_base": os.environ.get("OPENAI_BASE_URL"),
                "api_key": os.environ.get("OPENAI_API_KEY", "clade-sandbox"),
            },
        },
    }
    merged: dict[str, Any] = recursive_merge(get_config_from_spec("mini.yaml"), ours, clade)
    return merged


def main() -> int:
    import litellm
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.environments.local import LocalEnvironment
    from minisweagent.models.litellm_model import LitellmModel

    litellm.suppress_debug_info = True  # its "Provider List" banner, printed on a cost it cannot find
    config = settings()
    task = Path(os.environ["CLADE_TASK_FILE"]).read_text()
    # The task's own commands run with the task's PATH (its python and tools first).
    environment = config["environment"]
    if os.environ.get("CLADE_IMAGE_PATH"):
        environment["env"] = {**environment.get("env", {}), "PATH": os.environ["CLADE_IMAGE_PATH"]}
    agent_settings = {k: v for k, v in config["agent"].items() if k not in ("mode", "confirm_exit")}
    agent = DefaultAgent(LitellmModel(**config["model"]), LocalEnvironment(**environment), **agent_settings)
    result = agent.run(task)
    print(f"mini-swe-agent finished: {result.get('exit_status', 'unknown')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
