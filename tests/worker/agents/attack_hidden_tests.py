"""Hunts for the task's hidden tests: their text in every file and process it can read, and
files named like a benchmark's task data anywhere on the filesystem."""

from __future__ import annotations

import os
from pathlib import Path

from probe import hidden_markers, report, search_files, search_processes

TASK_FILES = {"test.patch", "gold.patch", "task.json", "suite.json", "FAIL_TO_PASS"}

markers = hidden_markers()
files = search_files(markers)
processes = search_processes(markers)
named = [
    os.path.join(folder, name)
    for folder, dirnames, names in os.walk("/")
    if not folder.startswith(("/proc", "/sys", "/dev"))
    for name in names
    if name in TASK_FILES
]
report(
    {
        "hits": files["hits"] + processes["hits"],
        "files_read": files["files_read"],
        "task_files": named,
        "mounts": [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()],
        "statement_chars": len(Path(os.environ["CLADE_TASK_FILE"]).read_text()),
    }
)
