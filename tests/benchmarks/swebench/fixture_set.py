"""A SWE-bench fixture set built here: small repositories, instances in both formats, images.

  fixtures/.repos/<repo>/            each repository's base state (original code)
  fixtures/instances/<name>/         instance.json (ids, tests), statement.md, gold.patch, test.patch

`repositories` turns each repository into a git work tree with two commits (an import,
then the base commit), as SWE-bench images hold them; tinyinv also has a symlink and a
tracked file that its .gitignore matches, which `prepare_repo` must keep. `instance_rows` writes the
instances as a SWE-bench dataset would hold them: swebench 5.x rows carry `image`, an
`eval_script` in the harness's style (reset the test files, apply the test patch, run
pytest -rA between the markers) and `log_parser: parse_log_pytest`; 4.x rows carry
none of those and use a repo/version of the 4.x tables whose parser is pytest's.
`build_images` commits each repository at /testbed onto Clade's base image, offline.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.gitops import git_ok
from benchmarks.swebench.patches import split_files, touched_paths
from sandbox.base import BACKEND_LABEL, OWNER_LABEL, ROLE_LABEL
from sandbox.images.layers import BUILD_ROLE

FIXTURES = Path(__file__).parent / "fixtures"
REPOS = FIXTURES / ".repos"
INSTANCES = FIXTURES / "instances"
LOGS = FIXTURES / "logs"
NAMES = ("tinyinv-1", "tinyinv-2", "wrapkit-1")
REPO_NAMES = ("tinyinv", "wrapkit")
# Files a repository tracks although its .gitignore matches them. Written when building:
# in fixtures/ the same .gitignore would keep them out of Clade's own repository.
TRACKED_BUT_IGNORED = {"tinyinv": {"data/restock.log": "bolt +10\nnut +25\n"}}
# A 4.x table entry whose test command is `pytest -rA` and whose parser is parse_log_pytest.
V4_REPO, V4_VERSION = "pytest-dev/pytest", "8.0"
HEREDOC = "EOF_114329324912"  # the delimiter the harness's own eval scripts use
IMAGE_REPOSITORY = "clade/swebench-fixture"
_CACHES = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".ruff_cache", ".benchmarks")
_BUILD_LABELS = {OWNER_LABEL: "clade-images", ROLE_LABEL: BUILD_ROLE, BACKEND_LABEL: "docker"}


@dataclass(frozen=True)
class Instance:
    name: str
    meta: dict[str, Any]
    statement: str
    gold: str
    tests: str

    @property
    def repo_name(self) -> str:
        return str(self.meta["repo"]).rsplit("/", 1)[-1]


def instances(names: tuple[str, ...] = NAMES) -> list[Instance]:
    found = []
    for name in names:
        folder = INSTANCES / name
        found.append(
            Instance(
                name=name,
                meta=json.loads((folder / "instance.json").read_text()),
                statement=(folder / "statement.md").read_text(),
                gold=(folder / "gold.patch").read_text(),
                tests=(folder / "test.patch").read_text(),
            )
        )
    return found


def repositories(dest: Path, names: tuple[str, ...] = REPO_NAMES) -> dict[str, tuple[Path, str]]:
    """Each repository as a git work tree under `dest`: name -> (path, base commit)."""
    built = {}
    for source in (REPOS / name for name in names):
        repo = dest / source.name
        repo.mkdir(parents=True)
        shutil.copy(source / "README.md", repo / "README.md")
        git_ok(repo, "init", "--quiet", "--initial-branch=main")
        git_ok(repo, "add", "--all")
        git_ok(repo, "commit", "--quiet", "--no-verify", "--message", "import")
        shutil.copytree(source, repo, symlinks=True, dirs_exist_ok=True, ignore=_CACHES)
        for path, text in TRACKED_BUT_IGNORED.get(source.name, {}).items():
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_text(text)
        git_ok(repo, "add", "--all", "--force")
        git_ok(repo, "commit", "--quiet", "--no-verify", "--message", "base")
        built[source.name] = (repo, git_ok(repo, "rev-parse", "HEAD").strip())
    return built


def eval_script(base_commit: str, test_patch: str) -> str:
    """An eval script in the style of the harness's Python ones (set -x traces the markers)."""
    changed = [part.paths[0] for part in split_files(test_patch) if "--- /dev/null" not in part.text]
    tests = " ".join(touched_paths(test_patch))
    reset = f"git checkout {base_commit} {' '.join(changed)}" if changed else ":"
    lines = [
        "#!/bin/bash",
        "set -uxo pipefail",
        "cd /testbed",
        "git config --global --add safe.directory /testbed",
        "git status",
        f"git -c core.fileMode=false diff {base_commit}",
        reset,
        f"git apply -v - <<'{HEREDOC}'\n{test_patch}\n{HEREDOC}",
        ": '>>>>> Start Test Output'",
        f"python -m pytest -rA -p no:cacheprovider {tests}",
        ": '>>>>> End Test Output'",
        reset,
    ]
    return "\n".join(lines) + "\n"


