"""Prices of models: USD per million tokens, and the one way a call's tokens become dollars.

A price table maps model names to prices. Patterns are exact names or shell globs (`gpt-4o*`,
`*/llama3*`); an exact name wins, then the longest pattern, so `gpt-4o-mini*` beats `gpt-4o*`.
The service checks at plan time that every model a run configures has a price (from the run's
own `models.prices`, else the table) and stores the prices it found with the run; the worker
prices each call by the model the run configured for it, with those stored prices.

Cached prompt tokens and reasoning tokens are parts of the prompt and completion counts (as
OpenAI reports them); each is priced at its own rate when the price gives one, else at the
prompt or completion rate.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from pydantic import BaseModel, ConfigDict, Field

from contracts.model_files import load_model_file

PRICE_TABLE_VERSION = 1
PER_MILLION = 1_000_000
# Far above any model's list price, and low enough that one call (at most a billion tokens of
# each kind, contracts.records) costs an amount a usage record carries.
MAX_PRICE_PER_MILLION = 10_000.0


class ModelPrice(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    prompt: float = Field(ge=0, le=MAX_PRICE_PER_MILLION, description="USD per million prompt tokens")
    completion: float = Field(ge=0, le=MAX_PRICE_PER_MILLION, description="USD per million completion tokens")
    cached_prompt: float | None = Field(
        default=None,
        ge=0,
        le=MAX_PRICE_PER_MILLION,
        description="USD per million cached prompt tokens (default: the prompt rate)",
    )
    reasoning: float | None = Field(
        default=None,
        ge=0,
        le=MAX_PRICE_PER_MILLION,
        description="USD per million reasoning tokens (default: the completion rate)",
    )

    @property
    def worst_prompt(self) -> float:
        """The most one prompt token can cost, per million: what a budget holds before a call."""
        return max(self.prompt, self.cached_prompt or 0.0)

    @property
    def worst_completion(self) -> float:
        return max(self.completion, self.reasoning or 0.0)

    def usd(self, usage: TokenUsage) -> float:
        cached = min(usage.cached_prompt, usage.prompt)
        reasoning = min(usage.reasoning, usage.completion)
        cached_rate = self.prompt if self.cached_prompt is None else self.cached_prompt
        reasoning_rate = self.completion if self.reasoning is None else self.reasoning
        return (
            (usage.prompt - cached) * self.prompt
            + cached * cached_rate
            + (usage.completion - reasoning) * self.completion
            + reasoning * reasoning_rate
        ) / PER_MILLION


@dataclass(frozen=True)
class TokenUsage:
    """One call's tokens; `cached_prompt` is part of `prompt`, `reasoning` part of `completion`."""

    prompt: int
    completion: int
    cached_prompt: int = 0
    reasoning: int = 0


# Indicative list prices (USD / 1M tokens) at the time of writing; deployments
# should point `price_table_path` at their own table. The scripted model has a
# made-up nonzero price so that demos show costs moving.
DEFAULT_PRICES: Mapping[str, ModelPrice] = MappingProxyType(
    {
        "scripted*": ModelPrice(prompt=1.0, completion=2.0),
        "gpt-4o*": ModelPrice(prompt=2.5, completion=10.0, cached_prompt=1.25),
        "gpt-4o-mini*": ModelPrice(prompt=0.15, completion=0.6, cached_prompt=0.075),
        "gpt-4.1*": ModelPrice(prompt=2.0, completion=8.0, cached_prompt=0.5),
        "gpt-4.1-mini*": ModelPrice(prompt=0.4, completion=1.6, cached_prompt=0.1),
        "gpt-4.1-nano*": ModelPrice(prompt=0.1, completion=0.4, cached_prompt=0.025),
        "gpt-5*": ModelPrice(prompt=1.25, completion=10.0, cached_prompt=0.125),
        "gpt-5-mini*": ModelPrice(prompt=0.25, completion=2.0, cached_prompt=0.025),
        "gpt-5-nano*": ModelPrice(prompt=0.05, completion=0.4, cached_prompt=0.005),
        "o3*": ModelPrice(prompt=2.0, completion=8.0, cached_prompt=0.5),
        "o3-mini*": ModelPrice(prompt=1.1, completion=4.4, cached_prompt=0.55),
        "o4-mini*": ModelPrice(prompt=1.1, completion=4.4, cached_prompt=0.275),
        "claude-3-5-haiku*": ModelPrice(prompt=0.8, completion=4.0),
        "claude-3-5-sonnet*": ModelPrice(prompt=3.0, completion=15.0),
        "claude-3-7-sonnet*": ModelPrice(prompt=3.0, completion=15.0),
        "claude-sonnet-4*": ModelPrice(prompt=3.0, completion=15.0),
    }
)


class PriceTableFile(BaseModel):
    """On-disk format (YAML or JSON); `include_defaults` layers the file over the built-in table."""

    model_config = ConfigDict(extra="forbid")

    version: int = Field(default=PRICE_TABLE_VERSION, ge=1, le=PRICE_TABLE_VERSION)
    include_defaults: bool = False
    models: dict[str, ModelPrice]


class PriceTable:
    """Prices by model name; `first` (a run's own prices) is looked up before the rest."""

    def __init__(self, prices: Mapping[str, ModelPrice], *, fallback: PriceTable | None = None) -> None:
        self._exact = {k: v for k, v in prices.items() if not _is_glob(k)}
        # Longest pattern first: the most specific glob wins.
        self._globs = sorted(((k, v) for k, v in prices.items() if _is_glob(k)), key=lambda kv: -len(kv[0]))
        self._fallback = fallback

    @classmethod
    def default(cls) -> PriceTable:
        return cls(DEFAULT_PRICES)

    def layered(self, first: Mapping[str, ModelPrice]) -> PriceTable:
        """This table with `first` looked up before it (a run's declared or stored prices)."""
        return PriceTable(first, fallback=self) if first else self

    def price(self, model: str) -> ModelPrice | None:
        if model in self._exact:
            return self._exact[model]
        for pattern, price in self._globs:
            if fnmatch.fnmatchcase(model, pattern):
                return price
        return None if self._fallback is None else self._fallback.price(model)

    def cost(
        self,
        model: str,
        prompt_tokens: int,
        completion_tokens: int,
        *,
        cached_prompt_tokens: int = 0,
        reasoning_tokens: int = 0,
    ) -> tuple[float, bool]:
        """(USD, whether the model had a price); an unpriced model costs 0."""
        price = self.price(model)
        if price is None:
            return 0.0, False
        usage = TokenUsage(prompt_tokens, completion_tokens, cached_prompt_tokens, reasoning_tokens)
        return price.usd(usage), True


def load_price_table(path: Path | None) -> PriceTable:
    """The table in `path` (YAML or JSON), or the built-in one when no path is configured.

    Raises `ConfigFileError` naming the file and the bad field.
    """
    if path is None:
        return PriceTable.default()
    parsed = load_model_file(path, PriceTableFile, "price table")
    prices = dict(DEFAULT_PRICES) if parsed.include_defaults else {}
    prices.update(parsed.models)
    return PriceTable(prices)


def _is_glob(pattern: str) -> bool:
    return any(ch in pattern for ch in "*?[")
