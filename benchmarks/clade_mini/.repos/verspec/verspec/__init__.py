"""verspec: semantic versions and version ranges."""

from verspec.ranges import Range, max_satisfying
from verspec.version import Version

__all__ = ["Range", "Version", "max_satisfying"]
