"""The toolchain image that runs (and grades) polyglot exercises in every language, built offline.

    clade images build --benchmark polyglot

Layers, each cached by a digest of its inputs:
1. Debian trixie (its Go 1.24, Rust 1.85, Java 21 are new enough for the exercises;
   bookworm's are not), debootstrapped with the toolchains, the crates the Rust exercises
   use (Debian's `librust-*-dev`, a directory registry under /usr/share/cargo/registry)
   and the Java test libraries (JUnit 5, AssertJ, org.json);
2. Clade's Python venv, as in the base image (wheels for trixie's Python 3.13);
3. the npm packages the JavaScript exercises' package.json asks for, installed on the host
   with npm, at /node_modules (Node and npm find it from any folder below /); a cargo
   configuration at /.cargo/config.toml that points crates.io at Debian's registry; and
   a Go build cache with the standard packages the exercises use, which the Go test
   command copies to /tmp (Go ships no compiled standard library).

Containers never reach a network: nothing is fetched at test time.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchmarks.polyglot.languages import GO_CACHE, SPECS, LanguageName
from sandbox.base import LABEL_PREFIX, ImageStore
from sandbox.images.build import BaseImageRecipe
from sandbox.images.layers import ImageConfig
from sandbox.images.npm import ensure_npm_tree
from sandbox.images.recipes import LayeredImage
from sandbox.images.rootfs import RootfsRecipe
from sandbox.images.wheels import WheelTarget

Progress = Callable[[str], None]

POLYGLOT_REPOSITORY = "clade/polyglot"
SUITE = "trixie"
_CARGO_CONFIG = """\
# Crates come from Debian's packages; nothing is downloaded.
[source.crates-io]
replace-with = "debian"

[source.debian]
directory = "/usr/share/cargo/registry"

[net]
offline = true
"""


# Standard packages the Go exercises import, compiled once into GO_CACHE: Go ships no
# compiled standard library, and building these again in every grading takes a minute.
GO_WARM_PACKAGES = (
    "bytes", "crypto/rand", "errors", "fmt", "io", "log", "math", "math/rand", "os", "reflect",
    "regexp", "runtime", "slices", "sort", "strconv", "strings", "sync", "testing", "time",
    "unicode", "unicode/utf8",
)  # fmt: skip


def _quiet(_line: str) -> None:
    return None


def _rootfs() -> RootfsRecipe:
    base = RootfsRecipe()
    packages = {package for spec in SPECS.values() for package in spec.debian_packages}
    # Libraries (the crates above all) go in by apt after debootstrap, whose resolver cannot
    # follow their virtual packages.
    libraries = sorted(p for p in packages if p.startswith("lib") and p.endswith("-dev"))
    return RootfsRecipe(
        suite=SUITE,
        packages=(*base.packages, *sorted(packages.difference(libraries))),
        apt_packages=tuple(libraries),
    )


@dataclass(frozen=True)
class PolyglotImageRecipe:
    """All inputs of the toolchain image; its tag is a hash of this."""

    base: BaseImageRecipe = field(
        default_factory=lambda: BaseImageRecipe(
            rootfs=_rootfs(), wheels=WheelTarget(python_version="3.13", glibc_minor=41)
        )
    )
    npm_packages: tuple[str, ...] = tuple(
        sorted({package for spec in SPECS.values() for package in spec.npm_packages})
    )
    cargo_config: str = _CARGO_CONFIG
    go_warm_packages: tuple[str, ...] = GO_WARM_PACKAGES
    layout_version: int = 1

    def key(self) -> str:
        blob = json.dumps(asdict(self), sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()

    def tag(self) -> str:
        return f"{POLYGLOT_REPOSITORY}:{self.key()[:12]}"


def polyglot_image_tag(recipe: PolyglotImageRecipe | None = None) -> str:
    """The tag the toolchain image has once built (computed, the engine is not asked)."""
    return (recipe or PolyglotImageRecipe()).tag()


def image_languages() -> list[LanguageName]:
    return [spec.name for spec in SPECS.values()]


def polyglot_layers(recipe: PolyglotImageRecipe | None = None) -> LayeredImage:
    """The toolchain image as a backend builds it: the files and commands over its base image."""
    recipe = recipe or PolyglotImageRecipe()
    base_config = recipe.base.config()
    config = ImageConfig(
        env=base_config.env,
        user=base_config.user,
        workdir=base_config.workdir,
        labels={
            # Not "base": the venv's Python is trixie's, which `ensure_task_image` must probe.
            f"{LABEL_PREFIX}.image": "polyglot",
            f"{LABEL_PREFIX}.inputs": recipe.key(),
            f"{LABEL_PREFIX}.venv": base_config.labels[f"{LABEL_PREFIX}.venv"],
        },
    )

    def files(scratch: Path, cache: Path, progress: Progress) -> list[tuple[Path, str]]:
        tree = ensure_npm_tree(recipe.npm_packages, cache, progress=progress)
        cargo = scratch / ".cargo"
        cargo.mkdir()
        (cargo / "config.toml").write_text(recipe.cargo_config)
        warm = scratch / "go-warm"
        warm.mkdir()
        (warm / "go.mod").write_text("module warm\n\ngo 1.18\n")
        imports = "".join(f'import _ "{package}"\n' for package in recipe.go_warm_packages)
        (warm / "warm_test.go").write_text(f"package warm\n\n{imports}")
        return [(tree / "node_modules", "/node_modules"), (cargo, "/.cargo"), (warm, "/tmp/go-warm")]

    go_env = " ".join(f"{key}={value}" for key, value in SPECS["go"].env.items() if key != "GOCACHE")
    return LayeredImage(
        tag=recipe.tag(),
        base=recipe.base,
        files=files,
        commands=(
            ("ln", "-sf", "/node_modules/npm/bin/npm-cli.js", "/usr/local/bin/npm"),
            ("ln", "-sf", "/node_modules/npm/bin/npx-cli.js", "/usr/local/bin/npx"),
            (
                "sh",
                "-c",
                f"cd /tmp/go-warm && env {go_env} HOME=/tmp GOCACHE={GO_CACHE} go test ./... "
                "&& rm -rf /tmp/go-warm /tmp/go",
            ),
            ("chmod", "-R", "a+rX", "/node_modules", "/.cargo", GO_CACHE),
        ),
        config=config,
    )


def ensure_polyglot_image(
    images: ImageStore, *, progress: Progress = _quiet, recipe: PolyglotImageRecipe | None = None
) -> str:
    """Tag of the toolchain image, built by `images` on first use (from the cached layers when
    present)."""
    return images.build(polyglot_layers(recipe), progress=progress)
