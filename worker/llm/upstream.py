"""The model upstream seam: where the gateway sends chat completions, with the real key.

Any OpenAI-compatible server fits (OpenAI, vLLM, Ollama, LiteLLM, the
scripted server); the registry maps a config `type` to a factory so that
another kind of upstream is one entry, not a change to the gateway. A chat completion is tried
again where that helps (`retry`); what fails is raised as a typed `UpstreamError` keeping the
upstream's status, code and message, whatever shape its error body had (`error_bodies`).
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Literal, Protocol

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from worker.llm.error_bodies import parse_error_body
from worker.llm.redact import Redactor
from worker.llm.retry import Attempt, CallBounds, RetryPolicy, retry_after_s, retryable_status

JSONObject = dict[str, Any]
MAX_MESSAGE_CHARS = 500


class UpstreamError(Exception):
    """The upstream did not give a usable answer; `status` is the HTTP status to report.

    `code` is the machine-readable kind (the upstream's own, e.g. `context_length_exceeded`, or
    Clade's for a fault with no answer: `upstream_timeout`, `upstream_unavailable`,
    `upstream_invalid_response`); `upstream_status` the HTTP status the upstream itself sent (None:
    it sent none); `attempts` how many tries were made; `retry_after_s` the wait it asked for.
    """

    def __init__(
        self,
        status: int,
        message: str,
        error_type: str = "upstream_error",
        code: str | None = None,
        *,
        upstream_status: int | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_type = error_type
        self.code = code
        self.upstream_status = upstream_status
        self.retry_after_s = retry_after_s
        self.attempts = 1

    @property
    def retryable(self) -> bool:
        return True


class UpstreamHTTPError(UpstreamError):
    """The upstream answered with a non-2xx status (its own status, type and code are kept)."""

    @property
    def retryable(self) -> bool:
        return retryable_status(self.status, self.code)


class UpstreamUnavailable(UpstreamError, ConnectionError):
    """The upstream could not be reached, reset the connection or cut its answer short."""


class UpstreamInvalidResponse(UpstreamUnavailable):
    """The upstream answered 2xx with something that is not a chat completion's JSON object."""


class UpstreamTimeout(UpstreamError, TimeoutError):
    """The upstream did not answer within the timeout."""


class Upstream(Protocol):
    def chat_completions(self, body: JSONObject, bounds: CallBounds | None = None) -> JSONObject:
        """POST /chat/completions (tried again within `bounds` where that helps); raises
        `UpstreamError` on any failure."""
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
    timeout_s: float = Field(default=300.0, gt=0, description="one attempt's limit")
    retry: RetryPolicy = Field(default_factory=RetryPolicy)


