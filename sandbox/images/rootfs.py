"""The OS layer of the base image: a debootstrapped Debian root, packed as a cached tarball."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from sandbox.base import SandboxError, SandboxUnavailable
from sandbox.images.apt_sources import find_mirror

Progress = Callable[[str], None]

SANDBOX_UID = 1000
SANDBOX_USER = "clade"
SANDBOX_HOME = "/tmp"
CLADE_DIRS = (
    "clade/agent",
    "clade/repo",
    "clade/task",
    "clade/out",
    "clade/llm",
    "clade/bin",
)
# Bulky files no sandbox needs; copyright notices stay.
_TRIM = (
    "var/cache/apt/archives",
    "var/lib/apt/lists",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
)


@dataclass(frozen=True)
class RootfsRecipe:
    """Everything that decides the content of the OS layer (the mirror does not)."""

    suite: str = "bookworm"
    variant: str = "minbase"
    packages: tuple[str, ...] = ("python3", "python3-venv", "git", "ca-certificates", "procps")
    uid: int = SANDBOX_UID
    user: str = SANDBOX_USER
    home: str = SANDBOX_HOME
    dirs: tuple[str, ...] = CLADE_DIRS
    trimmed: tuple[str, ...] = _TRIM
    # Bump when the way the tree is customised changes.
    layout_version: int = 1
    # Installed after debootstrap by apt-get in the new root: debootstrap's own resolver
    # cannot follow virtual packages (Debian's librust-*-dev depend on many).
    apt_packages: tuple[str, ...] = ()

    def key(self) -> str:
        fields = asdict(self)
        if not self.apt_packages:
            del fields["apt_packages"]  # so recipes without any keep their key
        blob = json.dumps(fields, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()


def ensure_rootfs_tar(
    cache_dir: Path,
    recipe: RootfsRecipe,
    *,
    progress: Progress,
    mirror: str | None = None,
) -> Path:
    """Return the cached rootfs tarball for `recipe`, debootstrapping it on first use.

    The caller holds the cache's build lock, so any work directory found here is stale.
    A failed build keeps its log (debootstrap's output and its own debootstrap.log) in the
    cache's logs/ folder, and its error names the file.
    """
    target = cache_dir / "rootfs" / f"{recipe.suite}-{recipe.key()[:12]}.tar"
    if target.is_file():
        progress(f"reusing cached OS layer {target}")
        return target
    _check_host()
    for stale in target.parent.glob("rootfs-*"):
        _unmount_below(stale)
        shutil.rmtree(stale, ignore_errors=True)
    keyring: Path | None = None
    if mirror is None:
        source = find_mirror(recipe.suite)
        mirror, keyring = source.uri, source.keyring
    target.parent.mkdir(parents=True, exist_ok=True)
    # Build next to the cache so the final rename is atomic and never crosses filesystems.
    work = Path(tempfile.mkdtemp(prefix="rootfs-", dir=target.parent))
    log = cache_dir / "logs" / f"debootstrap-{target.stem}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        root = work / "root"
        progress(f"debootstrap {recipe.suite} ({recipe.variant}) from {mirror}; takes a minute or two")
        _debootstrap(recipe, root, mirror, keyring, progress, log)
        if recipe.apt_packages:
            _apt_install(root, recipe.apt_packages, progress)
        customise(root, recipe)
        progress("packing the OS layer")
        partial = work / "rootfs.tar"
        _run(["tar", "--numeric-owner", "-C", str(root), "-cf", str(partial), "."], "tar")
        os.replace(partial, target)
        log.unlink(missing_ok=True)
    finally:
        _unmount_below(work)
        shutil.rmtree(work, ignore_errors=True)
    return target


def customise(root: Path, recipe: RootfsRecipe) -> None:
    """Add the sandbox user and the /clade layout; drop what no sandbox reads."""
    uid = recipe.uid
    _append_line(root / "etc/passwd", f"{recipe.user}:x:{uid}:{uid}:Clade sandbox:{recipe.home}:/bin/bash")
    _append_line(root / "etc/group", f"{recipe.user}:x:{uid}:")
    _append_line(root / "etc/shadow", f"{recipe.user}:!:19000:0:99999:7:::")
    for rel in recipe.dirs:
        (root / rel).mkdir(mode=0o755, parents=True, exist_ok=True)
    for rel in recipe.trimmed:
        for child in (root / rel).glob("*"):
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
    for doc in (root / "usr/share/doc").glob("*/*"):
        if doc.name != "copyright" and not doc.is_dir():
            doc.unlink()


def _check_host() -> None:
    if shutil.which("debootstrap") is None or shutil.which("tar") is None:
        raise SandboxUnavailable("building the base image needs `debootstrap` and `tar` on the host")
    if os.geteuid() != 0:
        raise SandboxUnavailable("building the OS layer with debootstrap needs root")


def _debootstrap(
    recipe: RootfsRecipe, root: Path, mirror: str, keyring: Path | None, progress: Progress, log: Path
) -> None:
    """Run debootstrap into `root`; when it fails, its own log (the cause is there, not in its
    output) is kept at `log`, since the work folder holding it is removed."""
    command = [
        "debootstrap",
        f"--variant={recipe.variant}",
        f"--include={','.join(recipe.packages)}",
    ]
    if keyring is not None:
        command.append(f"--keyring={keyring}")
    command += [recipe.suite, str(root), mirror]
    tail: deque[str] = deque(maxlen=20)
    with (
        log.open("w") as handle,
        subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
        ) as proc,
    ):
        assert proc.stdout is not None
        handle.write("$ " + " ".join(command) + "\n")
        for line in proc.stdout:
            handle.write(line)
            tail.append(line.rstrip())
            progress(f"debootstrap: {line.rstrip()}")
        if proc.wait() != 0:
            # debootstrap's own detailed log is inside the tree, which is about to be deleted.
            detail = root / "debootstrap" / "debootstrap.log"
            if detail.is_file():
                handle.write(f"\n--- {detail.name} ---\n" + detail.read_text(errors="replace"))
    if proc.returncode != 0:
        raise SandboxError(f"debootstrap failed ({proc.returncode}); full log: {log}\n" + "\n".join(tail))


def _apt_install(root: Path, packages: tuple[str, ...], progress: Progress) -> None:
    """apt-get install `packages` in the debootstrapped `root` (from the mirror debootstrap
    wrote into its sources), then drop the downloaded lists and archives."""
    shutil.copyfile("/etc/resolv.conf", root / "etc/resolv.conf")
    env = {"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
    progress(f"apt-get install {' '.join(packages)}")
    for command in (
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages],
        ["apt-get", "clean"],
    ):
        done = subprocess.run(
            ["chroot", str(root), *command],
            capture_output=True,
            text=True,
            errors="replace",
            env=env,
            check=False,
        )
        if done.returncode != 0:
            output = (done.stdout + done.stderr).strip()[-3000:]
            what = " ".join(command[:2])
            raise SandboxError(f"{what} in the new root failed ({done.returncode}):\n{output}")


def _run(command: list[str], what: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True, errors="replace", check=False)
    if done.returncode != 0:
        raise SandboxError(f"{what} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")


def _append_line(path: Path, line: str) -> None:
    name = line.split(":", 1)[0] + ":"
    existing = path.read_text() if path.exists() else ""
    if any(row.startswith(name) for row in existing.splitlines()):
        return
    with path.open("a") as handle:
        handle.write(("" if existing.endswith("\n") or not existing else "\n") + line + "\n")


def _unmount_below(work: Path) -> None:
    # A failed debootstrap can leave /proc or /sys mounted in the tree; never rmtree into them.
    prefix = str(work.resolve()) + "/"
    with open("/proc/self/mounts") as mounts:
        points = [fields[1] for fields in (line.split() for line in mounts) if len(fields) > 1]
    for point in sorted((p for p in points if p.startswith(prefix)), reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)
