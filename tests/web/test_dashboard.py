"""The dashboard in a real browser (Debian's Chromium) against a live service and recorded archive."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tests.web.conftest import shot
from tests.web.outcomes import FORGED_EVIDENCE
from tests.web.recorded import FIRST_STAGE, PLANS, SECOND_STAGE, SEED_SOLVES, Plan, Recorded

if TYPE_CHECKING:
    from playwright.sync_api import Page

NODES = "svg.tree-svg circle.node"


def lineage(archive: Recorded) -> list[dict[str, object]]:
    with archive.service.anonymous as reader:
        nodes: list[dict[str, object]] = reader.get(f"/api/runs/{archive.run_id}/lineage").json()["nodes"]
    return nodes


def open_run(page: Page, archive: Recorded, query: str = "") -> None:
    page.goto(f"/runs/{archive.run_id}{query}")
    page.wait_for_selector(".tree-canvas[data-state=ready]")


def test_runs_page_shows_progress_against_budget(page: Page, archive: Recorded) -> None:
    from playwright.sync_api import expect

    page.goto("/")
    card = page.locator(f".run-card[data-key='{archive.run_id}']")
    expect(card).to_contain_text("lineage-demo")
    expect(card.locator("[data-meter=Children] .meter-value")).to_have_text(re.compile(r"^\d+ / 20$"))
    expect(card.locator("[data-meter=Cost] .meter-value")).to_contain_text("/ $2.00")
    expect(card.locator("[data-action=pause]")).to_be_enabled()
    expect(card.locator("[data-action=resume]")).to_be_disabled()
    baseline = page.locator(f".run-card[data-key='{archive.other_run_id}']")
    expect(baseline.locator(".badge")).to_have_text("cancelled")
    expect(baseline.locator("[data-action=cancel]")).to_be_disabled()
    expect(baseline.locator("[data-meter=Children] .meter-value")).to_have_text("0 / 0")  # evaluation only
    shot(page, "runs")


def test_tree_draws_every_agent_and_the_best_path(page: Page, archive: Recorded) -> None:
    from playwright.sync_api import expect

    open_run(page, archive)
    nodes = lineage(archive)
    expect(page.locator(NODES)).to_have_count(len(nodes))
    rejected = [n for n in nodes if n["status"] == "rejected"]
    expect(page.locator(f"{NODES}.status-rejected")).to_have_count(len(rejected))
    # seed -> a -> d -> f: the path to the best agent is drawn apart from the other links
    path = [archive.ids[label] for label in ("seed", "a", "d", "f")]
    expect(page.locator(f"{NODES}.on-best-path")).to_have_count(len(path))
    for agent_id in path:
        expect(page.locator(f"{NODES}[data-id='{agent_id}']")).to_have_class(re.compile("on-best-path"))
    expect(page.locator(f"{NODES}.best")).to_have_attribute("data-id", archive.best)
    assert page.locator("path.links.best").get_attribute("d")
    expect(page.locator(".tree-canvas")).to_have_attribute("data-node-count", str(len(nodes)))
    expect(page.locator("#score-chart svg path.series.best")).to_have_count(1)
    expect(page.locator("#cost-chart svg path.series.cost")).to_have_count(1)
    shot(page, "run")


def test_large_tree_surface_draws_on_a_canvas(page: Page, archive: Recorded) -> None:
    """Large runs are drawn on a canvas (forced here): hover and click work through hit testing."""
    from playwright.sync_api import expect

    open_run(page, archive, "?render=canvas")
    canvas = page.locator(".tree-canvas")
    expect(canvas).to_have_attribute("data-surface", "canvas")
    expect(canvas).to_have_attribute("data-node-count", str(len(lineage(archive))))
    expect(page.locator(".tree-canvas canvas")).to_have_count(1)
    expect(page.locator(NODES)).to_have_count(0)
    page.fill("#tree-search", archive.best[:10])  # centres the view on the match
    expect(page.locator("#tree-search-status")).to_have_text("1 of 1")
    page.wait_for_timeout(600)  # the 400 ms pan to the match
    box = canvas.bounding_box()
    assert box is not None
    centre = (box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.move(*centre)
    expect(page.locator("#tree-tooltip")).to_contain_text(archive.best[:12])
    shot(page, "run-canvas")
    page.mouse.click(*centre)
    expect(page).to_have_url(re.compile(f"/agents/{archive.best}"))


def test_rejected_child_shows_its_reason_on_hover(page: Page, archive: Recorded) -> None:
    from playwright.sync_api import expect

    open_run(page, archive)
    page.locator(f"{NODES}[data-id='{archive.ids['c']}']").hover()
    tooltip = page.locator("#tree-tooltip")
    expect(tooltip).to_be_visible()
    expect(tooltip).to_contain_text("stage 1: 1/5 resolved, below the threshold 0.4")
    shot(page, "run-tooltip")


def test_search_by_id_highlights_the_agent(page: Page, archive: Recorded) -> None:
    from playwright.sync_api import expect

    open_run(page, archive)
    page.fill("#tree-search", archive.ids["e"][:8])
    expect(page.locator(f"{NODES}.match")).to_have_attribute("data-id", archive.ids["e"])
    expect(page.locator("#tree-search-status")).to_have_text("1 of 1")


def test_clicking_a_node_opens_its_agent_page_with_the_diff(page: Page, archive: Recorded) -> None:
    from playwright.sync_api import expect

    open_run(page, archive)
    page.locator(f"{NODES}[data-id='{archive.best}']").click()
    expect(page).to_have_url(re.compile(f"/agents/{archive.best}"))
    expect(page.locator("h1")).to_contain_text(archive.best[:12])
    added = page.locator(".diff-view").last.locator(".diff-line.add")
    expect(added).to_have_count(1)
    expect(added).to_have_text("+- Check edge cases: empty input, None, off-by-one.")
    expect(page.locator("[data-role=parent] a")).to_have_attribute("href", re.compile(archive.ids["d"]))
    expect(page.locator(".diagnosis")).to_contain_text("Check edge cases")
    expect(page.locator(".stages-table tbody tr")).to_have_count(2)
    expect(page.locator("table.results tr.evaluation")).to_have_count(len(SECOND_STAGE))
    shot(page, "agent")


def test_task_row_opens_to_test_log_and_trajectory(page: Page, archive: Recorded) -> None:
    from playwright.sync_api import expect

    page.goto(f"/agents/{archive.best}?run={archive.run_id}")
    row = page.locator("tr.evaluation.verdict-failed").first
    row.locator("[data-action=expand]").click()
    detail = page.locator("tr.evaluation-extra:not([hidden])")
    expect(detail.locator(".test-log")).to_contain_text("AssertionError")
    expect(detail.locator("table.tests")).to_contain_text("FAIL_TO_PASS")
    expect(detail.locator(".trajectory .message")).to_have_count(8)
    # A role the dashboard does not know is shown as text with a neutral class, never as classes.
    odd = detail.locator(".trajectory .message.role-other")
    expect(odd).to_have_count(1)
    expect(odd.locator(".role")).to_have_text("assistant error-box hidden")
    expect(detail.locator(".trajectory .error-box, .trajectory .message.hidden")).to_have_count(0)
    expect(detail.locator(".tool-calls code").first).to_contain_text("cat ")
    expect(row.locator("[data-action=expand]")).to_have_attribute("aria-expanded", "true")


def test_forged_results_show_as_tampered_with_the_dropped_files(page: Page, archive: Recorded) -> None:
    from playwright.sync_api import expect

    forged = frozenset(FIRST_STAGE[:2])
    child = archive.add_child(
        Plan("forger", "seed", "Make the tests pass, whatever it takes.", SEED_SOLVES, tampered=forged)
    )
    page.goto(f"/agents/{child}?run={archive.run_id}")
    rows = page.locator("tr.evaluation.verdict-tampered")
    expect(rows).to_have_count(len(forged))
    row = rows.first
    expect(row.locator("td.verdict")).to_contain_text("⚠ tampered")
    expect(row.locator(".badge.dropped")).to_have_text("1 dropped for grading")
    row.locator("[data-action=expand]").click()
    detail = page.locator("tr.evaluation-extra:not([hidden])")
    expect(detail.locator(".tampered-evidence")).to_contain_text(FORGED_EVIDENCE)
    expect(detail.locator(".dropped-for-grading li")).to_have_text(
        ["conftest.py — conftest.py: pytest loads it as a plugin"]
    )
    shot(page, "agent-tampered")


def test_export_downloads_the_patch_series(page: Page, archive: Recorded) -> None:
    page.goto(f"/agents/{archive.best}?run={archive.run_id}")
    with page.expect_download() as info:
        page.locator(f"[data-export='/api/agents/{archive.best}/patches']").click()
    download = info.value
    assert download.suggested_filename == f"agent-{archive.best[:12]}.patch"
    text = open(download.path(), encoding="utf-8").read()  # noqa: SIM115
    assert text.count("Subject: [PATCH") == 3  # seed -> a -> d -> f


def test_new_child_appears_without_a_reload(page: Page, archive: Recorded) -> None:
    from playwright.sync_api import expect

    open_run(page, archive, "?poll=300")
    before = page.locator(NODES).count()
    page.evaluate("window.__sameDocument = true")
    child = archive.add_child(Plan("live", "f", "Prefer small functions.", SEED_SOLVES, finished=False))
    expect(page.locator(f"{NODES}[data-id='{child}']")).to_have_count(1)
    expect(page.locator(NODES)).to_have_count(before + 1)
    expect(page.locator(f"{NODES}[data-id='{child}']")).to_have_class(re.compile("status-evaluating"))
    assert page.evaluate("window.__sameDocument") is True
    shot(page, "run-live-child")


def test_new_run_form_shows_validation_errors_at_the_field(page: Page, archive: Recorded) -> None:
    from playwright.sync_api import expect

    page.goto("/runs/new")
    page.fill("#field-name", "from-the-browser")
    page.fill("#field-seed_agent", archive.ids["seed"])
    page.fill("#field-budget-max_usd", "-1")
    page.click("button[type=submit]")
    # The first write asks for the admin token once and keeps it.
    page.fill("#token-input", archive.service.secrets["admin_token"])
    page.click("dialog button[value=save]")
    usd = page.locator("#field-budget-max_usd")
    expect(usd).to_have_attribute("aria-invalid", "true")
    error = usd.locator("xpath=..").locator(".field-error")
    expect(error).to_contain_text("greater than 0")
    expect(page.locator(".error-summary")).to_contain_text("budget.max_usd")
    shot(page, "new-run-errors")

    # A value pydantic accepts but the benchmark does not know: still shown at its field.
    page.fill("#field-budget-max_usd", "1.5")
    page.select_option("#field-stages-0-source", "subset")
    page.fill("#field-stages-0-subset", "no-such-subset")
    page.click("button[type=submit]")
    # The status line first: when the refusal is not at its field, it says what came back instead.
    expect(page.locator(".form-status")).to_have_text("1 value(s) refused, 1 shown at their field.")
    subset = page.locator("#field-stages-0-subset")
    expect(subset).to_have_attribute("aria-invalid", "true")
    expect(subset.locator("xpath=..").locator(".field-error")).to_contain_text(
        "has no subset 'no-such-subset'"
    )
    expect(usd).not_to_have_attribute("aria-invalid", "true")

    page.fill("#field-stages-0-subset", "mini-5")
    page.click("button[type=submit]")
    expect(page).to_have_url(re.compile(r"/runs/[0-9a-f]{16}$"))
    expect(page.locator("h1")).to_have_text("Run from-the-browser")
    assert page.evaluate("localStorage.getItem('clade.token')") == archive.service.secrets["admin_token"]


def test_yaml_text_fills_the_form(admin_page: Page, archive: Recorded) -> None:
    from playwright.sync_api import expect

    page = admin_page
    page.goto("/runs/new")
    page.click("summary:has-text('Paste a configuration')")
    page.fill(
        "#config-text",
        f"name: pasted\nseed_agent: {archive.ids['seed']}\nbudget: {{max_children: 3, max_usd: 0.5}}\n"
        "stages:\n  - {subset: mini-5, threshold: 0.4}\n  - {}\n",
    )
    page.click("[data-action=fill]")
    expect(page.locator("#field-name")).to_have_value("pasted")
    expect(page.locator("#field-budget-max_usd")).to_have_value("0.5")
    expect(page.locator("#field-stages-0-subset")).to_have_value("mini-5")
    expect(page.locator("fieldset.stage")).to_have_count(2)
    page.fill("#config-text", "name: [unclosed")
    page.click("[data-action=fill]")
    expect(page.locator("#config-text")).to_have_attribute("aria-invalid", "true")
    expect(page.locator(".field-error").first).to_contain_text("not valid YAML or JSON")


def test_compare_puts_tasks_only_one_agent_solves_on_top(page: Page, archive: Recorded) -> None:
    from playwright.sync_api import expect

    plans = {p.label: p for p in PLANS}
    only_f = sorted(plans["f"].solves - plans["d"].solves)
    page.goto(f"/compare?a={archive.ids['d']}&b={archive.best}&run={archive.run_id}")
    rows = page.locator("table.compare tbody tr")
    expect(rows).to_have_count(len(SECOND_STAGE))
    expect(page.locator("table.compare tbody tr.differs")).to_have_count(len(only_f))
    top = [rows.nth(i).get_attribute("data-task") for i in range(len(only_f))]
    assert top == only_f
    for i in range(len(only_f)):
        expect(rows.nth(i)).to_have_attribute("data-group", "1")
        expect(rows.nth(i).locator("td").nth(1)).to_have_text("✓ resolved")
    expect(page.locator(".compare-summary")).to_contain_text(f"B solves {len(only_f)} tasks that A does not")
    shot(page, "compare")


def test_list_view_works_with_the_keyboard(page: Page, archive: Recorded) -> None:
    from playwright.sync_api import expect

    open_run(page, archive)
    page.click(".tree-toolbar [data-value=list]")
    rows = page.locator(".tree-list [role=treeitem]")
    expect(rows.first).to_have_attribute("data-id", archive.ids["seed"])
    page.keyboard.press("Tab")  # from the List button into the tree: one tab stop
    focused = page.locator(".tree-list [role=treeitem]:focus")

    def at(label: str) -> None:
        expect(focused).to_have_attribute("data-id", archive.ids[label])

    rows.first.focus()
    at("seed")
    page.keyboard.press("ArrowDown")
    at("a")
    page.keyboard.press("ArrowRight")  # a is open: go to its first child
    at("d")
    page.keyboard.press("ArrowLeft")  # d is open: close it
    expect(focused).to_have_attribute("aria-expanded", "false")
    at("d")
    page.keyboard.press("ArrowLeft")  # d is closed: go to its parent
    at("a")
    page.keyboard.press("ArrowUp")
    at("seed")
    page.keyboard.press("End")
    expect(focused).to_have_attribute("data-id", rows.last.get_attribute("data-id") or "")
    page.keyboard.press("Home")
    at("seed")
    expect(page.locator(".tree-list [tabindex='0']")).to_have_count(1)
    shot(page, "run-list")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(f"/agents/{archive.ids['seed']}"))


def test_pause_and_resume_from_the_run_page(admin_page: Page, archive: Recorded) -> None:
    from playwright.sync_api import expect

    page = admin_page
    open_run(page, archive)
    page.click(".run-head [data-action=pause]")
    expect(page.locator(".run-head .badge").first).to_have_text("paused")
    page.click(".run-head [data-action=resume]")
    expect(page.locator(".run-head .badge").first).to_have_text("running")


def test_narrow_window_has_no_sideways_scrolling(narrow_page: Page, archive: Recorded) -> None:
    from playwright.sync_api import expect

    page = narrow_page
    for path, ready, name in [
        (f"/runs/{archive.run_id}", ".tree-canvas[data-state=ready]", "run-narrow"),
        (f"/agents/{archive.best}?run={archive.run_id}", ".diff-view", "agent-narrow"),
        ("/runs/new", "form.config-form", "new-run-narrow"),
    ]:
        page.goto(path)
        page.wait_for_selector(ready)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 400, f"{path} is {width}px wide in a 400px window"
        shot(page, name)
        if name == "agent-narrow":
            box = page.locator("[data-action=expand]").first.bounding_box()
            assert box is not None and box["x"] + box["width"] <= 400, box
    expect(page.locator(".site-header nav")).to_be_visible()
