"""The record a strategy sees."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from service.selection import Candidate
from tests.selection.cases import cand

VALID: dict[str, Any] = {
    "agent_id": "a" * 40,
    "score": 0.5,
    "children": 2,
    "clade_resolved": 3,
    "clade_attempted": 4,
}


def test_valid_candidate() -> None:
    c = Candidate(**VALID)
    assert (c.score, c.children, c.clade_resolved, c.clade_attempted) == (0.5, 2, 3, 4)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("agent_id", ""),
        ("score", -0.1),
        ("score", 1.01),
        ("score", float("nan")),
        ("children", -1),
        ("clade_resolved", -1),
        ("clade_attempted", -1),
    ],
)
def test_out_of_range_fields_are_refused(field: str, value: object) -> None:
    with pytest.raises(ValidationError) as caught:
        Candidate(**(VALID | {field: value}))
    assert caught.value.errors()[0]["loc"] == (field,)


def test_more_resolved_than_attempted_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"clade_resolved \(5\) exceeds clade_attempted \(4\)"):
        Candidate(**(VALID | {"clade_resolved": 5}))


def test_every_field_is_required() -> None:
    with pytest.raises(ValidationError) as caught:
        Candidate(agent_id="a")  # type: ignore[call-arg]
    missing = {e["loc"][0] for e in caught.value.errors() if e["type"] == "missing"}
    assert missing == {"score", "children", "clade_resolved", "clade_attempted"}


def test_unknown_field_is_refused() -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        Candidate(**(VALID | {"scoer": 0.3}))


def test_candidates_are_frozen_and_hashable() -> None:
    c = cand("a", 0.5)
    with pytest.raises(ValidationError):
        c.score = 0.9  # type: ignore[misc]
    assert hash(c) == hash(cand("a", 0.5))
