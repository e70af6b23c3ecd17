"""The SWE-bench Pro fixture set: three small repositories (Python, Go, JavaScript), their rows,
run scripts and parsers in the published layout, and instance images built offline.

  fixtures/instances/<name>/base/    the repository at its base commit
  fixtures/instances/<name>/fix/     the files the fix's commit changes (code and tests)
  fixtures/instances/<name>/row.json the row's own fields (statement, tests, language)
  fixtures/run_scripts/<instance_id>/run_script.sh, parser.py   as SWE-bench Pro lays them out

`repositories` makes each repository a git work tree at its base commit whose history also
holds the fix's commit on a branch, as Pro's images do (their `before_repo_set_cmd` checks
the graded test files out of that commit). The gold patch and the test patch are the fix's
diff, split into code and test files. `build_images` commits each work tree at /app onto the
Polyglot toolchain image (Go, Node and Python; built by scripts/test-images.sh), network none.
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
from sandbox.base import BACKEND_LABEL, OWNER_LABEL, ROLE_LABEL
from sandbox.images.layers import BUILD_ROLE

FIXTURES = Path(__file__).parent / "fixtures"
INSTANCES = FIXTURES / "instances"
RUN_SCRIPTS = FIXTURES / "run_scripts"
NAMES = ("pyclip", "gosum", "jsslug")
IMAGE_REPOSITORY = "clade/swebench-pro-fixture"
TEST_DIRS = {"pyclip": "tests", "gosum": "", "jsslug": "test"}
_BUILD_LABELS = {OWNER_LABEL: "clade-images", ROLE_LABEL: BUILD_ROLE, BACKEND_LABEL: "docker"}
_GIT_ID = ["-c", "user.name=fixture", "-c", "user.email=fixture@example.invalid"]


@dataclass(frozen=True)
class Repo:
    path: Path
    base: str
    fix: str
    gold: str
    tests: str


def is_fixture_test(name: str, path: str) -> bool:
    return path.endswith("_test.go") if name == "gosum" else path.startswith(f"{TEST_DIRS[name]}/")


def repositories(dest: Path) -> dict[str, Repo]:
    """Each repository under `dest`, at its base commit, the fix's commit on branch `fix`."""
    built: dict[str, Repo] = {}
    for name in NAMES:
        repo = dest / name
        shutil.copytree(INSTANCES / name / "base", repo)
        git_ok(repo, "init", "--quiet", "--initial-branch=main")
        git_ok(repo, "add", "--all")
        git_ok(repo, *_GIT_ID, "commit", "--quiet", "--no-verify", "--message", "base")
        base = git_ok(repo, "rev-parse", "HEAD").strip()
        git_ok(repo, "checkout", "--quiet", "-b", "fix")
        shutil.copytree(INSTANCES / name / "fix", repo, dirs_exist_ok=True)
        git_ok(repo, "add", "--all")
        git_ok(repo, *_GIT_ID, "commit", "--quiet", "--no-verify", "--message", "fix")
        fix = git_ok(repo, "rev-parse", "HEAD").strip()
        git_ok(repo, "checkout", "--quiet", "main")
        changed = git_ok(repo, "diff", "--name-only", base, fix).split()
        test_files = [path for path in changed if is_fixture_test(name, path)]
        code_files = [path for path in changed if path not in test_files]
        gold = git_ok(repo, "diff", base, fix, "--", *code_files)
        tests = git_ok(repo, "diff", base, fix, "--", *test_files)
        built[name] = Repo(path=repo, base=base, fix=fix, gold=gold, tests=tests)
    return built


def rows(repos: dict[str, Repo], images: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The rows as the published dataset holds them; `images`: name -> built image."""
    found = []
    for name in NAMES:
        repo = repos[name]
        row = json.loads((INSTANCES / name / "row.json").read_text())
        test_files = [
            path
            for path in git_ok(repo.path, "diff", "--name-only", repo.base, repo.fix).split()
            if is_fixture_test(name, path)
        ]
        tag = (images or {}).get(name, f"{IMAGE_REPOSITORY}:{name}-unbuilt").rpartition(":")[2]
        row |= {
            "base_commit": repo.base,
            "patch": repo.gold,
            "test_patch": repo.tests,
            # The published rows' shape: Pro's evaluator runs only the last line.
            "before_repo_set_cmd": "\n".join(
                [
                    f"git reset --hard {repo.base}",
                    "git clean -fd ",
                    f"git checkout {repo.base} ",
                    f"git checkout {repo.fix} -- {' '.join(test_files)}",
                ]
            ),
            "dockerhub_tag": tag,
        }
        found.append(row)
    return found


def write_jsonl(found: list[dict[str, Any]], path: Path) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in found))
    return path


def build_images(client: Any, base_image: str, repos: dict[str, Repo]) -> dict[str, str]:
    """An instance image per repository: `base_image` with the work tree at /app (no network).
    Tagged by a hash of the base image and the commits; reused when present."""
    base_id = client.images.get(base_image).id
    images = {}
    for name, repo in repos.items():
        digest = hashlib.sha256(f"{base_id}:{repo.base}:{repo.fix}".encode()).hexdigest()[:12]
        tag = f"{IMAGE_REPOSITORY}:{name}-{digest}"
        if not client.images.list(name=tag):
            _commit_image(client, base_image, repo.path, tag)
        images[name] = tag
    return images


def _commit_image(client: Any, base_image: str, repo: Path, tag: str) -> None:
    container = client.containers.create(
        base_image, command=["true"], user="0:0", network_mode="none", labels=_BUILD_LABELS
    )
    try:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            archive.add(repo, arcname="app", filter=_root_owned)
        if not container.put_archive("/", buffer.getvalue()):
            raise RuntimeError(f"could not copy {repo} into the build container")
        repository, _, version = tag.rpartition(":")
        container.commit(
            repository=repository,
            tag=version,
            changes=["WORKDIR /app", 'LABEL dev.clade.image="swebench-pro-fixture"'],
        )
    finally:
        container.remove(force=True)


def _root_owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info
