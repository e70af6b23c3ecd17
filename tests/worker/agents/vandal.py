"""An improver that leaves a patch the service will not archive, chosen by its own `mode.txt`:
`link` (a link leading out of the agent), `chain` (links each within the agent on their face,
leading out of it through one another), `wipe` (every file deleted), `many:N` (N new files)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

mode, _, count = Path(__file__).with_name("mode.txt").read_text().strip().partition(":")
repo = Path(os.environ["CLADE_REPO"])
if mode == "link":
    os.symlink("../../../etc/passwd", repo / "escape")
elif mode == "chain":
    (repo / "nest").mkdir()
    os.symlink("..", repo / "nest" / "up")  # the agent's own top folder
    os.symlink("nest/up/..", repo / "escape")  # through nest/up: the folder above the agent
elif mode == "wipe":
    for item in repo.iterdir():
        if item.name == ".git":
            continue
        if item.is_dir() and not item.is_symlink():
            shutil.rmtree(item)
        else:
            item.unlink()
elif mode == "many":
    folder = repo / "many"
    folder.mkdir()
    for number in range(int(count)):
        (folder / f"f{number}.txt").write_text(f"{number}\n")
print("vandal:", mode)
