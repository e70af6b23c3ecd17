"""The error answers each endpoint declares in the OpenAPI document, each with its body."""

from __future__ import annotations

from typing import Any

from fastapi import status

from service.api.schemas import ErrorBody, ValidationErrorBody

DESCRIPTIONS = {
    status.HTTP_401_UNAUTHORIZED: "The token is missing or is not the one this endpoint needs",
    status.HTTP_403_FORBIDDEN: "The job's secret is missing or is not the one of the job sent last",
    status.HTTP_404_NOT_FOUND: "Something the request names does not exist",
    status.HTTP_409_CONFLICT: "Impossible from the current state",
    status.HTTP_413_CONTENT_TOO_LARGE: "The request body, or something in it, exceeds a limit",
    status.HTTP_422_UNPROCESSABLE_CONTENT: "Each problem with the request, at its field path",
    status.HTTP_507_INSUFFICIENT_STORAGE: "The archive's disk is full; nothing was written",
}


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a route or router: each code with its body model."""
    return {
        code: {
            "model": ValidationErrorBody if code == status.HTTP_422_UNPROCESSABLE_CONTENT else ErrorBody,
            "description": DESCRIPTIONS[code],
        }
        for code in codes
    }


def errors_in_json(schema: dict[str, Any]) -> dict[str, Any]:
    """Errors are JSON on every route: FastAPI documents them in the route's own media type
    (`text/plain` for a diff), so move each error body to `application/json`. In place."""
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            for code, response in operation.get("responses", {}).items():
                content = response.get("content")
                if code.startswith(("4", "5")) and content and "application/json" not in content:
                    response["content"] = {"application/json": next(iter(content.values()))}
    return schema


def download(media_type: str, description: str) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a 200 whose body is a file of `media_type`, not JSON."""
    schema = {"type": "string", "format": "binary"}
    return {status.HTTP_200_OK: {"description": description, "content": {media_type: {"schema": schema}}}}


# Operations whose success body's `id` names what the path parameter of others takes.
CREATES = {
    ("post", "/api/runs"): "run_id",
    ("post", "/api/seeds"): "agent_id",
    ("post", "/api/worker/steps/{step_id}/child"): "agent_id",
}


def add_links(schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAPI links from each creating operation to every operation that takes what it made, so
    clients and stateful testers can follow a new run or agent without guessing. In place."""
    paths: dict[str, dict[str, Any]] = schema.get("paths", {})
    for (method, path), parameter in CREATES.items():
        targets = sorted(
            operation["operationId"]
            for target, operations in paths.items()
            if f"{{{parameter}}}" in target
            for operation in operations.values()
        )
        links = {
            target: {"operationId": target, "parameters": {parameter: "$response.body#/id"}}
            for target in targets
        }
        for code, response in paths[path][method]["responses"].items():
            if code.startswith("2"):
                response["links"] = links
    return schema
