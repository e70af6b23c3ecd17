"""The LLM gateway of a worker: metering, budgets and records of every model call a sandbox makes.

For one sandbox the worker does:

    upstream = make_upstream(UpstreamConfig(base_url=..., api_key=...))
    with LLMGateway(GatewayConfig(socket_path=..., budget=Budget(...)), upstream,
                    load_price_table(path), secrets=[api_key]) as gateway:
        ...  # run the container with the socket's folder and forwarder_script_path() mounted
    gateway.calls, gateway.usage  # -> the service
"""

from worker.llm.budget import Budget
from worker.llm.config_files import ConfigFileError
from worker.llm.forwarder import script_path as forwarder_script_path
from worker.llm.gateway import GatewayConfig, GatewayError, LLMGateway
from worker.llm.pricing import ModelPrice, PriceTable, load_price_table
from worker.llm.records import LLMCall, UsageSummary
from worker.llm.upstream import (
    OpenAICompatibleUpstream,
    Upstream,
    UpstreamConfig,
    UpstreamError,
    make_upstream,
)

__all__ = [
    "Budget",
    "ConfigFileError",
    "GatewayConfig",
    "GatewayError",
    "LLMCall",
    "LLMGateway",
    "ModelPrice",
    "OpenAICompatibleUpstream",
    "PriceTable",
    "Upstream",
    "UpstreamConfig",
    "UpstreamError",
    "UsageSummary",
    "forwarder_script_path",
    "load_price_table",
    "make_upstream",
]
