"""Each benchmark's options as a typed model, and `benchmark` of a run configuration as a
union of them discriminated on the benchmark's name.

The same models validate a run configuration (API), a job (worker) and the CLI's
`--option KEY=VALUE`, so an unknown or wrong option is refused before anything runs,
naming the option. The benchmarks themselves (above this layer) take these models.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Self, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

LanguageName = Literal["python", "javascript", "go", "rust", "java", "cpp"]
LANGUAGES: tuple[LanguageName, ...] = get_args(LanguageName)


class Options(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CladeMiniOptions(Options):
    """clade-mini has no options: its tasks ship with Clade."""


# The namespace the SWE-bench harness pulls its published images from.
SWEBENCH_NAMESPACE = "swebench"


class SWEbenchOptions(Options):
    """Which instances to load and how to grade them."""

    dataset: str = Field(
        min_length=1,
        description="a .json/.jsonl/.parquet file, a folder holding <split>.parquet|.jsonl|.json, "
        "or a dataset name (SWE-bench/SWE-bench_Lite, or lite, verified, full, ...)",
    )
    split: str = Field(default="test", min_length=1)
    instance_ids: list[str] | None = Field(
        default=None, min_length=1, description="keep only these instances, in this order"
    )
    subset: str | None = Field(
        default=None, description="keep only this named subset (one of `subsets`, or repo:<owner/name>)"
    )
    subsets: dict[str, list[str]] = Field(
        default_factory=dict, description="named lists of instance ids, e.g. for a run's stages"
    )
    namespace: str | None = Field(
        default=SWEBENCH_NAMESPACE,
        description="swebench 4.x only: the registry namespace in derived image names "
        "(<namespace>/sweb.eval.<arch>.<id>:latest, as the harness names them; null: the harness's "
        "local build names). An image the engine lacks is pulled; one it has, pulled, built or "
        "loaded under that name, is used as it is",
    )
    dataset_timeout_s: float = Field(default=60.0, gt=0, le=3600)
    memory_mb: int = Field(default=4096, ge=256, description="memory of the grading sandbox")
    cpus: float = Field(default=1.0, gt=0, description="CPUs of the grading sandbox")
    pids: int = Field(default=1024, ge=64, description="process limit of the grading sandbox")

    @model_validator(mode="after")
    def _one_selection(self) -> Self:
        if self.instance_ids is not None and self.subset is not None:
            raise ValueError("give either 'instance_ids' or 'subset', not both")
        if "all" in self.subsets:
            raise ValueError("subsets: 'all' is built in (every selected instance)")
        return self


class PolyglotOptions(Options):
    # A folder in the Aider polyglot layout: <root>/<language>/exercises/practice/<exercise>/;
    # None: the Python fixtures shipped with Clade.
    root: Path | None = None
    # Languages to load; default: every language folder under `root`.
    languages: list[LanguageName] | None = Field(default=None, min_length=1)
    # Exercises to load, as "<exercise>" (in any loaded language) or "<language>/<exercise>";
    # default: all of them.
    exercises: list[str] | None = Field(default=None, min_length=1)
    # The languages whose toolchain the sandbox image has, when known; when None, the
    # image is probed for any language not in the base image (Python is).
    available_languages: list[LanguageName] | None = None
    # The image that runs and grades the exercises of every language but Python (which
    # runs in Clade's base image); default: the toolchain image that
    # `clade images build --benchmark polyglot` builds.
    image: str | None = Field(default=None, min_length=1)

    @field_validator("root")
    @classmethod
    def _root_is_a_folder(cls, value: Path | None) -> Path | None:
        if value is None:
            return None
        if not value.is_dir():
            raise ValueError(f"{value} is not a folder")
        return value.resolve()

    @field_validator("languages", "exercises")
    @classmethod
    def _no_duplicates(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(set(value)) != len(value):
            raise ValueError("lists a name twice")
        return value


class FolderOptions(Options):
    """A benchmark folder of the user's own (docs/own-benchmark.md)."""

    # tasks/<id>/task.json, repos/<repo>/...
    path: Path

    @field_validator("path")
    @classmethod
    def _path_is_a_folder(cls, value: Path) -> Path:
        value = value.expanduser()
        if not value.is_dir():
            raise ValueError(f"{value} is not a folder")
        return value.resolve()


