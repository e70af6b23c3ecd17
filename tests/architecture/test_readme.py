"""The README stays a short front page: the two commands as they are, and links that lead somewhere."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAX_LINES = 200  # the rest belongs in the manual (docs/, mkdocs.yml)
# A markdown link's target, when it is a path in this repository (not a URL or an anchor).
LOCAL_LINK = re.compile(r"\]\((?!https?://|#)([^)\s]+)\)")


def shell_blocks(text: str) -> list[str]:
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S)]


def test_the_readme_is_a_front_page_not_a_manual() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) < MAX_LINES, f"README.md has {len(lines)} lines; move detail into docs/"


def test_the_readme_gives_the_demo_and_the_test_command_as_they_are() -> None:
    blocks = shell_blocks(README.read_text())
    assert "bash scripts/demo.sh" in blocks
    assert "bash scripts/test.sh" in blocks
    for script in ("scripts/demo.sh", "scripts/test.sh"):
        assert (ROOT / script).is_file(), script


def test_every_link_in_the_readme_leads_to_a_file_of_the_repository() -> None:
    targets = [target.split("#")[0] for target in LOCAL_LINK.findall(README.read_text())]
    assert targets, "the README links into the manual"
    missing = [target for target in targets if not (ROOT / target).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"
