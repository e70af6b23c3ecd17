"""What every command needs: where the service is, which token to use, how to print."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from cli.client import ApiClient
from contracts.settings import Settings, load_or_create_secrets


@dataclass
class CliContext:
    url: str
    token: str | None
    as_json: bool
    console: Console

    def client(self) -> ApiClient:
        return ApiClient(self.url, self.token)

    def emit_json(self, data: Any) -> None:
        print(json.dumps(data, indent=2, default=str))


def resolve_token(explicit: str | None, settings: Settings) -> str | None:
    """--token, else CLADE_ADMIN_TOKEN, else the local data directory's secrets (a local service)."""
    if explicit:
        return explicit
    if settings.admin_token is not None:
        return settings.admin_token.get_secret_value()
    if (settings.data_dir / "secrets.json").exists():
        return load_or_create_secrets(settings.data_dir)["admin_token"]
    return None
