"""What an agent's metered calls say about its run, apart from its diff: that the model upstream
failed every call (an infrastructure failure, not the agent's), or that the model never used a
tool the agent offered (a warning on the evaluation)."""

from __future__ import annotations

from worker.llm import LLMCall

# Upstream statuses that are no verdict on the agent's request: the server, our key, the
# configured model, or a rate limit. A 400 (a context overflow, a bad field) is the agent's.
_INFRASTRUCTURE_STATUSES = frozenset({401, 403, 404, 408, 429})
NEVER_USED_A_TOOL = "the model never used a tool"


def _infrastructure(call: LLMCall) -> bool:
    if call.status != "error" or call.error_source != "upstream":
        return False
    status = call.upstream_status
    return status is None or status >= 500 or status in _INFRASTRUCTURE_STATUSES or call.http_status >= 500


def upstream_failure(calls: list[LLMCall]) -> str | None:
    """Why the run could not be measured, if the upstream failed every call and none answered
    (a spent budget or the gateway's own refusals are not the upstream's fault)."""
    if not calls or any(c.status != "error" for c in calls):
        return None
    failed = [c for c in calls if _infrastructure(c)]
    if not failed:
        return None
    last = failed[-1]
    status = f"HTTP {last.upstream_status}" if last.upstream_status is not None else "no answer"
    code = f", code {last.error_code}" if last.error_code else ""
    tries = f" after {last.attempts} attempts" if last.attempts > 1 else ""
    return (
        f"the model upstream failed every model call ({len(calls)} of {len(calls)}): "
        f"{status}{code}{tries}: {last.error or 'no message'}"
    )


def tool_warning(calls: list[LLMCall]) -> str | None:
    """A warning when calls offered tools and answered, and not one answer was a tool call."""
    offered = [c for c in calls if c.tools_offered > 0 and c.status == "ok"]
    if not offered or any(c.returned_tool_call for c in offered):
        return None
    models = ", ".join(sorted({c.model for c in offered}))
    return (
        f"{NEVER_USED_A_TOOL}: {len(offered)} answered calls offered tools and {models} returned no "
        'tool call in any of them (does the server need tool_choice "auto", or a tool-call template?)'
    )
