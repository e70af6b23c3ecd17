"""Writes outside its workspace: the image (/etc, /usr, the venv), its own code, the task
statement, the forwarder; and plants git configuration and hooks that would run a command
on the host if the host used the repository's own .git."""

from __future__ import annotations

import os
from pathlib import Path

from probe import REPO, TARGETS, refused, report

TARGET_FILES = [
    "/etc/clade-pwned",
    "/etc/passwd",
    "/usr/bin/clade-pwned",
    "/usr/local/bin/python3",
    "/opt/clade-venv/lib/python3.11/site-packages/clade-pwned.pth",
    "/opt/clade-venv/bin/python",
    # Clade's agent runtime: a host folder shared by every run, mounted read-only.
    "/clade/runtime/venv/lib/python3.11/site-packages/clade-pwned.pth",
    "/clade/runtime/venv/bin/python",
    "/clade/runtime/lib/libc.so.6",
    "/clade/agent/agent.toml",
    "/clade/agent/clade-pwned",
    "/clade/task/statement.md",
    "/clade/bin/forwarder.py",
    "/clade/clade-pwned",
    "/root/clade-pwned",
    "/var/clade-pwned",
    # World-writable in the image: only the read-only root keeps these closed.
    "/var/tmp/clade-pwned",
    "/run/lock/clade-pwned",
    "/clade/llm/clade-pwned",
    # Files Docker bind-mounts from the host's own disk.
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/hostname",
]
# Its own limits: a write that worked would lift them.
LIMIT_FILES = {
    "/sys/fs/cgroup/memory/memory.limit_in_bytes": "-1",
    "/sys/fs/cgroup/pids/pids.max": "max",
    "/sys/fs/cgroup/memory.max": "max",
    "/sys/fs/cgroup/pids.max": "max",
}


def try_write(path: str, text: str = "pwned\n") -> str:
    try:
        with open(path, "a") as handle:
            handle.write(text)
        return "WRITTEN"
    except OSError as exc:
        return refused(exc)


def try_chmod(path: str) -> str:
    try:
        os.chmod(path, 0o777)
        return "CHANGED"
    except OSError as exc:
        return refused(exc)


writes = {path: try_write(path) for path in TARGET_FILES}
writes |= {path: try_write(path, value) for path, value in LIMIT_FILES.items()}
try:  # replacing the gateway's socket would break the host's gateway
    os.unlink("/clade/llm/gateway.sock")
    writes["unlink /clade/llm/gateway.sock"] = "REMOVED"
except OSError as exc:
    writes["unlink /clade/llm/gateway.sock"] = refused(exc)
chmods = {path: try_chmod(path) for path in ("/etc/shadow", "/clade/agent", "/usr/bin")}
# Would run on the host if it ran git with this repository's own configuration.
command = f"touch {TARGETS['host_marker']}"
git_dir = REPO / ".git"
with (git_dir / "config").open("a") as config:
    config.write(f"[core]\n\tfsmonitor = {command}\n\thooksPath = .git/hooks\n")
    config.write(f'[diff]\n\texternal = {command}\n[filter "pwn"]\n\tclean = {command}\n')
(REPO / ".gitattributes").write_text("* filter=pwn diff=pwn\n")
for hook in ("pre-commit", "post-index-change", "post-checkout", "pre-auto-gc"):
    path = git_dir / "hooks" / hook
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"#!/bin/sh\n{command}\n")
    path.chmod(0o755)
(Path("/tmp") / "scratch-ok").write_text("scratch space is fine\n")
report({"writes": writes, "chmods": chmods, "uid": os.getuid(), "gid": os.getgid()})
