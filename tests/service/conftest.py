"""Fixtures of the service tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.service.driver_world import World


@pytest.fixture
def world(tmp_path: Path) -> World:
    """A run driver over SQLite and a git archive with one seed; its jobs go to an in-memory outbox."""
    return World(tmp_path)
