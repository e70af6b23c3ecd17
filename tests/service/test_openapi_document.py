"""The OpenAPI document lists every error an endpoint answers, each with its body, one shape per kind."""

from __future__ import annotations

from typing import Any

import pytest

from service.api.openapi import build_schema

ERROR = "#/components/schemas/ErrorBody"
INVALID = "#/components/schemas/ValidationErrorBody"
WRITES_AN_ARCHIVE = {
    ("post", "/api/seeds"),
    ("post", "/api/runs"),
    ("post", "/api/worker/steps/{step_id}/child"),
    ("post", "/api/worker/steps/{step_id}/reject"),
    ("post", "/api/worker/evaluations/{evaluation_id}/result"),
}


@pytest.fixture(scope="module")
def operations() -> list[tuple[str, str, dict[str, Any]]]:
    paths: dict[str, dict[str, Any]] = build_schema()["paths"]
    return [(method, path, operation) for path, ops in paths.items() for method, operation in ops.items()]


def body_ref(response: dict[str, Any]) -> str:
    return str(response["content"]["application/json"]["schema"]["$ref"])


def test_every_error_status_is_listed_with_its_body(
    operations: list[tuple[str, str, dict[str, Any]]],
) -> None:
    missing = []
    for method, path, operation in operations:
        responses = operation["responses"]
        expected = set()
        if path.startswith(("/api/runs", "/api/agents", "/api/worker", "/api/seeds", "/api/admin")):
            expected.add("401")  # reads may require a token (CLADE_READS_REQUIRE_TOKEN)
        if "{" in path:
            expected |= {"404", "422"}
        if operation.get("parameters") or "requestBody" in operation:
            expected.add("422")
        if "requestBody" in operation:
            expected.add("413")
        if (method, path) in WRITES_AN_ARCHIVE:
            expected.add("507")
        if path.startswith("/api/runs/{run_id}/") and method == "post":
            expected |= {"409", "507"}
        missing += [f"{method.upper()} {path}: {code}" for code in sorted(expected - responses.keys())]
    assert missing == []


def test_all_422s_share_one_shape_and_other_errors_another(
    operations: list[tuple[str, str, dict[str, Any]]],
) -> None:
    # The one exception: an unhealthy service answers its health report with the 503.
    health = {("get", "/api/health", "503")}
    bodies = {
        (code, body_ref(response))
        for method, path, operation in operations
        for code, response in operation["responses"].items()
        if code >= "400" and (method, path, code) not in health
    }
    assert {ref for code, ref in bodies if code == "422"} == {INVALID}
    assert {ref for code, ref in bodies if code != "422"} == {ERROR}
    (unhealthy,) = (op["responses"]["503"] for m, p, op in operations if (m, p, "503") in health)
    assert body_ref(unhealthy) == "#/components/schemas/HealthPublic"
