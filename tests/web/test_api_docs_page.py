"""`/docs` in a real browser: Swagger UI from the service's own files, under its CSP."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.web.recorded import Recorded

if TYPE_CHECKING:
    from playwright.sync_api import Page


def test_api_docs_render_from_local_files_under_the_policy(page: Page, archive: Recorded) -> None:
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    response = page.goto("/docs")
    assert response is not None and "frame-ancestors 'none'" in response.headers["content-security-policy"]
    # The operations of the service's own document, drawn by the bundled Swagger UI.
    page.locator(".opblock-summary-path", has_text="/api/health").first.wait_for()
    assert page.locator(".info .title").inner_text().startswith("Clade")
    assert requested and all(url.startswith(archive.service.url) for url in requested), requested
