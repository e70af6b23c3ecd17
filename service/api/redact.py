"""What non-admins see of internal errors: that one happened, not its text.

A driver error's text may name host paths, SQL or the database's address; the admin token
shows it whole (`/api/health`, `driver_error` events), anyone else reads HIDDEN_ERROR.
"""

from __future__ import annotations

from contracts.events import DriverErrorEvent, RunEvent, UnreadableEvent

HIDDEN_ERROR = "an internal error (its text is shown with the admin token; see the service log)"
# Event kinds whose payload carries an internal error's text under "error".
INTERNAL_ERROR_EVENTS = frozenset({"driver_error"})


def event_for(event: RunEvent, *, admin: bool) -> RunEvent:
    """The event as this reader may see it."""
    if admin:
        return event
    if isinstance(event, DriverErrorEvent):
        return event.model_copy(update={"payload": event.payload.model_copy(update={"error": HIDDEN_ERROR})})
    if isinstance(event, UnreadableEvent) and event.payload.stored_kind in INTERNAL_ERROR_EVENTS:
        stored = event.payload.stored_payload
        if isinstance(stored, dict) and "error" in stored:
            hidden = event.payload.model_copy(update={"stored_payload": stored | {"error": HIDDEN_ERROR}})
            return event.model_copy(update={"payload": hidden})
    return event
