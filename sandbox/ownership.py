"""Host folders handed to a sandbox: who may read and write them. The sandbox user is uid 1000."""

from __future__ import annotations

import os
from pathlib import Path

from sandbox.images.rootfs import SANDBOX_UID


def chmod_tree(folder: Path, dir_mode: int, file_mode: int) -> None:
    """Set every folder to `dir_mode` and every file to `file_mode`, keeping execute bits."""
    for dirpath, _dirnames, filenames in os.walk(folder):
        os.chmod(dirpath, dir_mode)
        for name in filenames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                mode = os.stat(path).st_mode
                os.chmod(path, file_mode | (0o111 if mode & 0o100 else 0))


def make_world_writable(root: Path) -> None:
    """Open a tree to everyone: the sandbox user owns none of these host files."""
    for folder, _, files in os.walk(root):
        os.chmod(folder, 0o777)
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                os.chmod(path, os.stat(path).st_mode | 0o666)


def give_to_sandbox_user(folder: Path) -> None:
    """The sandbox user must write here: chown as root, else open the tree to everyone."""
    if os.geteuid() != 0:
        make_world_writable(folder)
        return
    for dirpath, _dirnames, filenames in os.walk(folder):
        for path in [dirpath, *(os.path.join(dirpath, n) for n in filenames)]:
            os.lchown(path, SANDBOX_UID, SANDBOX_UID)
