"""The suite's images are built before the tests (scripts/test-images.sh): a fixture that finds
one missing fails at once with the command that builds it, and builds nothing under its timeout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sandbox.images.rootfs import RootfsRecipe
from tests.images import BUILD_COMMAND, ImageMissing, required
from tests.worker.foreign_images import os_image


@pytest.mark.docker
def test_a_missing_test_image_fails_naming_the_build_command(docker_client: Any) -> None:
    recipe = RootfsRecipe(suite="clade-never-built", packages=("python3",))
    tag = f"clade/test-os-{recipe.suite}:{recipe.key()[:12]}"
    assert not docker_client.images.list(name=tag)
    with pytest.raises(ImageMissing, match=tag):
        os_image(docker_client, recipe, build=False)
    with pytest.raises(pytest.fail.Exception) as failed:
        required(docker_client, os_image, recipe)
    assert tag in str(failed.value) and BUILD_COMMAND in str(failed.value)
    # Nothing was built (nor debootstrapped) on the way.
    assert not docker_client.images.list(name=tag)


def test_the_build_step_is_the_one_the_test_command_runs() -> None:
    root = Path(__file__).resolve().parents[1]
    test_command = (root / "scripts" / "test.sh").read_text().splitlines()
    # The images before pytest, in the test command the README gives.
    assert test_command.index(BUILD_COMMAND) < next(
        i for i, line in enumerate(test_command) if line.startswith("python3 -m pytest")
    )
