"""From the gateway's call records to the service's usage records."""

from __future__ import annotations

from contracts.records import UsageRecord
from worker.llm import LLMCall


def usage_records(calls: list[LLMCall]) -> list[UsageRecord]:
    return [
        UsageRecord(
            purpose=call.purpose,
            model=call.model[:200],
            prompt_tokens=call.prompt_tokens,
            completion_tokens=call.completion_tokens,
            cost_usd=call.cost_usd,
            detail=call.model_dump(mode="json"),
        )
        for call in calls
    ]
