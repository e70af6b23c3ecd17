"""The dashboard's page route: the built app at every path outside /api, or how to build it."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.testclient import TestClient

from service.api.routers.dashboard import make_pages


def app_with(dist: Path) -> TestClient:
    app = FastAPI()
    app.include_router(make_pages(dist))

    @app.get("/api/after")  # registered after the pages: the API still answers
    def after() -> dict[str, str]:
        return {"ok": "yes"}

    return TestClient(app)


def built(tmp_path: Path) -> Path:
    dist = tmp_path / "dist"
    (dist / "assets").mkdir(parents=True)
    (dist / "index.html").write_text("<!doctype html><title>Clade</title>")
    (dist / "assets" / "index-abc123.js").write_text("console.log('app')")
    (tmp_path / "secret.txt").write_text("not for the web")
    return dist


def test_missing_build_says_how_to_build(tmp_path: Path) -> None:
    client = app_with(tmp_path / "nothing-here")
    for path in ("/", "/runs/abc"):
        response = client.get(path)
        assert response.status_code == 503
        assert "bash web/build.sh" in response.text and "text/html" in response.headers["content-type"]
    assert client.get("/api/after").json() == {"ok": "yes"}


def test_pages_fall_back_to_the_app(tmp_path: Path) -> None:
    client = app_with(built(tmp_path))
    for path in ("/", "/runs/0123456789abcdef", "/agents/" + "a" * 40, "/compare"):
        response = client.get(path)
        assert response.status_code == 200 and "<title>Clade</title>" in response.text, path
        assert response.headers["cache-control"] == "no-cache"
    asset = client.get("/assets/index-abc123.js")
    assert asset.status_code == 200 and "immutable" in asset.headers["cache-control"]
    assert client.get("/assets/index-gone.js").status_code == 404


def test_api_paths_are_never_pages(tmp_path: Path) -> None:
    client = app_with(built(tmp_path))
    assert client.get("/api/after").json() == {"ok": "yes"}
    missing = client.get("/api/no-such-route")
    assert missing.status_code == 404 and missing.json() == {"detail": "Not Found"}


def test_files_outside_the_build_are_not_served(tmp_path: Path) -> None:
    client = app_with(built(tmp_path))
    for path in ("/../secret.txt", "/%2e%2e/secret.txt", "/assets/..%2f..%2fsecret.txt"):
        response = client.get(path)
        assert "not for the web" not in response.text, path
