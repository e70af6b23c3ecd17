"""Clade's seed agent: a language model that fixes a repository through one `bash` tool."""

__version__ = "0.1.0"
