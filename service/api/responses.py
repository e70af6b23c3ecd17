"""The error answers each endpoint declares in the OpenAPI document, each with its body."""

from __future__ import annotations

from typing import Any

from fastapi import status

from service.api.schemas import ErrorBody, ValidationErrorBody

DESCRIPTIONS = {
    status.HTTP_401_UNAUTHORIZED: "The token is missing or is not the one this endpoint needs",
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
