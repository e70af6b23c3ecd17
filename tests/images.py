"""The images the suite needs: built before the tests start, never inside a test.

`scripts/test-images.sh` builds them (the test command, `scripts/test.sh`, runs it first):

    python3 -m cli.main images build --benchmark polyglot   Clade's base image, the agent
                                                            runtime, the Polyglot toolchains
    python3 -m tests.images                                  the test-only task images
                                                            (tests/worker/foreign_images.py)

A first build on a fresh machine takes many minutes, more than a test's timeout; so a fixture
that finds its image missing fails at once, naming that command, and builds nothing. Every image
is tagged by a hash of its inputs, so the build step finds them all in about a second.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from contracts.settings import Settings
from sandbox.base import ImageStore

if TYPE_CHECKING:
    from benchmarks.harbor import HarborBenchmark

BUILD_COMMAND = "bash scripts/test-images.sh"
NO_LIBC_WORK = Path(tempfile.gettempdir()) / "clade-test-images" / "busybox"


class ImageMissing(LookupError):
    """An image the suite needs is not built; the message names it."""


def missing(what: str) -> NoReturn:
    """Fail the test at once: `what` is not built, and here is the command that builds it."""
    pytest.fail(
        f"{what} is not built; build the suite's images before the tests with `{BUILD_COMMAND}`"
        " (the test command, scripts/test.sh, runs it; a first build takes many minutes)",
        pytrace=False,
    )


def required_base_image() -> str:
    """The base image's tag, once `clade images build` made it and its agent runtime."""
    from sandbox.docker_health import engine_state

    images = engine_state(Settings().image_cache_dir, timeout_s=30).images
    if not images.base_present:
        missing(f"the base image {images.base_tag}")
    if not images.runtime_present:
        missing(f"the agent runtime of {images.base_tag} (in {images.runtime})")
    return images.base_tag


def required_polyglot_image(images: ImageStore) -> str:
    """The toolchain image's tag, once `clade images build --benchmark polyglot` made it."""
    from benchmarks.polyglot.image import polyglot_image_tag

    tag = polyglot_image_tag()
    if not images.exists(tag):
        missing(f"the Polyglot toolchain image {tag}")
    return tag


def required(client: Any, build: Any, *args: Any) -> Any:
    """What `build(client, *args, build=False)` finds, or the test fails naming the command."""
    try:
        return build(client, *args, build=False)
    except ImageMissing as exc:
        missing(str(exc))


# An agent no one here wrote (examples/mini-swe-agent): its requirements' layer and runtime are
# what a worker builds on first use; built here so that the real-model tier's run does not.
MINI_SWE_AGENT = Path(__file__).resolve().parents[1] / "examples" / "mini-swe-agent"


def build_test_images(progress: Any = print) -> None:
    """Every test-only task image, built once (each reused when present)."""
    import docker

    from tests.worker.foreign_images import foreign_images, no_libc_image

    client = docker.from_env()
    try:
        for name, tag in foreign_images(client, progress).items():
            progress(f"test image {name} ready: {tag}")
        progress(f"test image no-libc ready: {no_libc_image(client, NO_LIBC_WORK)}")
    finally:
        client.close()
    progress(f"mini-swe-agent's image ready: {agent_image(MINI_SWE_AGENT, progress)}")
    for task in harbor_fixture(build=True).tasks():
        progress(f"Harbor fixture image ready: {task.image}")


# Harbor's fixture tasks (tests/benchmarks/harbor_fixture) start FROM python:3.12-slim, which no
# machine here can pull: Clade's base image stands in for it (the `base_images` option).
HARBOR_FIXTURE = Path(__file__).resolve().parent / "benchmarks" / "harbor_fixture"
HARBOR_FROM = "python:3.12-slim"


def harbor_fixture(*, build: bool = False) -> HarborBenchmark:
    """The fixture's Harbor benchmark over the local Docker engine, its images built (`build`)
    or required (the test fails naming the build command when one is missing)."""
    from benchmarks.harbor import HarborBenchmark, HarborOptions
    from cli.sandboxes import local_backend

    images = local_backend("clade-test-images").images
    base = images.base() if build else required_base_image()
    benchmark = HarborBenchmark(HarborOptions(path=HARBOR_FIXTURE, base_images={HARBOR_FROM: base}))
    for task in benchmark.tasks():
        if build:
            benchmark.build_environment(task, images, progress=lambda _line: None)
        elif task.image is None or not images.exists(task.image):
            missing(f"the Harbor fixture image {task.image}")
    return benchmark


def agent_image(folder: Path, progress: Any = None) -> str:
    """The image with the requirements of the agent in `folder`, and its runtime: built, or found."""
    import tomllib

    from cli.sandboxes import local_backend

    requirements = tomllib.loads((folder / "agent.toml").read_text()).get("requirements", [])
    images = local_backend("clade-test-images").images
    tag = images.for_agent(requirements, progress=progress)
    images.runtime(tag, progress=progress)
    return tag


if __name__ == "__main__":
    build_test_images(lambda line: print(line, file=sys.stderr, flush=True))
