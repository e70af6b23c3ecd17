"""A second run over the recorded agents, holding the search data of issue 12 as the lineage carries it.

Its rows are written directly (as `perf/dashboard_tree.py` does), with the columns other parts of
the service fill during a run: selection counts and epochs, held-out counts, islands, niches,
groups, a crossover child's second parent, a child that reuses another's results, and a child
that changed its own improvement procedure. The run itself is created over HTTP.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, insert

from service.db.models import RunAgent
from tests.web.recorded import STAGE_CONFIG, Recorded


@dataclass(frozen=True)
class Row:
    """One agent of the search run (by its label in the recorded archive)."""

    label: str
    parent: str | None
    resolved: int
    attempted: int
    epoch: int
    island: int
    group: str | None = None
    niche: str | None = None
    heldout: tuple[int, int] | None = None  # (resolved, total) on the held-out tasks
    second_parent: str | None = None
    same_as: str | None = None
    meta_changed: bool | None = None
    race_stop: str | None = None  # the racing evaluation policy's stop


# f has the best selection score; d the best held-out lower bound, so d is the one to ship.
ROWS = [
    Row("seed", None, 3, 5, epoch=0, island=0),
    Row("a", "seed", 4, 5, epoch=0, island=0, group="g1", heldout=(6, 10)),
    Row("c", "seed", 2, 5, epoch=0, island=1, group="g1", race_stop="cannot_beat_parent"),
    Row("d", "a", 4, 5, epoch=1, island=1, group="g2", heldout=(9, 10), second_parent="c", meta_changed=True),
    Row("e", "a", 4, 5, epoch=1, island=0, group="g2", same_as="d"),
    Row("f", "d", 11, 12, epoch=1, island=1, niche="parsing", heldout=(6, 10)),
]

HELDOUT_COMPARED = sum(row.heldout is not None for row in ROWS)


@dataclass
class SearchRun:
    run_id: str
    ids: dict[str, str] = field(default_factory=dict)  # label -> agent id
    rows: dict[str, Row] = field(default_factory=dict)

    def island_of(self, label: str) -> int:
        return self.rows[label].island


def build(archive: Recorded) -> SearchRun:
    with archive.service.admin as admin:
        created = admin.post(
            "/api/runs",
            json={
                "name": "search-demo",
                "seed_agent": archive.ids["seed"],
                "stages": STAGE_CONFIG,
                "budget": {"max_children": 10},
            },
        )
        created.raise_for_status()
    run = SearchRun(run_id=str(created.json()["id"]))
    run.ids = {row.label: archive.ids[row.label] for row in ROWS}
    run.rows = {row.label: row for row in ROWS}
    children = {row.label: sum(1 for r in ROWS if r.parent == row.label) for row in ROWS}
    values: list[dict[str, Any]] = []
    for step, row in enumerate(ROWS):
        ids = run.ids
        values.append(
            {
                "run_id": run.run_id,
                "agent_id": ids[row.label],
                "parent_id": ids[row.parent] if row.parent else None,
                "status": "admitted",
                "score": row.resolved / row.attempted,
                "stage_reached": 1,
                "children": children[row.label],
                "step_number": step or None,
                "resolved": row.resolved,
                "attempted": row.attempted,
                "epoch": row.epoch,
                "heldout_resolved": row.heldout[0] if row.heldout else None,
                "heldout_total": row.heldout[1] if row.heldout else None,
                # The run compared its held-out agents to name its best, as the service records.
                "heldout_compared": HELDOUT_COMPARED if row.heldout else None,
                "island": row.island,
                "niche": row.niche,
                "group_id": row.group,
                "second_parent_id": ids[row.second_parent] if row.second_parent else None,
                "same_as": ids[row.same_as] if row.same_as else None,
                "meta_changed": row.meta_changed,
                "race_stop": row.race_stop,
            }
        )
    with archive.session() as session:
        # The run's seed row, as the service made it, is replaced by the one above.
        session.execute(delete(RunAgent).where(RunAgent.run_id == run.run_id))
        session.execute(insert(RunAgent), values)
        session.commit()
    return run
