"""The agent page's "On other models" table: the agent's evaluation-only runs, per solving model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.web.recorded import FIRST_STAGE, SECOND_STAGE, Recorded

if TYPE_CHECKING:
    from playwright.sync_api import Page


def test_agent_page_shows_its_evaluation_only_runs_per_model(page: Page, archive: Recorded) -> None:
    from playwright.sync_api import expect

    # The recorded seed was the seed of one evaluation-only run (the baseline, cancelled unscored).
    page.goto(f"/agents/{archive.ids['seed']}")
    row = page.locator("table.transfer-table tbody tr")
    expect(row).to_have_count(1)
    expect(row.locator("th")).to_have_text("scripted")
    tasks = len(set(FIRST_STAGE) | set(SECOND_STAGE))
    expect(row.locator("td")).to_have_text([f"clade-mini ({tasks} tasks)", "0 / 0", "—", "$0", "1"])
    # An agent never re-scored says how to do it.
    page.goto(f"/agents/{archive.best}?run={archive.run_id}")
    expect(page.locator("section", has_text="On other models")).to_contain_text("clade agent transfer")
