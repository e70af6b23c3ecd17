"""The worker's HTTP client for the service: the only way a worker reads or writes the archive."""

from __future__ import annotations

import json
from typing import Any

import httpx
from pydantic import BaseModel

from contracts.jobs import JOB_SECRET_HEADER
from contracts.records import ChildSubmission, EvaluationSubmission, StepFailure
from contracts.text import storable
from worker.errors import InfrastructureError, RefusedError, StaleJobError


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

    def job_status(self, kind: str, item_id: str, secret: str) -> dict[str, Any]:
        """Where a job stands (`kind`: steps or evaluations): `open` while an answer is wanted."""
        response = self._request(
            "GET", f"/api/worker/{kind}/{item_id}/status", headers={JOB_SECRET_HEADER: secret}
        )
        data: dict[str, Any] = response.json()
        return data

    def submit_child(self, step_id: str, submission: ChildSubmission, *, secret: str) -> dict[str, Any]:
        data: dict[str, Any] = self._post(f"/api/worker/steps/{step_id}/child", submission, secret).json()
        return data

    def reject_step(self, step_id: str, failure: StepFailure, *, secret: str) -> None:
        self._post(f"/api/worker/steps/{step_id}/reject", failure, secret)

    def submit_result(self, evaluation_id: str, submission: EvaluationSubmission, *, secret: str) -> None:
        self._post(f"/api/worker/evaluations/{evaluation_id}/result", submission, secret)

    def _post(self, path: str, body: BaseModel, secret: str) -> httpx.Response:
        # Logs, diagnoses and reasons carry what agents printed, NULs included; the service refuses
        # text it cannot store, so each NUL (or lone surrogate) goes as U+FFFD instead.
        content = json.dumps(storable(body.model_dump(mode="json")), separators=(",", ":"))
        headers = {"Content-Type": "application/json", JOB_SECRET_HEADER: secret}
        return self._request("POST", path, content=content, headers=headers)

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise InfrastructureError(f"service unreachable ({method} {path}): {exc}") from exc
        # 409: the service no longer wants the job; 403: the job was sent again since (a new
        # secret), so this message is not the one the service waits for. Either way: drop it.
        if response.status_code in (403, 409):
            raise StaleJobError(f"{method} {path}: {_detail(response)}")
        # 5xx and 429 are the service's trouble, not the job's: retried with backoff. Among them 507,
        # the archive's disk is full: the same submission works once space is freed, so it is never
        # taken as a refusal of the patch.
        if response.status_code >= 500 or response.status_code == 429:
            raise InfrastructureError(
                f"{method} {path} answered {response.status_code}: {response.text[:300]}"
            )
        if response.is_error:
            # Any other 4xx: the service refuses what this worker sent; never retried as it is.
            detail = _detail(response)
            raise RefusedError(
                f"{method} {path} answered {response.status_code}: {detail[:1000]}",
                status=response.status_code,
                detail=detail,
            )
        return response


def _detail(response: httpx.Response) -> str:
    """The service's reason in one line: its `detail`, each validation issue with its field path."""
    try:
        detail = response.json().get("detail")
    except (ValueError, AttributeError):
        return response.text[:2000]
    if isinstance(detail, list):
        issues = []
        for issue in detail:
            if not isinstance(issue, dict):
                continue
            where = ".".join(str(p) for p in issue.get("loc", []) if p != "body")
            issues.append(f"{where or '(body)'}: {issue.get('msg')}")
        return "; ".join(issues)
    return str(detail)
