"""Loop disks only where the Docker engine sees them: a worker whose mount namespace is not the
engine's (in a container beside the host's engine, under `ip netns exec`) watches instead, since
its loop mounts would reach its sandboxes as empty folders, or not at all."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sandbox.disk import engine_shares_our_mounts


def fake_proc(root: Path, ours: str, engines: dict[str, tuple[str, str]]) -> Path:
    """A /proc with this process's mount namespace `ours` and processes pid -> (comm, namespace)."""
    (root / "self" / "ns").mkdir(parents=True)
    os.symlink(ours, root / "self" / "ns" / "mnt")
    for pid, (comm, namespace) in engines.items():
        (root / pid / "ns").mkdir(parents=True)
        (root / pid / "comm").write_text(comm + "\n")
        os.symlink(namespace, root / pid / "ns" / "mnt")
    (root / "sys").mkdir()  # not a process
    return root


def test_only_an_engine_in_our_mount_namespace_counts(tmp_path: Path) -> None:
    same = fake_proc(tmp_path / "a", "mnt:[1]", {"7": ("containerd", "mnt:[1]"), "9": ("dockerd", "mnt:[1]")})
    other = fake_proc(tmp_path / "b", "mnt:[2]", {"9": ("dockerd", "mnt:[1]")})
    none = fake_proc(tmp_path / "c", "mnt:[1]", {"7": ("containerd", "mnt:[1]")})
    assert engine_shares_our_mounts(same)
    assert not engine_shares_our_mounts(other)
    assert not engine_shares_our_mounts(none)


def test_a_worker_under_ip_netns_exec_does_not_loop_mount(tmp_path: Path) -> None:
    # The engine the suite uses runs on this host, in this mount namespace.
    assert engine_shares_our_mounts()
    name = f"clade-disk-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        probe = subprocess.run(
            ["ip", "netns", "exec", name, sys.executable, "-c",
             "from sandbox.disk import can_loop_mount, engine_shares_our_mounts;"
             "print(engine_shares_our_mounts(), can_loop_mount())"],
            check=True, capture_output=True, text=True, cwd=Path(__file__).parents[2],
            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
        )  # fmt: skip
    finally:
        subprocess.run(["ip", "netns", "del", name], check=True)
    assert probe.stdout.split() == ["False", "False"]
