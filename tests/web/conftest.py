"""Browser fixtures: one live service holding the recorded archive, and Debian's Chromium.

Playwright drives the system's `/usr/bin/chromium` (no browser download): `.ci/browser.sh`
installs both, and `web/build.sh` builds the pages the service serves. Without them the
browser tests are skipped, except under CI, where that is a failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.web import recorded as recording
from tests.web import search as searching

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, ViewportSize

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "web" / "dist"
CHROMIUM = Path(os.environ.get("CLADE_CHROMIUM", "/usr/bin/chromium"))
SCREENSHOTS = Path(os.environ.get("CLADE_SCREENSHOT_DIR") or Path(__file__).parent / "screenshots")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
WIDE: ViewportSize = {"width": 1280, "height": 800}
NARROW: ViewportSize = {"width": 400, "height": 800}


def _missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (bash .ci/browser.sh)"
    if not CHROMIUM.exists():
        return f"no Chromium at {CHROMIUM} (bash .ci/browser.sh)"
    if not (DIST / "index.html").exists():
        return "the dashboard is not built (bash web/build.sh)"
    return None


# Deadlines, not speed checks: on a busy 2-core machine Swagger UI took over 10 s to draw.
DEADLINE_MS = 60_000  # every wait on a page and every expect()


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    reason = _missing()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=DEADLINE_MS)  # once per session; each page's own waits: open_page
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Iterator[recording.Recorded]:
    """One live service (run driver off) holding the recorded archive, for the whole session."""
    service, database_url = recording.start(tmp_path_factory.mktemp("dashboard"))
    try:
        yield recording.build(service, database_url)
    finally:
        service.stop()


@pytest.fixture(scope="session")
def search_run(archive: recording.Recorded) -> searching.SearchRun:
    """A second run over the recorded agents, with islands, groups, epochs, held-out scores, crossover."""
    return searching.build(archive)


def _is_error(kind: str, text: str) -> bool:
    # A 422 is the service refusing a value: the new-run form shows it at its field.
    return kind == "error" and "status of 422" not in text


def open_page(
    browser: Browser, archive: recording.Recorded, viewport: ViewportSize, token: bool
) -> Iterator[Page]:
    """A fresh browser context; the test fails if the page logged an error or threw."""
    context = browser.new_context(viewport=viewport, base_url=archive.service.url, accept_downloads=True)
    context.set_default_timeout(DEADLINE_MS)
    if token:
        admin = archive.service.secrets["admin_token"]
        context.add_init_script(f"window.localStorage.setItem('clade.token', {admin!r});")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(f"page error: {error}"))
    page.on(
        "console",
        lambda message: (
            errors.append(f"console: {message.text}") if _is_error(message.type, message.text) else None
        ),
    )
    yield page
    context.close()
    assert not errors, "the page reported errors:\n" + "\n".join(errors)


@pytest.fixture
def page(browser: Browser, archive: recording.Recorded) -> Iterator[Page]:
    """A 1280x800 window, no token kept."""
    yield from open_page(browser, archive, WIDE, token=False)


@pytest.fixture
def admin_page(browser: Browser, archive: recording.Recorded) -> Iterator[Page]:
    """A 1280x800 window with the admin token already kept in localStorage."""
    yield from open_page(browser, archive, WIDE, token=True)


@pytest.fixture
def narrow_page(browser: Browser, archive: recording.Recorded) -> Iterator[Page]:
    yield from open_page(browser, archive, NARROW, token=False)


def shot(page: Page, name: str) -> Path:
    """Keep a screenshot of the page as the test saw it."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
