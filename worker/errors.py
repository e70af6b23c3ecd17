"""Worker errors: infrastructure failures are retried; the agent's own failures are results."""

from __future__ import annotations


class InfrastructureError(RuntimeError):
    """Docker, the broker or the service failed: Celery retries the task with backoff."""


class StaleJobError(RuntimeError):
    """The service no longer wants this job (its run ended): drop it, do not retry."""
