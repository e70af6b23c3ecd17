"""Fixtures of the service tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.service.driver_world import World


@pytest.fixture
def world(tmp_path: Path) -> World:
    """A run driver over SQLite and a git archive with one seed; its jobs go to an in-memory outbox."""
    return World(tmp_path)


@pytest.fixture
def any_world(tmp_path: Path, database_url: str) -> World:
    """`world` on each database (SQLite and PostgreSQL)."""
    return World(tmp_path, database_url)
