"""Seconds to grade one polyglot task per language (median), and to build the toolchain image.

Grading: each task of each language is graded with its gold patch `--runs` times (a
fresh sandbox and build each time, as in a run); the median and the slowest are reported
per language. The default exercises are the test fixtures (one small exercise per
language); `--root` points at a real checkout (e.g. Aider's polyglot-benchmark) and
`--exercises` picks some.

Build (`--build cache|nothing`): removes the toolchain image and the two images under it
(clade/base and clade/os of its recipe; no other image is touched) and builds again:
`cache` from the cached OS tarball, wheels and npm tree; `nothing` with an empty cache
folder too, so debootstrap, apt, pip and npm all run.

    python perf/polyglot_grading.py [--runs 3] [--root DIR] [--languages go,rust] [--build cache]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from docker.errors import ImageNotFound

from benchmarks.polyglot import FIXTURES_DIR, Polyglot
from benchmarks.polyglot.image import PolyglotImageRecipe, ensure_polyglot_image
from sandbox.docker_backend import connect
from sandbox.docker_images import DockerImages
from sandbox.images.build import OS_REPOSITORY, ensure_base_image
from sandbox.registry import get_backend

TOOLCHAIN_FIXTURES = Path(__file__).resolve().parents[1] / "tests/benchmarks/polyglot/toolchains"
OWNER = "perf-polyglot-grading"


def build(mode: str, cache_dir: Path | None) -> float:
    """Remove the toolchain image's own layers and build it again; the seconds it took."""
    client = connect()
    recipe = PolyglotImageRecipe()
    base = f"clade/base:{recipe.base.key()[:12]}"
    os_layer = f"{OS_REPOSITORY}:{recipe.base.rootfs.key()[:12]}"
    for tag in (recipe.tag(), base, os_layer):
        with contextlib.suppress(ImageNotFound):  # already gone
            client.images.remove(tag)
    with tempfile.TemporaryDirectory(prefix="clade-perf-cache-") as empty:
        cache = Path(empty) if mode == "nothing" else cache_dir
        began = time.perf_counter()
        ensure_polyglot_image(
            DockerImages(client, cache_dir=cache), progress=lambda line: print(f"  {line}"[:160])
        )
        return time.perf_counter() - began


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="gradings of each task")
    parser.add_argument("--root", type=Path, help="exercises in the Aider layout (default: test fixtures)")
    parser.add_argument("--languages", help="comma-separated (default: all under the root)")
    parser.add_argument("--exercises", help="comma-separated names (default: all)")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--build", choices=["cache", "nothing"], help="time a rebuild of the image first")
    parser.add_argument("--cache-dir", type=Path, help="image build cache (default ~/.cache/clade/images)")
    parser.add_argument("--image", help="grade in this toolchain image (default: built from the recipe)")
    args = parser.parse_args()

    if args.build:
        seconds = build(args.build, args.cache_dir)
        print(f"toolchain image built from {args.build}: {seconds:.0f} s")
    client = connect()
    image = args.image or ensure_polyglot_image(DockerImages(client, cache_dir=args.cache_dir))
    base = ensure_base_image(client, args.cache_dir)
    options: dict[str, object] = {"root": args.root or TOOLCHAIN_FIXTURES, "image": image}
    if args.languages:
        options["languages"] = args.languages.split(",")
    if args.exercises:
        options["exercises"] = args.exercises.split(",")
    benchmarks = [Polyglot(**options)]
    if args.root is None and (args.languages is None or "python" in args.languages.split(",")):
        benchmarks.append(Polyglot(root=FIXTURES_DIR, exercises=["tide-table"]))
    backend = get_backend("docker", owner=OWNER)
    backend.remove_orphans(OWNER)
    print(f"image {image}; {args.runs} gradings of each task with its gold patch")
    print(f"{'language':<12}{'tasks':>6}{'median s':>10}{'max s':>8}{'failed':>8}")
    failed_any = False
    for benchmark in benchmarks:
        for language in benchmark.languages:
            tasks = [task for task in benchmark.tasks() if benchmark.exercise(task).language == language]
            seconds: list[float] = []
            failed = 0
            for task in tasks:
                for _ in range(args.runs):
                    began = time.perf_counter()
                    report = benchmark.grade(task, task.patch, backend, base, args.timeout)
                    seconds.append(time.perf_counter() - began)
                    failed += not report.resolved
            failed_any |= failed > 0
            median, slowest = statistics.median(seconds), max(seconds)
            print(f"{language:<12}{len(tasks):>6}{median:>10.1f}{slowest:>8.1f}{failed:>8}")
    backend.remove_orphans(OWNER)
    return 1 if failed_any else 0


if __name__ == "__main__":
    sys.exit(main())
