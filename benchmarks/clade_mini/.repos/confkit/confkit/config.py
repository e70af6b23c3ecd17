"""The Config object: sections of string values, and typed getters."""

from __future__ import annotations

from collections.abc import Mapping

from confkit.errors import ConfigError

_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


class Config:
    """Sections of key/value strings. Section and key names are case-insensitive."""

    def __init__(self, sections: Mapping[str, Mapping[str, str]] | None = None):
        self._sections: dict[str, dict[str, str]] = {}
        for section, values in (sections or {}).items():
            self.add_section(section)
            for key, value in values.items():
                self.set(section, key, value)

    def __repr__(self) -> str:
        return f"Config({self._sections!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Config):
            return NotImplemented
        return self._sections == other._sections

    def as_dict(self) -> dict[str, dict[str, str]]:
        return {section: dict(values) for section, values in self._sections.items()}

    def sections(self) -> list[str]:
        return list(self._sections)

    def keys(self, section: str) -> list[str]:
        return list(self._sections.get(section.lower(), {}))

    def add_section(self, section: str) -> None:
        self._sections.setdefault(section.lower(), {})

    def has(self, section: str, key: str) -> bool:
        return key.lower() in self._sections.get(section.lower(), {})

    def set(self, section: str, key: str, value: str) -> None:
        self._sections.setdefault(section.lower(), {})[key.lower()] = value

    def get(self, section: str, key: str, default: str | None = None) -> str:
        """The value of `[section] key`; `default` when it is missing (a ConfigError without one)."""
        value = self._sections.get(section.lower(), {}).get(key.lower())
        if value is not None:
            return value
        if default is not None:
            return default
        raise ConfigError(f"missing [{section}] {key}")

    def get_int(self, section: str, key: str, default: int | None = None) -> int:
        if default is not None and not self.has(section, key):
            return default
        return int(self.get(section, key))

    def get_bool(self, section: str, key: str, default: bool | None = None) -> bool:
        """True for true/yes/on/1, False for false/no/off/0, in any case; a ConfigError otherwise."""
        if default is not None and not self.has(section, key):
            return default
        return bool(self.get(section, key))

    def get_list(self, section: str, key: str, default: list[str] | None = None) -> list[str]:
        """A comma-separated value as a list, without blanks: "a, b,," -> ["a", "b"]."""
        if default is not None and not self.has(section, key):
            return list(default)
        return [item.strip() for item in self.get(section, key).split(",") if item.strip()]
