"""Never finishes: ignores SIGTERM, and leaves a detached grandchild (its own session, SIGTERM
ignored too, its command line tagged for the host to look for) that keeps writing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from probe import REPO, TARGETS, report

DAEMON = """
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
if os.fork():
    os._exit(0)
while True:
    with open(sys.argv[1], "a") as out:
        out.write(f"{time.time():.1f}\\n")
    time.sleep(0.2)
"""

signal.signal(signal.SIGTERM, signal.SIG_IGN)
subprocess.Popen(
    [sys.executable, "-c", DAEMON, str(REPO / "heartbeat.txt"), TARGETS["process_marker"]],
    start_new_session=True,
)
report({"pid": os.getpid(), "started": time.time()})
while True:
    time.sleep(3600)
