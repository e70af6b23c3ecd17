"""Packaging beyond pyproject.toml: the wheel also carries the seed agent and the built dashboard.

A checkout runs both from where they live (`seed_agent/`, `web/dist/`); an installed wheel has
no checkout, so `build_py` copies them into the packages that use them:

    seed_agent/  ->  cli/seed_agent/     (found by cli.stack.seed_agent_dir)
    web/dist/    ->  service/api/web/    (found by service.api.routers.dashboard.default_dist)

`web/dist` is built with `web/build.sh` when it is missing (needs Node.js and npm, and this
project's dependencies importable by the Python that runs the build).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
LEFT_OUT = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "*.egg-info")


class BuildPyWithAssets(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install runs from the checkout, which has both where they live
        dist = ROOT / "web" / "dist"
        if not (dist / "index.html").is_file():
            build_dashboard()
        target = Path(self.build_lib)
        for source, dest in (
            (dist, target / "service" / "api" / "web"),
            (ROOT / "seed_agent", target / "cli" / "seed_agent"),
        ):
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(source, dest, ignore=LEFT_OUT)


def build_dashboard() -> None:
    # pip's isolated build environment hides the installed packages through PYTHONPATH; the schema
    # dump in build.sh imports the service, so it runs with this checkout on the path instead.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONHOME")}
    env |= {"PYTHONPATH": str(ROOT), "PYTHON": env.get("PYTHON", sys.executable)}
    result = subprocess.run(["bash", str(ROOT / "web" / "build.sh")], env=env, check=False)
    if result.returncode != 0:
        raise SystemExit(
            "setup.py: the wheel carries the dashboard, and web/build.sh failed to build it "
            f"(exit {result.returncode}); build it first with `bash web/build.sh` (Node.js >= 20.19, npm)"
        )


setup(cmdclass={"build_py": BuildPyWithAssets})
