"""The installed `swebench` package, behind one small adapter.

Two instance formats, each graded by the swebench major version that defines it:

- swebench 5.x: an instance carries its own `image`, `eval_script`, `log_parser` (a
  name in `PARSER_REGISTRY`) and `eval_type`; `swebench.harness.utils.make_test_spec`
  turns it into a test spec.
- swebench 4.x: an instance has none of those; the eval script and the log parser come
  from the harness's tables, keyed by `repo` and `version` (`MAP_REPO_VERSION_TO_SPECS`,
  `MAP_REPO_TO_PARSER`). The spec is built from the functions `make_test_spec` calls,
  minus the environment script, which for some repos downloads requirement files and
  is never needed to grade.

Anything else (another major version, a format the installed version cannot grade,
binary test assets) is refused with a `HarnessUnavailable` or `UnsupportedInstance`
that says what to install or change. The swebench modules are imported by name: they
are untyped and slow to import (seconds), so only grading and loading pay for them.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from benchmarks.base import BenchmarkError

InstanceFormat = Literal["swebench-5", "swebench-4"]
SUPPORTED = "swebench>=4.0.3,<6"
V5_FIELDS = ("image", "eval_script", "log_parser", "eval_type")
REPO_DIRECTORY = "/testbed"
ENV_NAME = "testbed"
# Where the harness's images keep the testbed env that their eval scripts activate.
TESTBED_BIN = f"/opt/miniconda3/envs/{ENV_NAME}/bin"


class HarnessUnavailable(BenchmarkError, ImportError):
    """The swebench package is missing or of a version Clade does not support."""


class UnsupportedInstance(BenchmarkError, ValueError):
    """An instance is in a format the installed swebench cannot grade."""


def instance_format(instance: Mapping[str, Any]) -> InstanceFormat:
    """5.x instances name their eval script and log parser; 4.x ones leave both to the harness."""
    return "swebench-5" if any(field in instance for field in ("eval_script", "log_parser")) else "swebench-4"


@dataclass(frozen=True)
class Harness:
    """One installed swebench version: builds test specs and reads test logs its own way."""

    version: str

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    @property
    def instance_format(self) -> InstanceFormat:
        return "swebench-5" if self.major == 5 else "swebench-4"

    def check(self, instance: Mapping[str, Any]) -> None:
        """Raise `UnsupportedInstance` unless this version can grade `instance`."""
        instance_id = instance.get("instance_id", "?")
        found = instance_format(instance)
        if found != self.instance_format:
            if found == "swebench-5":
                raise UnsupportedInstance(
                    f"{instance_id}: a swebench 5.x instance (it has eval_script/log_parser); the installed "
                    f"swebench {self.version} derives the test spec from repo and version instead. "
                    "Install swebench>=5,<6 to grade it."
                )
            missing = ", ".join(field for field in V5_FIELDS if field not in instance)
            raise UnsupportedInstance(
                f"{instance_id}: no {missing}: a swebench 4.x instance, whose test spec comes from the "
                f"harness's repo/version tables; the installed swebench {self.version} takes it from the "
                "instance. Use a 5.x dataset, or install swebench>=4.0.3,<5 to grade it."
            )
        if instance.get("image_assets"):
            raise UnsupportedInstance(
                f"{instance_id}: needs image_assets (binary test files fetched by URL when grading); "
                "grading runs without network, so these instances are not supported"
            )
        if found == "swebench-5":
            self._check_v5(instance_id, instance)
        else:
            self._check_v4(instance_id, instance)

    def _check_v5(self, instance_id: str, instance: Mapping[str, Any]) -> None:
        missing = [field for field in V5_FIELDS if not instance.get(field)]
        if missing:
            raise UnsupportedInstance(f"{instance_id}: a swebench 5.x instance needs {', '.join(missing)}")
        parsers = _module("swebench.harness.log_parsers").PARSER_REGISTRY
        if instance["log_parser"] not in parsers:
            raise UnsupportedInstance(
                f"{instance_id}: log_parser {instance['log_parser']!r} is not in swebench "
                f"{self.version}'s PARSER_REGISTRY"
            )
        eval_types = {kind.value for kind in _module("swebench.harness.constants").EvalType}
        if instance["eval_type"] not in eval_types:
            raise UnsupportedInstance(
                f"{instance_id}: eval_type {instance['eval_type']!r} is not one of {sorted(eval_types)}"
            )

    def _check_v4(self, instance_id: str, instance: Mapping[str, Any]) -> None:
        constants = _module("swebench.harness.constants")
        repo, version = instance.get("repo"), instance.get("version")
        if version not in constants.MAP_REPO_VERSION_TO_SPECS.get(repo, {}):
            raise UnsupportedInstance(
                f"{instance_id}: swebench {self.version} has no test spec for repo {repo!r} "
                f"version {version!r} (MAP_REPO_VERSION_TO_SPECS)"
            )
        if repo not in _module("swebench.harness.log_parsers").MAP_REPO_TO_PARSER:
            raise UnsupportedInstance(
                f"{instance_id}: swebench {self.version} has no log parser for {repo!r}"
            )

    def test_spec(self, instance: Mapping[str, Any], namespace: str | None = None) -> Any:
        """The swebench `TestSpec` of `instance` (checked with `check` first)."""
        self.check(instance)
        if self.major == 5:
            return _module("swebench.harness.utils").make_test_spec(dict(instance))
        constants = _module("swebench.harness.constants")
        specs = constants.MAP_REPO_VERSION_TO_SPECS[instance["repo"]][instance["version"]]
        scripts = _module("swebench.harness.test_spec.create_scripts")
        eval_script_list = scripts.make_eval_script_list(
            dict(instance), specs, ENV_NAME, REPO_DIRECTORY, instance["base_commit"], instance["test_patch"]
        )
        return _module("swebench.harness.test_spec.test_spec").TestSpec(
            instance_id=instance["instance_id"],
            repo=instance["repo"],
            version=instance["version"],
            repo_script_list=[],
            eval_script_list=eval_script_list,
            env_script_list=[],
            arch="x86_64",
            FAIL_TO_PASS=list(instance["FAIL_TO_PASS"]),
            PASS_TO_PASS=list(instance["PASS_TO_PASS"]),
            language=constants.MAP_REPO_TO_EXT[instance["repo"]],
            docker_specs=specs.get("docker_specs", {}),
            namespace=namespace,
        )

    def image(self, instance: Mapping[str, Any], test_spec: Any) -> str:
        """The instance image: named by a 5.x instance, derived by the 4.x harness otherwise."""
        if instance.get("image"):
            return str(instance["image"])
        return str(test_spec.image if self.major == 5 else test_spec.instance_image_key)

    def status_map(self, test_spec: Any, log_path: Path) -> tuple[dict[str, str], bool]:
        """`get_logs_eval`: each test's status as the instance's log parser reads the log, and
        whether the log holds gradable results at all."""
        statuses, found = _module("swebench.harness.grading").get_logs_eval(test_spec, str(log_path))
        return {str(test): str(status) for test, status in statuses.items()}, bool(found)

    def report(self, test_spec: Any, prediction: Mapping[str, str], log_path: Path) -> dict[str, Any]:
        """`get_eval_report` for one prediction, with per-group test results."""
        reports = _module("swebench.harness.grading").get_eval_report(
            test_spec=test_spec,
            prediction=dict(prediction),
            test_log_path=str(log_path),
            include_tests_status=True,
        )
        report: dict[str, Any] = reports[prediction["instance_id"]]
        return report


@cache
def load_harness() -> Harness:
    """The installed swebench, if its version is supported."""
    try:
        version = importlib.metadata.version("swebench")
    except importlib.metadata.PackageNotFoundError:
        raise HarnessUnavailable(
            f"the swebench benchmark needs the swebench package: pip install '{SUPPORTED}'"
        ) from None
    if not (4, 0, 3) <= _release(version) < (6,):
        raise HarnessUnavailable(f"swebench {version} is installed; Clade supports {SUPPORTED}")
    return Harness(version)


def _release(version: str) -> tuple[int, ...]:
    """(4, 1, 0) for "4.1.0" or "4.1.0rc1": the leading numbers only."""
    numbers = re.match(r"\d+(?:\.\d+)*", version)
    return tuple(int(part) for part in numbers.group(0).split(".")) if numbers else ()


def _module(name: str) -> Any:
    return importlib.import_module(name)
