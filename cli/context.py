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
    # Where the URL and the token came from, as an error about them names it.
    url_option: str = "--url"
    token_option: str = "--token"

    def client(self) -> ApiClient:
        """The API client; a UsageError naming the option when the URL or token cannot be used."""
        return ApiClient(self.url, self.token, url_option=self.url_option, token_option=self.token_option)

    def emit_json(self, data: Any) -> None:
        print(json.dumps(data, indent=2, default=str))


def resolve_token(explicit: str | None, settings: Settings) -> tuple[str | None, str]:
    """--token, else CLADE_ADMIN_TOKEN, else the local data directory's secrets (a local service);
    with where it came from, for an error about it."""
    if explicit:
        return explicit, "--token"
    if settings.admin_token is not None:
        return settings.admin_token.get_secret_value(), "CLADE_ADMIN_TOKEN"
    secrets = settings.data_dir / "secrets.json"
    if secrets.exists():
        return load_or_create_secrets(settings.data_dir)["admin_token"], str(secrets)
    return None, "--token"
