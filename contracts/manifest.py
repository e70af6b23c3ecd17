"""`agent.toml`: how an agent says how to run it."""

from __future__ import annotations

import shlex
import tomllib
from pathlib import PurePosixPath

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

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
    # Hyperagent mode (docs/hyperagents.md): the agent's own improvement procedure, and the files
    # it consists of (its "meta" part; default: the script the command runs).
    improve: StorableStr | None = None
    meta: list[StorableStr] | None = Field(default=None, validate_default=True)

    @field_validator("improve")
    @classmethod
    def _a_command(cls, command: str | None) -> str | None:
        if command is None:
            return None
        if not command.strip():
            raise ValueError("must be a command line, not blank")
        try:
            shlex.split(command)
        except ValueError as exc:
            raise ValueError(f"is not a valid command line ({exc})") from exc
        return command

    @field_validator("meta")
    @classmethod
    def _meta_paths(cls, paths: list[str] | None, info: ValidationInfo) -> list[str] | None:
        if "improve" not in info.data:
            return paths  # `improve` itself is invalid; its error is the one reported
        command = info.data["improve"]
        if command is None:
            if paths is not None:
                raise ValueError("lists the files of the `improve` command, and there is none")
            return None
        if paths is None:
            script = script_of(command)
            if script is None:
                raise ValueError(
                    f"cannot tell which files the improve command ({command}) runs; list them in `meta`"
                )
            return [script]
        if not paths:
            raise ValueError("must list at least one file or folder")
        return [_relative(path) for path in paths]

    def meta_paths(self) -> list[str]:
        """The files (or folders) of the agent's improvement procedure; none without one."""
        return list(self.meta or [])


def script_of(command: str) -> str | None:
    """The agent-relative file an `improve` command runs: `python -m a.b` -> `a/b.py`,
    `python a/b.py` -> `a/b.py`; None if the command names neither."""
    words = shlex.split(command)
    for index, word in enumerate(words):
        if word == "-m" and index + 1 < len(words):
            return _relative(words[index + 1].replace(".", "/") + ".py")
        if word.endswith(".py") and not word.startswith("/"):
            return _relative(word)
    return None


def _relative(path: str) -> str:
    """A clean path inside the agent's root, or ValueError."""
    pure = PurePosixPath(path)
    if not path.strip() or pure.is_absolute() or ".." in pure.parts or "\\" in path:
        raise ValueError(f"{path!r} is not a relative path inside the agent")
    cleaned = str(pure)
    if cleaned == ".":
        raise ValueError(f"{path!r} names the whole agent, not its improvement procedure")
    return cleaned


def meta_changed(parent: AgentManifest, child: AgentManifest | None, changed: list[str]) -> bool | None:
    """Whether a child changed its parent's improvement procedure: one of the parent's meta files
    (or a file under a meta folder) changed, or the `improve` command or `meta` list did (a child
    whose manifest does not parse is judged by its files alone). None when the parent has no
    improvement procedure: there was no meta part to change."""
    if parent.improve is None:
        return None
    if child is not None and (child.improve, child.meta) != (parent.improve, parent.meta):
        return True
    meta = parent.meta_paths()
    return any(path == m or path.startswith(m.rstrip("/") + "/") for path in changed for m in meta)


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
