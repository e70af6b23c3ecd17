"""The experience pool's text: what helped first, what did not after, within its cap."""

from __future__ import annotations

from contracts.events import ExperienceEntry
from service.experience import render, title


def entry(step: int, change: float | None, outcome: str = "admitted", tried: str = "") -> ExperienceEntry:
    return ExperienceEntry(
        step=step,
        group=str((step + 1) // 2),
        parent_id="p" * 40,
        parent_score=0.5,
        child_id=None if outcome == "failed" else f"{step:040d}",
        child_score=None if change is None else 0.5 + change,
        change=change,
        outcome=outcome,
        reason="the improver crashed" if outcome == "failed" else None,
        tried=tried or f"change {step}",
        files=[f"agent/file{step}.py"],
    )


def test_helped_by_gain_then_the_rest_newest_first() -> None:
    entries = [entry(1, 0.25), entry(2, -0.25), entry(3, 0.5), entry(4, None, "failed"), entry(5, 0.0)]
    shown, text = render(entries, version=3, limit_chars=3000)
    assert [e.step for e in shown] == [3, 1, 5, 4, 2]
    helped, rest = text.split("Changes that did not help, or hurt:")
    assert helped.index("step 3") < helped.index("step 1") and "step 5" not in helped
    assert rest.index("step 5") < rest.index("step 4") < rest.index("step 2")
    assert "(version 3, 5 finished attempts)" in text
    assert "score 1.00 (+0.50). Tried: change 3. Changed: agent/file3.py" in text
    assert "no child (the improver crashed). Tried: change 4" in text
    assert "left out" not in text


def test_the_cap_keeps_both_kinds_and_says_what_it_left_out() -> None:
    entries = [entry(n, 0.1 if n % 2 else -0.1, tried="x" * 150) for n in range(1, 41)]
    shown, text = render(entries, version=1, limit_chars=1000)
    assert len(text) <= 1000
    assert 0 < len(shown) < 40
    kinds = {e.change for e in shown}
    assert kinds == {0.1, -0.1}  # neither kind crowds the other out
    assert f"({40 - len(shown)} older or smaller results left out for length.)" in text


def test_title_is_the_diagnosis_first_line() -> None:
    assert title("## Run the tests first\n\nThen...") == "Run the tests first"
    assert title("\n  **Bold title**  \nmore") == "Bold title"
    assert title(None) == "(no diagnosis recorded)"
    assert len(title("y" * 500)) == 200
