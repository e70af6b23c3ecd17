"""The model upstream seam: where the gateway sends chat completions, with the real key.

Any OpenAI-compatible server fits (OpenAI, vLLM, Ollama, LiteLLM, the
scripted server); the registry maps a config `type` to a factory so that
another kind of upstream is one entry, not a change to the gateway.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Literal, Protocol

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from worker.llm.redact import Redactor

JSONObject = dict[str, Any]
MAX_MESSAGE_CHARS = 500


class UpstreamError(Exception):
    """The upstream did not give a usable answer; `status` is the HTTP status to report."""

    def __init__(self, status: int, message: str, error_type: str = "upstream_error") -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_type = error_type


class UpstreamHTTPError(UpstreamError):
    """The upstream answered with a non-2xx status (its own status and error type are kept)."""


class UpstreamUnavailable(UpstreamError, ConnectionError):
    """The upstream could not be reached or answered something that is not JSON."""


class UpstreamTimeout(UpstreamError, TimeoutError):
    """The upstream did not answer within the timeout."""


class Upstream(Protocol):
    def chat_completions(self, body: JSONObject) -> JSONObject:
        """POST /chat/completions; raises `UpstreamError` on any failure."""
        ...

    def list_models(self) -> JSONObject:
        """GET /models; raises `UpstreamError` on any failure."""
        ...

    def close(self) -> None: ...


class UpstreamConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["openai-compatible"] = "openai-compatible"
    base_url: str = Field(min_length=1, description="e.g. http://127.0.0.1:11434/v1 (with /v1)")
    api_key: SecretStr | None = None
    timeout_s: float = Field(default=300.0, gt=0)


class OpenAICompatibleUpstream:
    """Thread-safe (one pooled httpx client); the key is only ever put in request headers."""

    def __init__(self, base_url: str, api_key: str | None, timeout: float = 300.0) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(base_url=base_url.rstrip("/") + "/", headers=headers, timeout=timeout)
        # Every message this raises may reach a sandbox: the key is cut out before any truncation.
        self._redact = Redactor([api_key] if api_key else [])

    def chat_completions(self, body: JSONObject) -> JSONObject:
        return self._request("POST", "chat/completions", body)

    def list_models(self) -> JSONObject:
        return self._request("GET", "models", None)

    def close(self) -> None:
        self._client.close()

    def _request(self, method: str, path: str, body: JSONObject | None) -> JSONObject:
        redact = self._redact
        try:
            response = self._client.request(method, path, json=body)
        except httpx.TimeoutException as exc:
            raise UpstreamTimeout(
                504, redact.cut(f"upstream timed out: {exc}", MAX_MESSAGE_CHARS), "upstream_timeout"
            ) from exc
        except httpx.TransportError as exc:
            raise UpstreamUnavailable(
                502, redact.cut(f"upstream unreachable: {exc}", MAX_MESSAGE_CHARS)
            ) from exc
        if response.status_code >= 400:
            message, error_type = _error_details(response)
            raise UpstreamHTTPError(
                response.status_code, redact.cut(message, MAX_MESSAGE_CHARS), redact.cut(error_type, 100)
            )
        try:
            data = response.json()
        except ValueError as exc:
            raise UpstreamUnavailable(502, "upstream answered with non-JSON") from exc
        if not isinstance(data, dict):
            raise UpstreamUnavailable(502, "upstream answered with JSON that is not an object")
        return data


def _error_details(response: httpx.Response) -> tuple[str, str]:
    """The upstream's own OpenAI-style message and type when it sent one, else its text (whole:
    the caller redacts, then cuts)."""
    try:
        data = response.json()
    except ValueError:
        data = None
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return f"upstream: {error['message']}", str(error.get("type") or "upstream_error")
    return f"upstream HTTP {response.status_code}: {response.text}", "upstream_error"


def _openai_compatible(config: UpstreamConfig) -> Upstream:
    key = config.api_key.get_secret_value() if config.api_key else None
    return OpenAICompatibleUpstream(config.base_url, key, config.timeout_s)


UPSTREAM_FACTORIES: Mapping[str, Callable[[UpstreamConfig], Upstream]] = MappingProxyType(
    {"openai-compatible": _openai_compatible}
)


def make_upstream(config: UpstreamConfig) -> Upstream:
    return UPSTREAM_FACTORIES[config.type](config)
