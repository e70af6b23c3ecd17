"""The secret that binds a worker's answer to the job the driver sent.

Each dispatch of a step or an evaluation makes a fresh random secret: the job message carries
it, the row keeps only its sha256. A message delivered again by the broker carries the same
secret and can still answer; a re-dispatch (the driver gave up waiting on the last message)
replaces it, so the lost message's worker, should it wake, is refused instead of answering twice.
Every write a worker makes about a job must show the secret of the last dispatch.
"""

from __future__ import annotations

import hashlib
import secrets

from contracts.errors import ArchiveError, ConflictError
from contracts.jobs import JOB_SECRET_HEADER as HEADER
from service.db.models import Evaluation, Step

SECRET_BYTES = 32


class JobSecretError(ArchiveError, PermissionError):
    """The answer does not show the secret of the job the driver sent last (HTTP 403)."""


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def issue(item: Step | Evaluation) -> str:
    """A new secret for this dispatch of `item`; its hash goes on the row (caller commits)."""
    secret = secrets.token_urlsafe(SECRET_BYTES)
    item.job_secret_hash = digest(secret)
    return secret


def verify(item: Step | Evaluation, given: str | None) -> None:
    """Raise unless `given` is the secret of `item`'s last dispatch."""
    what = f"{'step' if isinstance(item, Step) else 'evaluation'} {item.id}"
    if item.job_secret_hash is None:
        raise ConflictError(f"{what} was never dispatched to a worker; it takes no answer yet")
    if not given:
        raise JobSecretError(f"{what}: the job's secret is missing (header {HEADER})")
    if not secrets.compare_digest(digest(given), item.job_secret_hash):
        raise JobSecretError(
            f"{what}: wrong job secret (not the job the service sent last; a re-dispatched or forged job)"
        )
