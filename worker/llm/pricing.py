"""What one chat completion cost: the one pricing function of the gateway and `clade doctor`.

The table itself is `contracts.prices` (the service checks and stores a run's prices with it).
A call is priced by the model CONFIGURED for it, never by the name the server answered: a
local server answers its own name ("smollm2") to a call for "gpt-4o", and an echoed or
substituted name must not change what a call costs. The answered name is recorded beside it.
A model with no price costs 0 and is flagged, never an error here: the service refuses an
unpriced model when the run is planned.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contracts.prices import (
    DEFAULT_PRICES,
    PER_MILLION,
    PRICE_TABLE_VERSION,
    ModelPrice,
    PriceTable,
    PriceTableFile,
    TokenUsage,
    load_price_table,
)
from contracts.records import MAX_CALL_TOKENS

__all__ = [
    "DEFAULT_PRICES",
    "PER_MILLION",
    "PRICE_TABLE_VERSION",
    "ModelPrice",
    "PriceTable",
    "PriceTableFile",
    "PricedReply",
    "TokenUsage",
    "load_price_table",
    "price_reply",
    "reported_usage",
]


@dataclass(frozen=True)
class PricedReply:
    model: str  # the configured model, whose price was used
    answered_model: str | None  # the name in the server's answer, if it gave one
    usage: TokenUsage | None  # None: the server reported no usage
    cost_usd: float
    price_known: bool


def reported_usage(response: dict[str, Any]) -> TokenUsage | None:
    """The server's own token counts, with the cached and reasoning parts where it reports them
    (`usage.prompt_tokens_details.cached_tokens`, `usage.completion_tokens_details.reasoning_tokens`)."""
    usage = response.get("usage")
    if not isinstance(usage, dict):
        return None
    raw_prompt, raw_completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if not isinstance(raw_prompt, int) or not isinstance(raw_completion, int):
        return None
    if isinstance(raw_prompt, bool) or isinstance(raw_completion, bool):
        return None
    if max(raw_prompt, raw_completion) > MAX_CALL_TOKENS:
        # No model reads or writes a billion tokens in one call: a broken or hostile count,
        # which the gateway replaces with its own estimate rather than bill (or fail to report).
        return None
    prompt, completion = max(raw_prompt, 0), max(raw_completion, 0)
    cached = _detail(usage, "prompt_tokens_details", "cached_tokens")
    reasoning = _detail(usage, "completion_tokens_details", "reasoning_tokens")
    return TokenUsage(prompt, completion, min(cached, prompt), min(reasoning, completion))


def price_reply(
    prices: PriceTable, model: str, response: dict[str, Any], *, usage: TokenUsage | None = None
) -> PricedReply:
    """What `response` cost, priced as `model` (the configured one). `usage` overrides the
    server's counts (the gateway's estimate when the server sent none)."""
    counted = usage if usage is not None else reported_usage(response)
    answered = response.get("model")
    price = prices.price(model)
    cost = 0.0 if price is None or counted is None else price.usd(counted)
    return PricedReply(
        model=model,
        answered_model=answered if isinstance(answered, str) else None,
        usage=counted,
        cost_usd=cost,
        price_known=price is not None,
    )


def _detail(usage: dict[str, Any], section: str, key: str) -> int:
    part = usage.get(section)
    value = part.get(key) if isinstance(part, dict) else None
    return max(value, 0) if isinstance(value, int) and not isinstance(value, bool) else 0