class _Benchmark(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CladeMiniConfig(_Benchmark):
    name: Literal["clade-mini"] = "clade-mini"
    options: CladeMiniOptions = Field(default_factory=CladeMiniOptions)


class SWEbenchConfig(_Benchmark):
    name: Literal["swebench"]
    options: SWEbenchOptions


class PolyglotConfig(_Benchmark):
    name: Literal["polyglot"]
    options: PolyglotOptions = Field(default_factory=PolyglotOptions)


class FolderConfig(_Benchmark):
    name: Literal["folder"]
    options: FolderOptions


AnyBenchmarkConfig = CladeMiniConfig | SWEbenchConfig | PolyglotConfig | FolderConfig
BenchmarkConfig = Annotated[AnyBenchmarkConfig, Field(discriminator="name")]
BENCHMARK_CONFIGS: dict[str, type[AnyBenchmarkConfig]] = {
    "clade-mini": CladeMiniConfig,
    "swebench": SWEbenchConfig,
    "polyglot": PolyglotConfig,
    "folder": FolderConfig,
}
DEFAULT_BENCHMARK = "clade-mini"


def validate_benchmark(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """Validate `benchmark` with error paths as a user writes them.

    A discriminated union puts the tag into error locations (`swebench.options.x`);
    here they read `options.x`, and an unknown name is an error at `name`.
    """
    if isinstance(value, Mapping) and "name" not in value:
        value = {"name": DEFAULT_BENCHMARK, **value}
    try:
        return handler(value)
    except ValidationError as exc:
        details: list[InitErrorDetails] = []
        for error in exc.errors():
            loc = error["loc"]
            message = error["msg"]
            tag = str(loc[0]) if loc and loc[0] in BENCHMARK_CONFIGS else None
            if error["type"] == "union_tag_invalid":
                given = (error.get("ctx") or {}).get("tag")
                loc = ("name",)
                message = f"unknown benchmark {given!r}; known: {', '.join(BENCHMARK_CONFIGS)}"
            elif tag is not None:
                loc = loc[1:]
            if (
                tag is not None
                and error["type"] == "extra_forbidden"
                and len(loc) == 2
                and loc[0] == "options"
            ):
                message = f"unknown option of {tag} (known: {_known(tag)})"
            # Without a context, pydantic uses the message as it is (no template formatting).
            details.append(
                InitErrorDetails(
                    type=PydanticCustomError(error["type"], message), loc=loc, input=error.get("input")
                )
            )
        raise ValidationError.from_exception_data(exc.title, details) from None


def _known(name: str) -> str:
    model = BENCHMARK_CONFIGS[name].model_fields["options"].annotation
    assert isinstance(model, type) and issubclass(model, Options)
    return ", ".join(model.model_fields) or "none"


class BenchmarkChoice(BaseModel):
    """A benchmark and its options on their own (as a request body), validated as in a run
    configuration."""

    model_config = ConfigDict(extra="forbid")

    benchmark: BenchmarkConfig

    _check = field_validator("benchmark", mode="wrap")(validate_benchmark)


class BenchmarkOptionError(ValueError):
    """Options given outside a run configuration (the CLI) are wrong. `problems` are
    (path, message) pairs, a path within the options (`instance_ids.0`) or `name` for
    an unknown benchmark; unknown options come first, and `field` is the first path."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        super().__init__("; ".join(f"{field}: {message}" for field, message in problems))
        self.problems = problems
        self.field = problems[0][0]


def benchmark_config(name: str, options: Mapping[str, Any] | None = None) -> AnyBenchmarkConfig:
    """The typed `benchmark` of a run configuration from a name and plain options.

    Raises BenchmarkOptionError naming every wrong option.
    """
    try:
        return BenchmarkChoice.model_validate(
            {"benchmark": {"name": name, "options": dict(options or {})}}
        ).benchmark
    except ValidationError as exc:
        problems: list[tuple[str, str]] = []
        for error in sorted(exc.errors(), key=lambda error: error["type"] != "extra_forbidden"):
            loc = [str(part) for part in error["loc"][1:]]
            if loc[:1] == ["options"]:
                loc = loc[1:]
            problems.append((".".join(loc) or "options", error["msg"]))
        raise BenchmarkOptionError(problems) from exc


__all__ = [
    "BENCHMARK_CONFIGS",
    "LANGUAGES",
    "AnyBenchmarkConfig",
    "BenchmarkChoice",
    "BenchmarkConfig",
    "BenchmarkOptionError",
    "CladeMiniConfig",
    "CladeMiniOptions",
    "FolderConfig",
    "FolderOptions",
    "LanguageName",
    "PolyglotConfig",
    "PolyglotOptions",
    "SWEbenchConfig",
    "SWEbenchOptions",
    "benchmark_config",
    "validate_benchmark",
]
