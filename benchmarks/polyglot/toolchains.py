"""Does the image that runs and grades a language's exercises have its toolchain? Asked on a
worker (the service never talks to a sandbox engine), once per image, with `command -v` in a
sandbox of that image; or answered by the run's `available_languages` option."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence

from benchmarks.base import BenchmarkError
from benchmarks.polyglot.image import polyglot_image_tag
from benchmarks.polyglot.languages import BASE_IMAGE_LANGUAGES, SPECS, LanguageName
from sandbox.base import LABEL_PREFIX, SandboxBackend, SandboxError, SandboxSpec

# Commands -> the ones the image has.
ToolchainProbe = Callable[[Sequence[str]], set[str]]

_PROBE_SCRIPT = 'for tool in "$@"; do command -v "$tool" >/dev/null 2>&1 && echo "$tool"; done; exit 0'
_ALL_TOOLS = tuple(sorted({tool for spec in SPECS.values() for tool in spec.tools}))


class ToolchainMissing(BenchmarkError):
    """The benchmark was asked for a language the sandbox image cannot run."""


def image_probe(backend: SandboxBackend, image: str, timeout_s: float = 60.0) -> ToolchainProbe:
    """A probe that starts one sandbox from `image` per call and closes it after."""

    def probe(tools: Sequence[str]) -> set[str]:
        spec = SandboxSpec(image=image, workdir="/tmp", labels={f"{LABEL_PREFIX}.purpose": "toolchain-probe"})
        sandbox = backend.start(spec)
        try:
            result = sandbox.exec(["sh", "-c", _PROBE_SCRIPT, "probe", *tools], timeout_s=timeout_s)
        finally:
            sandbox.close()
        if result.exit_code != 0 or result.timed_out:
            raise SandboxError(f"the toolchain probe failed in {image}: {result.stderr.strip()[-500:]}")
        return set(result.stdout.split()) & set(tools)

    return probe


class ImageToolchains:
    """What each toolchain image has, asked of the worker's backend once per image: whether
    the image is there at all (it is built, never pulled), then which of every language's
    tools it has (one probe for them all). A failed look is asked again next time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._found: dict[str, set[str]] = {}

    def probe(self, backend: SandboxBackend, image: str) -> ToolchainProbe:
        def probe(tools: Sequence[str]) -> set[str]:
            with self._lock:
                if image not in self._found:
                    require_image(backend, image)
                    self._found[image] = image_probe(backend, image)(_ALL_TOOLS)
                return self._found[image] & set(tools)

        return probe


def require_image(backend: SandboxBackend, image: str) -> None:
    """Raise `ToolchainImageMissing` unless the backend's engine has `image`."""
    if not backend.images.exists(image):
        raise ToolchainImageMissing(image)


class ToolchainImageMissing(SandboxError):
    """The toolchain image is not on this worker's engine."""

    def __init__(self, image: str) -> None:
        how = (
            "build it there with `clade images build --benchmark polyglot`"
            if image == polyglot_image_tag()
            else "build or load it there (the run's `image` option names it)"
        )
        super().__init__(f"the image {image} is not on this worker's engine; {how}")
        self.image = image


def check_toolchains(
    languages: Iterable[LanguageName],
    *,
    available: Iterable[LanguageName] | None,
    probe: ToolchainProbe,
) -> None:
    """Raise `ToolchainMissing`, naming each language and what it lacks, unless every one
    of `languages` can run: listed in `available` when given, else found by `probe`."""
    wanted = list(languages)
    if available is not None:
        declared = set(available)
        refused = [language for language in wanted if language not in declared]
        if refused:
            raise ToolchainMissing(
                f"polyglot cannot run {_names(refused)} exercises: available_languages lists only "
                f"{_names(sorted(declared)) or 'none'}; remove {_names(refused)} from `languages`"
            )
        return
    to_probe = [language for language in wanted if language not in BASE_IMAGE_LANGUAGES]
    if not to_probe:
        return
    tools = sorted({tool for language in to_probe for tool in SPECS[language].tools})
    try:
        found = probe(tools)
    except ToolchainImageMissing as exc:
        raise ToolchainMissing(f"polyglot cannot run {_names(to_probe)} exercises: {exc}") from exc
    except SandboxError as exc:
        raise ToolchainMissing(
            f"polyglot could not check the sandbox image for {', '.join(tools)} "
            f"(needed by {_names(to_probe)}): {exc}; set `available_languages` to skip the check"
        ) from exc
    problems = []
    for language in to_probe:
        spec = SPECS[language]
        missing = [tool for tool in spec.tools if tool not in found]
        if missing:
            needs = ", ".join(f"`{tool}`" for tool in missing)
            problems.append(f"{language} needs {needs} (its tests run `{spec.display_command([])}`)")
    if problems:
        raise ToolchainMissing(
            "polyglot cannot run these languages: the sandbox image lacks their toolchain: "
            + "; ".join(problems)
            + ". Use an image that has it, or remove them from the `languages` option."
        )


def _names(languages: Iterable[str]) -> str:
    return ", ".join(languages)
