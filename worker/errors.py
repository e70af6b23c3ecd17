"""Worker errors: infrastructure failures are retried; the agent's own failures are results."""

from __future__ import annotations


class InfrastructureError(RuntimeError):
    """Docker, the broker or the service failed: Celery retries the task with backoff."""


class StaleJobError(RuntimeError):
    """The service no longer wants this job (its run ended): drop it, do not retry."""


class RefusedError(RuntimeError):
    """The service refused what this worker sent (a 4xx other than 403/409): `status` and the
    service's own `detail`, for the reason a step records (a patch it will not archive)."""

    def __init__(self, message: str, *, status: int, detail: str) -> None:
        super().__init__(message)
        self.status, self.detail = status, detail
