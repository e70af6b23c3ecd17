"""Every kind of run event has a renderer in the CLI and in the dashboard, and is stored through
one helper: a kind added to contracts/events.py alone fails here (docs/extend/event-kind.md).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from cli.events import RENDERERS
from contracts.events import event_kinds, event_models

ROOT = Path(__file__).resolve().parents[2]
LIVE_TS = ROOT / "web" / "src" / "live.ts"
TABLE = re.compile(
    r"export const ON_EVENT = \{(?P<body>.*?)\} as const satisfies Record<EventKind, [^>]*>;", re.DOTALL
)
ENTRY = re.compile(r"^\s*(?P<kind>\w+): \"(?P<effect>[a-z]+)\",\s*$")


def dashboard_table() -> dict[str, str]:
    """`ON_EVENT` of web/src/live.ts: kind -> what the run page does with it."""
    found = TABLE.search(LIVE_TS.read_text(encoding="utf-8"))
    assert found is not None, f"{LIVE_TS}: no `ON_EVENT = {{...}} as const satisfies Record<EventKind, ...>`"
    table: dict[str, str] = {}
    for line in found["body"].splitlines():
        if not line.strip() or line.strip().startswith("//"):
            continue
        entry = ENTRY.match(line)
        assert entry is not None, f"{LIVE_TS}: cannot read the ON_EVENT line {line!r}"
        table[entry["kind"]] = entry["effect"]
    return table


def test_every_event_kind_has_a_cli_renderer() -> None:
    missing = [model.__name__ for model in event_models() if model not in RENDERERS]
    extra = [model.__name__ for model in RENDERERS if model not in event_models()]
    assert not missing, f"cli/events.py RENDERERS has no renderer for {missing}"
    assert not extra, f"cli/events.py RENDERERS renders models outside the union: {extra}"


def test_every_event_kind_has_a_dashboard_reaction() -> None:
    table = dashboard_table()
    kinds = set(event_kinds())
    assert not kinds - set(table), f"web/src/live.ts ON_EVENT has no entry for {sorted(kinds - set(table))}"
    assert not set(table) - kinds, (
        f"web/src/live.ts ON_EVENT names kinds no event has: {sorted(set(table) - kinds)}"
    )
    assert set(table.values()) <= {"redraw", "none"}
    assert "run_failed" not in table  # no run fails: a run completes or is cancelled (service/lifecycle.py)


def test_events_are_built_only_by_the_storing_helper() -> None:
    """An `Event(...)` row built anywhere else in the service could carry an untyped payload."""
    builders = []
    for path in sorted((ROOT / "service").rglob("*.py")):
        if path == ROOT / "service" / "events.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Event":
                builders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not builders, f"event rows built outside service/events.py (use events.emit): {builders}"
