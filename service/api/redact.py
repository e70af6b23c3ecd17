"""What non-admins see of internal errors: that one happened, not its text.

A driver error's text may name host paths, SQL or the database's address; the admin token
shows it whole (`/api/health`, `driver_error` events), anyone else reads HIDDEN_ERROR.
"""

from __future__ import annotations

from typing import Any

HIDDEN_ERROR = "an internal error (its text is shown with the admin token; see the service log)"
# Event kinds whose payload carries an internal error's text under "error".
INTERNAL_ERROR_EVENTS = frozenset({"driver_error"})


def event_payload(kind: str, payload: dict[str, Any], *, admin: bool) -> dict[str, Any]:
    if admin or kind not in INTERNAL_ERROR_EVENTS or "error" not in payload:
        return payload
    return payload | {"error": HIDDEN_ERROR}
