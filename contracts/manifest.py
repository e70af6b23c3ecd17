"""`agent.toml`: how an agent says how to run it."""

from __future__ import annotations

import tomllib

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from contracts.errors import InvalidAgentError
from contracts.text import StorableStr

MANIFEST_FILE = "agent.toml"


class AgentManifest(BaseModel):
    model_config = ConfigDict(extra="allow")

    solve: StorableStr = Field(min_length=1)
    name: StorableStr | None = Field(default=None, max_length=200)  # as long as an agent's name may be
    description: StorableStr | None = None
    requirements: list[StorableStr] = Field(default_factory=list)
    # Optional commands run when a child is validated (from the agent's root, no model).
    check: StorableStr | None = None  # a quick start-up self-test
    test: StorableStr | None = None  # the agent's own tests


def parse_manifest(text: bytes | None) -> AgentManifest:
    """Parse `agent.toml`; a missing or bad manifest is an InvalidAgentError naming the field."""
    if text is None:
        raise InvalidAgentError(f"{MANIFEST_FILE} is missing at the agent's root")
    try:
        data = tomllib.loads(text.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidAgentError(f"{MANIFEST_FILE} is not valid TOML: {exc}") from exc
    try:
        return AgentManifest.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "(root)"
        raise InvalidAgentError(f"{MANIFEST_FILE}: {field}: {first['msg']}") from exc
