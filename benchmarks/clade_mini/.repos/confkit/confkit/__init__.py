"""confkit: INI-style configuration files with typed getters and environment overrides."""

from confkit.config import Config
from confkit.env import apply_env
from confkit.errors import ConfigError
from confkit.reader import load, loads
from confkit.writer import dump, dumps

__all__ = ["Config", "ConfigError", "apply_env", "dump", "dumps", "load", "loads"]