def instance_rows(
    fmt: str, commits: dict[str, str], images: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """Dataset rows ("swebench-5" or "swebench-4"); `images`: repo name -> image (5.x rows)."""
    rows = []
    for instance in instances():
        base = commits[instance.repo_name]
        row: dict[str, Any] = {
            **instance.meta,
            "base_commit": base,
            "environment_setup_commit": base,
            "problem_statement": instance.statement,
            "hints_text": "",
            "patch": instance.gold,
            "test_patch": instance.tests,
            # JSON-encoded, as in the published datasets.
            "FAIL_TO_PASS": json.dumps(instance.meta["FAIL_TO_PASS"]),
            "PASS_TO_PASS": json.dumps(instance.meta["PASS_TO_PASS"]),
        }
        if fmt == "swebench-5":
            row["image"] = (images or {}).get(
                instance.repo_name, f"{IMAGE_REPOSITORY}-{instance.repo_name}:unbuilt"
            )
            row["eval_script"] = eval_script(base, instance.tests)
            row["log_parser"] = "parse_log_pytest"
            row["eval_type"] = "pass_and_fail"
        else:
            row["repo"], row["version"] = V4_REPO, V4_VERSION
        rows.append(row)
    return rows


def write_jsonl(rows: list[dict[str, Any]], path: Path) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def build_images(
    client: Any, base_image: str, repos: dict[str, tuple[Path, str]], names: tuple[str, ...] = NAMES
) -> dict[str, str]:
    """An instance image per repository: `base_image` plus the work tree at /testbed (no network).

    Also tagged under the names the 4.x harness derives for each instance. Reused when present.
    """
    base_id = client.images.get(base_image).id
    images = {}
    for name, (repo, commit) in repos.items():
        tag = f"{IMAGE_REPOSITORY}-{name}:{hashlib.sha256(f'{base_id}:{commit}'.encode()).hexdigest()[:12]}"
        if not client.images.list(name=tag):
            _commit_image(client, base_image, repo, tag)
        images[name] = tag
    for instance in instances(names):
        image = client.images.get(images[instance.repo_name])
        local = f"sweb.eval.x86_64.{instance.meta['instance_id'].lower()}"
        image.tag(local, "latest")
        # The 4.x harness's name in the official namespace (the default `namespace` option).
        image.tag(f"swebench/{local}".replace("__", "_1776_"), "latest")
    return images


def _commit_image(client: Any, base_image: str, repo: Path, tag: str) -> None:
    container = client.containers.create(
        base_image, command=["true"], user="0:0", network_mode="none", labels=_BUILD_LABELS
    )
    try:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            archive.add(repo, arcname="testbed", filter=_root_owned)
        if not container.put_archive("/", buffer.getvalue()):
            raise RuntimeError(f"could not copy {repo} into the build container")
        repository, _, version = tag.rpartition(":")
        container.commit(
            repository=repository,
            tag=version,
            changes=["WORKDIR /testbed", 'LABEL dev.clade.image="swebench-fixture"'],
        )
    finally:
        container.remove(force=True)


def _root_owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info
