"""A small HTTP client for the service's API, with errors a person can act on."""

from __future__ import annotations

from typing import Any

import httpx


class CliError(Exception):
    """A failure to report to the user in one line, then exit non-zero."""


class ApiClient:
    def __init__(self, base_url: str, token: str | None, timeout: float = 60.0) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout)

    def get(self, path: str, **params: Any) -> Any:
        return self._send("GET", path, params=params).json()

    def post(self, path: str, json: Any = None, **kwargs: Any) -> Any:
        return self._send("POST", path, json=json, **kwargs).json()

    def delete(self, path: str) -> Any:
        return self._send("DELETE", path).json()

    def download(self, path: str, **params: Any) -> bytes:
        return self._send("GET", path, params=params).content

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.ConnectError as exc:
            raise CliError(
                f"cannot reach the Clade service at {self.base_url} ({exc}). "
                "Start it with `clade serve` (or `clade up`), or point --url / CLADE_SERVICE_URL at it."
            ) from exc
        except httpx.TimeoutException as exc:
            raise CliError(f"the Clade service at {self.base_url} did not answer in time") from exc
        if response.is_error:
            raise CliError(f"{method} {path} failed ({response.status_code}): {describe(response)}")
        return response


def describe(response: httpx.Response) -> str:
    """The service's error detail, with field paths for validation errors."""
    try:
        detail = response.json().get("detail")
    except ValueError:
        return response.text[:500]
    if isinstance(detail, list):
        parts = []
        for item in detail:
            loc = [str(p) for p in item.get("loc", []) if p != "body"]
            parts.append(f"{'.'.join(loc) or '(body)'}: {item.get('msg')}")
        return "; ".join(parts)
    return str(detail)
