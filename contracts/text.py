"""Text every store can hold: no NUL character (PostgreSQL text refuses it) and no lone
surrogate (no UTF-8 encoding exists for one, so it can be neither stored nor sent back)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Annotated, Any

from pydantic import AfterValidator

# JSON nested deeper is refused by the service: nothing Clade exchanges nests so far, and pydantic
# gives up storing or serialising a few hundred levels (a 500 after the request was accepted).
MAX_JSON_DEPTH = 64
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


def text_problems(data: Any) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """(path, problem) of every string in parsed JSON, keys included, that cannot be stored, in
    document order. Paths are themselves storable (a key at fault appears with U+FFFD in place).
    Iterative: a document nested as deep as its parser allows is walked without recursion."""
    pending: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while pending:
        value, loc = pending.pop()
        if isinstance(value, str):
            problem = text_problem(value)
            if problem is not None:
                yield loc, problem
        elif isinstance(value, dict):
            children: list[tuple[Any, tuple[str | int, ...]]] = []
            for key, item in value.items():
                problem = text_problem(key)
                if problem is not None:
                    yield (*loc, storable_text(key)), f"key {problem}"
                children.append((item, (*loc, storable_text(key))))
            pending.extend(reversed(children))
        elif isinstance(value, list):
            pending.extend(reversed([(item, (*loc, index)) for index, item in enumerate(value)]))


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


def json_depth(data: Any) -> int:
    """How deep parsed JSON nests (a scalar is 0, `[]` is 0, `[[]]` is 1); without recursion."""
    deepest, pending = 0, [(data, 0)]
    while pending:
        value, depth = pending.pop()
        deepest = max(deepest, depth)
        if isinstance(value, dict):
            pending += [(item, depth + 1) for item in value.values()]
        elif isinstance(value, list):
            pending += [(item, depth + 1) for item in value]
    return deepest
