"""Text every store can hold: no NUL character (PostgreSQL text refuses it) and no lone
surrogate (no UTF-8 encoding exists for one, so it can be neither stored nor sent back)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Annotated, Any

from pydantic import AfterValidator

REPLACEMENT = "\ufffd"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def text_problem(value: str) -> str | None:
    """Why `value` cannot be stored, or None when it can."""
    if "\x00" in value:
        return "must not contain the NUL character (\\u0000)"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode text (it holds a lone surrogate)"
    return None


def _storable(value: str) -> str:
    problem = text_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


# A string field that is refused (422 at its path) when it holds what no store can keep.
StorableStr = Annotated[str, AfterValidator(_storable)]


def storable_text(value: str) -> str:
    """`value` with each NUL and lone surrogate replaced by U+FFFD."""
    return _UNSTORABLE.sub(REPLACEMENT, value)


def text_problems(data: Any, loc: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """(path, problem) of every string in parsed JSON, keys included, that cannot be stored.
    Paths are themselves storable (a key at fault appears with U+FFFD in place)."""
    if isinstance(data, str):
        problem = text_problem(data)
        if problem is not None:
            yield loc, problem
    elif isinstance(data, dict):
        for key, value in data.items():
            problem = text_problem(key)
            if problem is not None:
                yield (*loc, storable_text(key)), f"key {problem}"
            yield from text_problems(value, (*loc, storable_text(key)))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from text_problems(value, (*loc, index))


def storable(data: Any) -> Any:
    """`data` (parsed JSON) with NULs and lone surrogates replaced by U+FFFD, for a sender whose
    text comes from programs it does not control (an agent's output)."""
    if isinstance(data, str):
        return storable_text(data)
    if isinstance(data, dict):
        return {storable_text(key): storable(value) for key, value in data.items()}
    if isinstance(data, list):
        return [storable(value) for value in data]
    return data
