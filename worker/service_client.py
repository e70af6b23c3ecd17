"""The worker's HTTP client for the service: the only way a worker reads or writes the archive."""

from __future__ import annotations

import json
from typing import Any

import httpx
from pydantic import BaseModel

from contracts.records import ChildSubmission, EvaluationSubmission, StepFailure
from contracts.text import storable
from worker.errors import InfrastructureError, StaleJobError


class ServiceClient:
    def __init__(
        self,
        base_url: str,
        worker_token: str,
        timeout_s: float = 120.0,
        transport: httpx.BaseTransport | None = None,  # tests: a service in the same process
    ) -> None:
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers={"Authorization": f"Bearer {worker_token}"},
            timeout=timeout_s,
            transport=transport,
        )

    def close(self) -> None:
        self._http.close()

    def agent_code(self, agent_id: str) -> bytes:
        return self._request("GET", f"/api/worker/agents/{agent_id}/code").content

    def merged_code(self, step_id: str) -> bytes:
        """A crossover step's merge of its two parents, conflict markers and all, as a tar."""
        return self._request("GET", f"/api/worker/steps/{step_id}/merge").content

    def submit_child(self, step_id: str, submission: ChildSubmission) -> dict[str, Any]:
        data: dict[str, Any] = self._post(f"/api/worker/steps/{step_id}/child", submission).json()
        return data

    def reject_step(self, step_id: str, failure: StepFailure) -> None:
        self._post(f"/api/worker/steps/{step_id}/reject", failure)

    def submit_result(self, evaluation_id: str, submission: EvaluationSubmission) -> None:
        self._post(f"/api/worker/evaluations/{evaluation_id}/result", submission)

    def _post(self, path: str, body: BaseModel) -> httpx.Response:
        # Logs, diagnoses and reasons carry what agents printed, NULs included; the service refuses
        # text it cannot store, so each NUL (or lone surrogate) goes as U+FFFD instead.
        content = json.dumps(storable(body.model_dump(mode="json")), separators=(",", ":"))
        return self._request("POST", path, content=content, headers={"Content-Type": "application/json"})

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise InfrastructureError(f"service unreachable ({method} {path}): {exc}") from exc
        if response.status_code == 409:
            raise StaleJobError(f"{method} {path}: {response.json().get('detail')}")
        # 5xx and 429 are the service's trouble, not the job's: retried with backoff. Among them 507,
        # the archive's disk is full: the same submission works once space is freed, so it is never
        # taken as a refusal of the patch.
        if response.status_code >= 500 or response.status_code == 429:
            raise InfrastructureError(
                f"{method} {path} answered {response.status_code}: {response.text[:300]}"
            )
        if response.is_error:
            # A 4xx other than 409 means this worker sent something wrong: a bug, not a retry.
            raise RuntimeError(f"{method} {path} answered {response.status_code}: {response.text[:1000]}")
        return response
