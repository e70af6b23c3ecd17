"""The dashboard shows the search data (intervals, held-out scores, islands, groups, epochs,
crossover, reuse, hyperagent children) and follows a growing tree, in Chromium against a live service."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from contracts.intervals import simultaneous_z, wilson
from tests.web.recorded import SEED_SOLVES, Plan, Recorded
from tests.web.search import HELDOUT_COMPARED, SearchRun

if TYPE_CHECKING:
    from playwright.sync_api import Page

NODES = "svg.tree-svg circle.node"

# Whether an agent's circle lies wholly inside the visible tree area.
IN_VIEW = """id => {
  const host = document.querySelector('.tree-canvas').getBoundingClientRect();
  const node = document.querySelector(`svg.tree-svg circle.node[data-id="${id}"]`);
  if (!node) return false;
  const b = node.getBoundingClientRect();
  return b.left >= host.left && b.right <= host.right && b.top >= host.top && b.bottom <= host.bottom;
}"""

# Where an agent would be on screen under an earlier view (`translate(x,y) scale(k)`).
UNDER_VIEW = """([id, view]) => {
  const [, x, y, k] = /translate\\(([-\\d.e]+),([-\\d.e]+)\\) scale\\(([-\\d.e]+)\\)/.exec(view).map(Number);
  const node = document.querySelector(`svg.tree-svg circle.node[data-id="${id}"]`);
  const host = document.querySelector('.tree-canvas').getBoundingClientRect();
  const [cx, cy] = [Number(node.getAttribute('cx')), Number(node.getAttribute('cy'))];
  return {x: x + k * cx, y: y + k * cy, width: host.width, height: host.height};
}"""


def estimate(resolved: int, total: int, *, compared: int = 1) -> str:
    """How the dashboard writes a score: '0.60 [0.23, 0.88], 3/5' (the interval is contracts' wilson,
    for a held-out score one that holds for the `compared` agents at once)."""
    low, high = wilson(resolved, total, simultaneous_z(compared))
    return f"{resolved / total:.2f} [{low:.2f}, {high:.2f}], {resolved}/{total}"


def heldout(resolved: int, total: int) -> str:
    """A held-out score as the dashboard writes it: the run compared its 3 held-out agents."""
    return estimate(resolved, total, compared=HELDOUT_COMPARED)


def test_run_page_shows_search_data(page: Page, search_run: SearchRun) -> None:
    from playwright.sync_api import expect

    run, ids = search_run, search_run.ids
    page.goto(f"/runs/{run.run_id}")
    page.wait_for_selector(".tree-canvas[data-state=ready]")
    expect(page.locator("[data-role=epoch]")).to_have_text("1")

    # A crossover child draws a dashed second edge; markers for hyperagent and reused children.
    expect(page.locator(f"{NODES}.crossover")).to_have_attribute("data-id", ids["d"])
    assert page.locator("path.links.cross").get_attribute("d")
    expect(page.locator(f"{NODES}.meta-changed")).to_have_attribute("data-id", ids["d"])
    expect(page.locator("circle.meta-ring")).to_have_count(1)
    expect(page.locator(f"{NODES}.same-as")).to_have_attribute("data-id", ids["e"])
    expect(page.locator("circle.same-dot")).to_have_count(1)
    expect(page.locator(".tree-legend [data-key=crossover]")).to_be_visible()

    tooltip = page.locator("#tree-tooltip")
    page.locator(f"{NODES}[data-id='{ids['seed']}']").hover()
    expect(tooltip).to_contain_text("0.60 [0.23, 0.88], 3/5")
    page.locator(f"{NODES}[data-id='{ids['d']}']").hover()
    expect(tooltip).to_contain_text(f"Held-out{heldout(9, 10)}")
    expect(tooltip).to_contain_text("Epoch1")
    expect(tooltip).to_contain_text(f"Crossover with{ids['c'][:12]}")
    expect(tooltip).to_contain_text("changed its own improvement procedure")
    page.locator(f"{NODES}[data-id='{ids['e']}']").hover()
    expect(tooltip).to_contain_text(f"same code as {ids['d'][:12]}, results reused")
    page.locator(f"{NODES}[data-id='{ids['c']}']").hover()
    expect(tooltip).to_contain_text("Racestopped: cannot beat its parent, 5 evaluations")

    # Colour by island: one colour per island, named in the legend.
    page.select_option("#tree-color", "island")
    legend = page.locator(".tree-legend .categories li")
    expect(legend).to_have_text(["island 0 (3)", "island 1 (3)"])
    fills = {label: page.locator(f"{NODES}[data-id='{ids[label]}']").get_attribute("fill") for label in ids}
    for island in (0, 1):
        assert len({fills[label] for label, row in run.rows.items() if row.island == island}) == 1
    assert fills["seed"] != fills["c"]
    page.select_option("#tree-color", "group")
    expect(legend).to_have_text(["g1 (2)", "g2 (2)", "no group (2)"])

    # Top agents: selection and held-out scores with intervals; d has the best held-out lower bound,
    # though f has the best selection score.
    table = page.locator(".top-agents-table")
    first = table.locator("tbody tr").first
    expect(first).to_have_attribute("data-id", ids["f"])
    expect(first.locator("td").nth(0)).to_have_text(estimate(11, 12))
    best = table.locator("tr.heldout-best")
    expect(best).to_have_count(1)
    expect(best).to_have_attribute("data-id", ids["d"])
    expect(best.locator("th")).to_contain_text("★")
    expect(best.locator("td").nth(1)).to_have_text(heldout(9, 10))
    # 9 of 10 alone would be [0.60, 0.98]: the best of 3 gets a wider interval.
    assert heldout(9, 10) == "0.90 [0.52, 0.99], 9/10"
    expect(table.locator(f"tr[data-id='{ids['seed']}'] td").nth(1)).to_have_text("—")


def test_agent_page_shows_interval_heldout_and_relations(page: Page, search_run: SearchRun) -> None:
    from playwright.sync_api import expect

    ids = search_run.ids
    page.goto(f"/agents/{ids['d']}?run={search_run.run_id}")
    expect(page.locator("[data-role=score]")).to_have_text(estimate(4, 5))
    expect(page.locator("[data-role=held-out]")).to_have_text(heldout(9, 10))
    expect(page.locator("[data-role=epoch]")).to_have_text("1")
    expect(page.locator("[data-role=second-parent] a")).to_have_attribute("href", re.compile(ids["c"]))
    expect(page.locator("[data-role=meta-changed]")).to_be_visible()
    page.goto(f"/agents/{ids['e']}?run={search_run.run_id}")
    expect(page.locator("[data-role=same-as]")).to_have_text(f"same code as {ids['d'][:12]}, results reused")
    page.goto(f"/agents/{ids['c']}?run={search_run.run_id}")
    expect(page.locator("[data-role=race]")).to_have_text("stopped: cannot beat its parent, 5 evaluations")


def test_growing_tree_stays_in_view_until_the_user_pans(page: Page, archive: Recorded) -> None:
    from playwright.sync_api import expect

    page.goto(f"/runs/{archive.run_id}?poll=300")
    page.wait_for_selector(".tree-canvas[data-state=ready]")
    canvas = page.locator(".tree-canvas")
    expect(canvas).to_have_attribute("data-following", "true")
    view = canvas.get_attribute("data-zoom")
    # Generations below the deepest agent, until the newest lies outside the view as first fitted ...
    parent, outside = "f", False
    for n in range(8):
        archive.add_child(Plan(f"deep{n}", parent, f"Follow rule {n}.", SEED_SOLVES))
        parent = f"deep{n}"
        newest = archive.ids[parent]
        expect(page.locator(f"{NODES}[data-id='{newest}']")).to_have_count(1)
        where = page.evaluate(UNDER_VIEW, [newest, view])
        outside = not (0 <= where["x"] <= where["width"] and 0 <= where["y"] <= where["height"])
        if outside:
            break
    assert outside, "the tree never grew past the first view"
    # ... yet it is in view without pressing Fit.
    page.wait_for_function(IN_VIEW, arg=newest)
    assert canvas.get_attribute("data-zoom") != view

    # After the user pans, new agents leave the view alone; Fit follows again.
    box = canvas.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + 12, box["y"] + 12)
    page.mouse.down()
    page.mouse.move(box["x"] + 112, box["y"] + 52, steps=5)
    page.mouse.up()
    expect(canvas).to_have_attribute("data-following", "false")
    panned = canvas.get_attribute("data-zoom")
    child = archive.add_child(Plan("after-pan", parent, "Follow no rule.", SEED_SOLVES))
    expect(page.locator(f"{NODES}[data-id='{child}']")).to_have_count(1)
    assert canvas.get_attribute("data-zoom") == panned
    page.click(".tree-toolbar button[aria-label='Fit the whole tree']")
    expect(canvas).to_have_attribute("data-following", "true")
    page.wait_for_function(IN_VIEW, arg=child)
