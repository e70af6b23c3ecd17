"""The named run configurations `clade sim` compares.

A preset is what a user would write in a run configuration: stages, selection strategy and its
params, parallelism. Stage tasks are drawn from the landscape's pool per seed, without overlap
between stages. A preset naming a strategy the selection registry does not know is listed as
unavailable instead of run, so strategies added to the registry later appear as soon as a
preset names them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from service.selection import known_strategies


@dataclass(frozen=True)
class SimStage:
    size: int
    threshold: float = 0.0
    options: dict[str, Any] = field(default_factory=dict)  # further StageConfig fields


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    stages: tuple[SimStage, ...]
    strategy: str = "score_child_prop"
    params: dict[str, float] = field(default_factory=dict)
    parallelism: int = 2
    # (tasks, top_k): the run stops opening steps in time to re-score its top_k agents on this
    # many held-out tasks within the budget, and names its best by the held-out lower bound.
    heldout: tuple[int, int] | None = None
    # The share of the budget the run itself is given (its `budget.max_evaluations`; needs
    # `heldout`): it ends there and spends nothing more, so its final pick counts from then on.
    budget_share: float = 1.0

    def margin(self) -> int:
        """The most evaluations steps in flight can still send once no step opens."""
        return self.parallelism * sum(stage.size for stage in self.stages)

    @property
    def available(self) -> bool:
        return self.strategy in known_strategies()

    def stage_text(self) -> str:
        parts = []
        for stage in self.stages:
            text = f"{stage.size}"
            if stage.threshold:
                text += f"@{stage.threshold:g}"
            if stage.options:
                text += "(" + ",".join(f"{k}={v}" for k, v in stage.options.items()) + ")"
            parts.append(text)
        text = " -> ".join(parts)
        if self.heldout is not None:
            text += f", held-out {self.heldout[0]} (top {self.heldout[1]})"
        if self.budget_share != 1.0:
            text += f", {self.budget_share:.0%} of the budget"
        return text


DGM_STAGES = (SimStage(10, 0.4), SimStage(50))
BASELINE = "dgm"

PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(BASELINE, "the Darwin Gödel Machine's default (the baseline)", DGM_STAGES),
        Preset("score_prop", "DGM stages, parents weighted by score", DGM_STAGES, "score_prop"),
        Preset("random", "DGM stages, parents uniformly at random", DGM_STAGES, "random"),
        Preset("best", "DGM stages, always the best-scoring parent", DGM_STAGES, "best"),
        Preset("hgm", "DGM stages, Thompson sampling on clade results (HGM)", DGM_STAGES, "hgm"),
        Preset(
            "dgm-lean",
            "DGM selection, a second stage of 20 tasks instead of 50",
            (SimStage(10, 0.4), SimStage(20)),
        ),
        Preset(
            "hgm-lean", "HGM selection, a second stage of 20 tasks", (SimStage(10, 0.4), SimStage(20)), "hgm"
        ),
        Preset("hgm-10", "HGM selection, one stage of 10 tasks (no threshold)", (SimStage(10),), "hgm"),
        # The seed is scored on the 60 tasks every measurement draws from (HGM's SWE-Verified-60);
        # the strategy gives the run HGM's budget of 800 evaluations (docs/hgm-paper.md).
        Preset(
            "hgm-paper",
            "HGM as published: expand or measure one task, 800 evaluations",
            (SimStage(60),),
            "hgm-paper",
        ),
        Preset("islands", "DGM stages, 4 islands with migration every 10 steps", DGM_STAGES, "islands"),
        Preset(
            "map_elites", "DGM stages, MAP-Elites niches (3 clusters x 2 levels)", DGM_STAGES, "map_elites"
        ),
        Preset("group", "DGM stages, group evolution in rounds of 2", DGM_STAGES, "group", {"group_size": 2}),
        Preset(
            "hgm-lean+heldout",
            "hgm-lean, its best chosen on 50 held-out tasks (top 3)",
            (SimStage(10, 0.4), SimStage(20)),
            "hgm",
            heldout=(50, 3),
        ),
        Preset(
            "hgm-lean+heldout/2",
            "hgm-lean+heldout given half the budget",
            (SimStage(10, 0.4), SimStage(20)),
            "hgm",
            heldout=(50, 3),
            budget_share=0.5,
        ),
    )
}


def preset_names() -> list[str]:
    return list(PRESETS)


def get_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise KeyError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}") from None
