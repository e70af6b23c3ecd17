"""The verifier's reward, read strictly from what it wrote to /logs/verifier.

Harbor's verifiers write `reward.txt` (one number) or `reward.json` (an object of named
numbers; the one Clade grades by is `reward`, or the only key there is). Anything else is
"no reward", never a pass: no file, an empty one, a word, NaN, a number outside 0..1, a JSON
object with several rewards and none named `reward`, or two files that disagree.

A pytest-based verifier usually writes a CTRF report beside it (`ctrf.json`); when it lists
failed tests while the reward is full, the reward was not the verifier's own: `forged`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REWARD_TXT = "reward.txt"
REWARD_JSON = "reward.json"
CTRF_JSON = "ctrf.json"
_MAX_BYTES = 64 * 1024
_SHOWN = 80


@dataclass(frozen=True)
class Reward:
    value: float | None  # None: no valid reward
    problem: str = ""  # why there is none
    forged: str | None = None  # evidence that the reward is not the verifier's


def read_reward(logs: Path) -> Reward:
    txt, json_ = logs / REWARD_TXT, logs / REWARD_JSON
    from_txt = _from_txt(txt) if txt.exists() else None
    from_json = _from_json(json_) if json_.exists() else None
    if from_txt is None and from_json is None:
        return Reward(None, f"the verifier wrote no {REWARD_TXT} or {REWARD_JSON}")
    for read in (from_txt, from_json):
        if isinstance(read, str):
            return Reward(None, read)
    values = [read for read in (from_txt, from_json) if isinstance(read, float)]
    if len(values) == 2 and not math.isclose(values[0], values[1], abs_tol=1e-9):
        return Reward(None, f"{REWARD_TXT} says {values[0]:g} and {REWARD_JSON} says {values[1]:g}")
    value = values[0]
    return Reward(value, forged=_ctrf_disagrees(logs / CTRF_JSON, value))


def _from_txt(path: Path) -> float | str:
    text = _read(path)
    if text is None:
        return f"{REWARD_TXT} is not a small text file"
    return _number(text.strip(), REWARD_TXT)


def _from_json(path: Path) -> float | str:
    text = _read(path)
    if text is None:
        return f"{REWARD_JSON} is not a small text file"
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"{REWARD_JSON} is not JSON ({exc.msg})"
    if not isinstance(data, dict) or not data:
        return f"{REWARD_JSON} must be a JSON object of named rewards"
    if "reward" in data:
        chosen = data["reward"]
    elif len(data) == 1:
        chosen = next(iter(data.values()))
    else:
        names = ", ".join(sorted(map(str, data)))[:_SHOWN]
        return f"{REWARD_JSON} has several rewards ({names}) and none named reward"
    if isinstance(chosen, bool) or not isinstance(chosen, int | float):
        return f"{REWARD_JSON}'s reward is not a number: {str(chosen)[:_SHOWN]!r}"
    return _number(repr(float(chosen)), REWARD_JSON)


def _number(text: str, source: str) -> float | str:
    try:
        value = float(text)
    except ValueError:
        return f"{source} does not hold a number: {text[:_SHOWN]!r}"
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        return f"{source} holds {text[:_SHOWN]!r}, not a reward between 0 and 1"
    return value


def _read(path: Path) -> str | None:
    if not path.is_file() or path.is_symlink() or path.stat().st_size > _MAX_BYTES:
        return None
    return path.read_text(encoding="utf-8", errors="replace")


def _ctrf_disagrees(path: Path, reward: float) -> str | None:
    """Evidence when a full reward sits beside a CTRF report of failed tests."""
    if reward < 1.0 or not path.is_file() or path.is_symlink():
        return None
    try:
        summary = json.loads(path.read_text(encoding="utf-8", errors="replace"))["results"]["summary"]
        failed = int(summary.get("failed", 0)) + int(summary.get("errors", 0) or 0)
    except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
        return None  # not a CTRF report: nothing to compare
    if failed > 0:
        return (
            f"the reward is {reward:g} while the verifier's own {CTRF_JSON} reports {failed} failed test(s)"
        )
    return None