class OpenAICompatibleUpstream:
    """Thread-safe (one pooled httpx client); the key is only ever put in request headers."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        timeout: float = 300.0,
        retry: RetryPolicy | None = None,
        rng: random.Random | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(base_url=base_url.rstrip("/") + "/", headers=headers, timeout=timeout)
        self._timeout = timeout
        self._retry = retry or RetryPolicy()
        self._rng = rng or random.Random()
        self._rng_lock = threading.Lock()
        # Every message this raises may reach a sandbox: the key is cut out before any truncation.
        self._redact = Redactor([api_key] if api_key else [])

    def chat_completions(self, body: JSONObject, bounds: CallBounds | None = None) -> JSONObject:
        bounds = bounds or CallBounds()
        policy = self._retry
        for attempt in range(policy.max_attempts):
            try:
                response = self._request("POST", "chat/completions", body, bounds.remaining())
                _refuse_error_in_ok(response, self._redact)
                return response
            except UpstreamError as exc:
                exc.attempts = attempt + 1
                wait = self._wait_before_retry(exc, attempt, bounds)
                bounds.attempts.append(Attempt(exc.message, exc.upstream_status, exc.code, wait))
                if wait is None:
                    raise
                if not bounds.wait(wait):
                    raise
        raise AssertionError("unreachable: the last attempt raises")  # pragma: no cover

    def list_models(self) -> JSONObject:
        return self._request("GET", "models", None, None)

    def close(self) -> None:
        self._client.close()

    def _wait_before_retry(self, exc: UpstreamError, attempt: int, bounds: CallBounds) -> float | None:
        """How long to wait before trying again; None: do not."""
        policy = self._retry
        if not exc.retryable or attempt + 1 >= policy.max_attempts or bounds.stopped:
            return None
        if exc.retry_after_s is not None:
            if exc.retry_after_s > policy.max_retry_after_s:
                return None
            wait = exc.retry_after_s
        else:
            with self._rng_lock:
                wait = policy.backoff(attempt, self._rng)
        remaining = bounds.remaining()
        # The next attempt needs time of its own: a wait that leaves under a second is no use.
        if remaining is not None and wait + 1.0 > remaining:
            return None
        return wait

    def _request(
        self, method: str, path: str, body: JSONObject | None, remaining: float | None
    ) -> JSONObject:
        redact = self._redact
        timeout = self._timeout if remaining is None else max(0.001, min(self._timeout, remaining))
        try:
            response = self._client.request(method, path, json=body, timeout=timeout)
        except httpx.TimeoutException as exc:
            raise UpstreamTimeout(
                504,
                redact.cut(f"upstream timed out after {timeout:g}s: {exc}", MAX_MESSAGE_CHARS),
                "upstream_timeout",
                "upstream_timeout",
            ) from exc
        except httpx.TransportError as exc:
            # Refused, reset, or the body cut short of its Content-Length.
            raise UpstreamUnavailable(
                502,
                redact.cut(f"upstream unreachable: {type(exc).__name__}: {exc}", MAX_MESSAGE_CHARS),
                "upstream_error",
                "upstream_unavailable",
            ) from exc
        if response.status_code >= 400:
            parsed = parse_error_body(
                response.status_code, response.text, response.headers.get("content-type", "")
            )
            raise UpstreamHTTPError(
                response.status_code,
                redact.cut(parsed.message, MAX_MESSAGE_CHARS),
                redact.cut(parsed.error_type, 100),
                None if parsed.code is None else redact.cut(parsed.code, 100),
                upstream_status=response.status_code,
                retry_after_s=retry_after_s(dict(response.headers)),
            )
        try:
            data = response.json()
        except ValueError as exc:
            raise UpstreamInvalidResponse(
                502,
                redact.cut(
                    f"upstream answered HTTP {response.status_code} with non-JSON: {response.text[:200]!r}",
                    MAX_MESSAGE_CHARS,
                ),
                "upstream_error",
                "upstream_invalid_response",
                upstream_status=response.status_code,
            ) from exc
        if not isinstance(data, dict):
            raise UpstreamInvalidResponse(
                502,
                "upstream answered with JSON that is not an object",
                "upstream_error",
                "upstream_invalid_response",
                upstream_status=response.status_code,
            )
        return data


def _refuse_error_in_ok(response: JSONObject, redact: Redactor) -> None:
    """Some proxies answer 200 with an error body and no choices: that is no completion."""
    if "choices" in response or "error" not in response:
        return
    parsed = parse_error_body(200, json.dumps(response))
    raise UpstreamHTTPError(
        502,
        redact.cut(parsed.message, MAX_MESSAGE_CHARS),
        parsed.error_type,
        parsed.code,
        upstream_status=200,
    )


def _openai_compatible(config: UpstreamConfig) -> Upstream:
    key = config.api_key.get_secret_value() if config.api_key else None
    return OpenAICompatibleUpstream(config.base_url, key, config.timeout_s, config.retry)


UPSTREAM_FACTORIES: Mapping[str, Callable[[UpstreamConfig], Upstream]] = MappingProxyType(
    {"openai-compatible": _openai_compatible}
)


def make_upstream(config: UpstreamConfig) -> Upstream:
    return UPSTREAM_FACTORIES[config.type](config)
