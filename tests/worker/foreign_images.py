"""Task images that are not Clade's: built offline, cached by tag, reused when present.

  python39   Debian bullseye (python 3.9, glibc 2.31), no Clade venv
  no-python  Clade's OS layer with every python removed
  conda      python39 plus a conda-like testbed: /opt/miniconda3/envs/testbed/bin/python is
             the repository's python; /opt/miniconda3/bin (a base python) is on the image's PATH,
             as in the official SWE-bench images, and the eval script activates the testbed

  no-libc    (`no_libc_image`) a static busybox and nothing else: no C library at all

Every image holds `/etc/clade-image` naming it, so a test can tell where a command ran.
They are built before the tests (`python -m tests.images`, which scripts/test-images.sh runs);
fixtures ask with `build=False` and fail, naming that command, when one is missing.
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sandbox.base import BACKEND_LABEL, OWNER_LABEL, ROLE_LABEL
from sandbox.images.apt_sources import find_mirror
from sandbox.images.build import OS_REPOSITORY, BaseImageRecipe, default_cache_dir
from sandbox.images.layers import BUILD_ROLE
from sandbox.images.locking import build_lock
from sandbox.images.rootfs import RootfsRecipe, ensure_rootfs_tar
from tests.images import ImageMissing

MARKER = "/etc/clade-image"
CONDA = "/opt/miniconda3"
TESTBED_PYTHON = f"{CONDA}/envs/testbed/bin/python"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BULLSEYE = RootfsRecipe(suite="bullseye", packages=("python3", "git", "ca-certificates"))
_BUILD_LABELS = {OWNER_LABEL: "clade-images", ROLE_LABEL: BUILD_ROLE, BACKEND_LABEL: "docker"}


def _noop(_line: str) -> None:
    return None


def _absent(client: Any, tag: str, build: bool) -> bool:
    """Whether `tag` must be built; `ImageMissing` if so and `build` is off (a test's fixture)."""
    if client.images.list(name=tag):
        return False
    if not build:
        raise ImageMissing(f"the test image {tag}")
    return True


def os_image(
    client: Any, recipe: RootfsRecipe, progress: Callable[[str], None] = _noop, *, build: bool = True
) -> str:
    """A debootstrapped Debian of `recipe` imported as an image (the tarball is cached)."""
    tag = f"clade/test-os-{recipe.suite}:{recipe.key()[:12]}"
    if not _absent(client, tag, build):
        return tag
    # The host's apt sources name its own suite; the same archive serves the older one.
    mirror = find_mirror("bookworm").uri
    # Under the cache's build lock, as Clade's own builds: another test process may be making it.
    with build_lock(client, default_cache_dir()):
        tarball = ensure_rootfs_tar(default_cache_dir(), recipe, progress=progress, mirror=mirror)
    repository, _, version = tag.rpartition(":")
    client.api.import_image(
        src=str(tarball), repository=repository, tag=version, changes=[f"ENV PATH={SYSTEM_PATH}"]
    )
    assert client.images.list(name=tag), f"importing {tarball} failed"
    return tag


def derive(
    client: Any, source: str, name: str, commands: list[str], changes: list[str], *, build: bool = True
) -> str:
    """`source` + `commands` run as root (network none) + `changes`; reused when present."""
    key = json.dumps([client.images.get(source).id, commands, changes])
    tag = f"clade/test-{name}:{hashlib.sha256(key.encode()).hexdigest()[:12]}"
    if not _absent(client, tag, build):
        return tag
    container = client.containers.create(
        source, command=["sleep", "infinity"], user="0:0", network_mode="none", labels=_BUILD_LABELS
    )
    try:
        container.start()
        for command in commands:
            done = container.exec_run(["sh", "-c", command], user="0:0")
            assert done.exit_code == 0, f"{command}: {done.output.decode(errors='replace')}"
        container.kill()
        repository, _, version = tag.rpartition(":")
        container.commit(repository=repository, tag=version, changes=changes)
    finally:
        container.remove(force=True)
    return tag


def foreign_images(
    client: Any, progress: Callable[[str], None] = _noop, *, build: bool = True
) -> dict[str, str]:
    """Name -> tag of the three images above; with `build` off, `ImageMissing` for one not built."""
    bullseye = os_image(client, BULLSEYE, progress, build=build)
    python39 = derive(
        client, bullseye, "python39", [f"echo python39 > {MARKER}"], [f"ENV PATH={SYSTEM_PATH}"], build=build
    )
    # The OS layer of the base image (`clade images build` made it), not another clade/os image.
    clade_os = f"{OS_REPOSITORY}:{BaseImageRecipe().rootfs.key()[:12]}"
    if not client.images.list(name=clade_os):
        raise ImageMissing(f"the base image's OS layer {clade_os}")
    no_python = derive(
        client,
        clade_os,
        "no-python",
        [
            "rm -rf /usr/bin/python3* /usr/lib/python3* /usr/local/lib/python3* /usr/bin/pydoc3*",
            "! command -v python3 && ! command -v python",
            f"echo no-python > {MARKER}",
        ],
        [f"ENV PATH={SYSTEM_PATH}"],
        build=build,
    )
    conda = derive(
        client,
        python39,
        "conda",
        [
            # The base env and the testbed env: two pythons, only the testbed's is the repo's.
            f"mkdir -p {CONDA}/bin {CONDA}/envs",
            f"python3 -m venv --without-pip {CONDA}/envs/testbed",
            f"ln -s /usr/bin/python3 {CONDA}/bin/python",
            f"printf 'export PATH={CONDA}/envs/testbed/bin:$PATH\\n' > {CONDA}/bin/activate",
            f"echo conda > {MARKER}",
        ],
        [f"ENV PATH={CONDA}/bin:{SYSTEM_PATH}"],
        build=build,
    )
    return {"python39": python39, "no-python": no_python, "conda": conda}


def no_libc_image(client: Any, work: Path, *, build: bool = True) -> str:
    """An image holding nothing but a static busybox (its applets as links): no C library, no
    dynamic loader, no python. The package comes from the host's Debian archive."""
    tag = "clade/test-no-libc:busybox-static"
    if not _absent(client, tag, build):
        return tag
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run(["apt-get", "download", "busybox-static"], cwd=work, check=True, capture_output=True)
    package = next(work.glob("busybox-static_*.deb"))
    unpacked = work / "unpacked"
    subprocess.run(["dpkg-deb", "-x", str(package), str(unpacked)], check=True)
    busybox = unpacked / "bin" / "busybox"
    applets = subprocess.run(
        [str(busybox), "--list"], check=True, capture_output=True, text=True
    ).stdout.split()
    tarball = work / "rootfs.tar"
    with tarfile.open(tarball, "w") as archive:
        for folder in ("bin", "tmp", "etc", "clade"):
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if folder == "tmp" else 0o755
            archive.addfile(info)
        archive.add(busybox, arcname="bin/busybox")
        for applet in applets:
            if applet != "busybox":
                link = tarfile.TarInfo(f"bin/{applet}")
                link.type, link.linkname = tarfile.SYMTYPE, "busybox"
                archive.addfile(link)
        marker = b"no-libc\n"
        info = tarfile.TarInfo(MARKER.lstrip("/"))
        info.size, info.mode = len(marker), 0o644
        archive.addfile(info, io.BytesIO(marker))
    repository, _, version = tag.rpartition(":")
    client.api.import_image(src=str(tarball), repository=repository, tag=version, changes=["ENV PATH=/bin"])
    assert client.images.list(name=tag), f"importing {tarball} failed"
    return tag
