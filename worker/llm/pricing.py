"""Price table: model name -> USD per million prompt and completion tokens.

Patterns are exact names or shell globs (`gpt-4o*`, `*/llama3*`); an exact
name wins, then the longest pattern, so `gpt-4o-mini*` beats `gpt-4o*`.
A model with no price costs 0 and is flagged, never an error: a run on a
local model must not stop because nobody priced it.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from pydantic import BaseModel, ConfigDict, Field

from worker.llm.config_files import load_model_file

PRICE_TABLE_VERSION = 1
PER_MILLION = 1_000_000


class ModelPrice(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt: float = Field(ge=0, description="USD per million prompt tokens")
    completion: float = Field(ge=0, description="USD per million completion tokens")


# Indicative list prices (USD / 1M tokens) at the time of writing; deployments
# should point `price_table_path` at their own table. The scripted model has a
# made-up nonzero price so that demos show costs moving.
DEFAULT_PRICES: Mapping[str, ModelPrice] = MappingProxyType(
    {
        "scripted*": ModelPrice(prompt=1.0, completion=2.0),
        "gpt-4o*": ModelPrice(prompt=2.5, completion=10.0),
        "gpt-4o-mini*": ModelPrice(prompt=0.15, completion=0.6),
        "gpt-4.1*": ModelPrice(prompt=2.0, completion=8.0),
        "gpt-4.1-mini*": ModelPrice(prompt=0.4, completion=1.6),
        "gpt-4.1-nano*": ModelPrice(prompt=0.1, completion=0.4),
        "gpt-5*": ModelPrice(prompt=1.25, completion=10.0),
        "gpt-5-mini*": ModelPrice(prompt=0.25, completion=2.0),
        "gpt-5-nano*": ModelPrice(prompt=0.05, completion=0.4),
        "o3*": ModelPrice(prompt=2.0, completion=8.0),
        "o3-mini*": ModelPrice(prompt=1.1, completion=4.4),
        "o4-mini*": ModelPrice(prompt=1.1, completion=4.4),
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
    def __init__(self, prices: Mapping[str, ModelPrice]) -> None:
        self._exact = {k: v for k, v in prices.items() if not _is_glob(k)}
        # Longest pattern first: the most specific glob wins.
        self._globs = sorted(((k, v) for k, v in prices.items() if _is_glob(k)), key=lambda kv: -len(kv[0]))

    @classmethod
    def default(cls) -> PriceTable:
        return cls(DEFAULT_PRICES)

    def price(self, model: str) -> ModelPrice | None:
        if model in self._exact:
            return self._exact[model]
        for pattern, price in self._globs:
            if fnmatch.fnmatchcase(model, pattern):
                return price
        return None

    def cost(self, model: str, prompt_tokens: int, completion_tokens: int) -> tuple[float, bool]:
        """(USD, whether the model had a price); an unpriced model costs 0."""
        price = self.price(model)
        if price is None:
            return 0.0, False
        usd = (prompt_tokens * price.prompt + completion_tokens * price.completion) / PER_MILLION
        return usd, True


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
