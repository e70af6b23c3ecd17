"""Child processes that must not outlive the process that started them: a worker process of a
simulated sitting, the service and worker of `clade up`. Killed outright (SIGKILL, the OOM
killer), a parent runs no clean-up of its own, so the kernel is asked to do it (Linux's
parent-death signal); elsewhere this does nothing."""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable
from functools import cache, partial
from typing import Any

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


@cache
def _prctl() -> Callable[..., Any] | None:
    return ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None


def _arm(prctl: Callable[..., Any] | None, parent: int, signum: int) -> None:
    if prctl is None:
        return
    if prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent:  # the parent died before the request took effect
        os.kill(os.getpid(), signum)


def die_with_parent(parent: int, signum: int) -> None:
    """Called in the child (`parent`: the pid that started it): from now on the kernel sends it
    `signum` when the parent dies."""
    _arm(_prctl(), parent, signum)


def parent_death_hook(signum: int) -> Callable[[], None]:
    """A `preexec_fn` that does the same for a child that then execs (the request survives exec).
    Looked up here, in the parent: between fork and exec a child of a threaded process should do
    little (a lock another thread held at the fork stays held in the child)."""
    return partial(_arm, _prctl(), os.getpid(), signum)
