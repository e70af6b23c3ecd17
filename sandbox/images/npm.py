"""npm packages for an image, installed on the host with npm so that no container needs a network.

The packages are named by Clade's own image recipes (never by an agent); install scripts
are not run, and the tree is cached by a digest of the package list.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from sandbox.base import SandboxError, SandboxUnavailable

Progress = Callable[[str], None]

# `name@range` or `@scope/name@range`, the range without spaces.
_SPEC = re.compile(r"^(@[a-z0-9][a-z0-9._-]*/)?[a-z0-9][a-z0-9._-]*@[A-Za-z0-9.^~<>=|*+-]+$")


def ensure_npm_tree(packages: Sequence[str], cache_dir: Path, *, progress: Progress) -> Path:
    """A cached folder holding `node_modules/` with `packages` (`name@range`) and their
    dependencies. The caller holds the cache's build lock."""
    for spec in packages:
        if not _SPEC.match(spec):
            raise ValueError(f"not an npm package spec (name@range): {spec!r}")
    key = hashlib.sha256(json.dumps(sorted(packages)).encode()).hexdigest()[:12]
    target = cache_dir / "npm" / key
    if (target / "node_modules").is_dir():
        progress(f"reusing cached npm packages {target}")
        return target
    npm = shutil.which("npm")
    if npm is None:
        raise SandboxUnavailable("installing the npm packages of this image needs `npm` on the host")
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="npm-", dir=target.parent))
    try:
        manifest = {"private": True, "dependencies": dict(spec.rsplit("@", 1) for spec in packages)}
        (work / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
        progress(f"npm install {' '.join(packages)}")
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"],
            cwd=work,
            capture_output=True,
            text=True,
            errors="replace",
            check=False,
            env={**os.environ, "npm_config_update_notifier": "false"},
        )
        if done.returncode != 0:
            raise SandboxError(f"npm install failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
        os.replace(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target
