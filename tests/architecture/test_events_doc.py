"""docs/events.md is what `python -m contracts.events_doc` writes from the typed event union."""

from __future__ import annotations

from pathlib import Path

from contracts.events import event_kinds
from contracts.events_doc import render

PAGE = Path(__file__).resolve().parents[2] / "docs" / "events.md"


def test_the_event_reference_is_generated_from_the_models() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(), (
        "docs/events.md is stale: run `python -m contracts.events_doc --out docs/events.md`"
    )


def test_the_event_reference_has_a_section_per_kind() -> None:
    text = render()
    for kind in event_kinds():
        assert f"\n## `{kind}`\n" in text, kind
