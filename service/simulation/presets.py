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
        return " -> ".join(parts)


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
        Preset("islands", "DGM stages, 4 islands with migration every 10 steps", DGM_STAGES, "islands"),
        Preset(
            "islands-lean",
            "islands, a second stage of 20 tasks",
            (SimStage(10, 0.4), SimStage(20)),
            "islands",
        ),
        Preset(
            "map_elites", "DGM stages, MAP-Elites niches (3 clusters x 2 levels)", DGM_STAGES, "map_elites"
        ),
        Preset(
            "map_elites-lean",
            "MAP-Elites, a second stage of 20 tasks",
            (SimStage(10, 0.4), SimStage(20)),
            "map_elites",
        ),
        Preset("group", "DGM stages, group evolution in rounds of 2", DGM_STAGES, "group", {"group_size": 2}),
    )
}


def preset_names() -> list[str]:
    return list(PRESETS)


def get_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise KeyError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}") from None
