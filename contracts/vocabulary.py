"""Names stored in the database and shown by the API that are not statuses (those, and every
change between them, are `service.lifecycle`'s): a step's kind, an evaluation's purpose, why
a stage's measurement stopped.

Here rather than beside the statuses so that every layer of the service may name them, the
selection policies (which import nothing of the database) too. The values are the stored strings.
"""

from __future__ import annotations

from enum import StrEnum


class StepKind(StrEnum):
    """How a step makes its child (not a status: a step's kind never changes once it is sent)."""

    IMPROVE = "improve"  # Clade's diagnosis and improver, on one parent
    HYPER = "hyper"  # the parent's own `improve` command (improver mode `hyper`)
    CROSSOVER = "crossover"  # a merge of the parent and a second one


class EvaluationPurpose(StrEnum):
    """What an evaluation's result is for; only `selection` results feed the search."""

    SELECTION = "selection"  # the stages: selection, admission and diagnosis read these
    HELDOUT = "heldout"  # the end-of-run phase on held-out tasks, never read by selection
    RESCORE = "rescore"  # an agent scored again under a new epoch's utility


class StageStop(StrEnum):
    """Why an agent's measurement on a stage ended (the `racing` evaluation policy records it)."""

    STAGE_COMPLETE = "stage_complete"  # every task of the stage was measured
    CLEARLY_PASSES = "clearly_passes"  # the lower bound reached the stage's threshold
    CANNOT_REACH_THRESHOLD = "cannot_reach_threshold"  # the upper bound is below the threshold
    CANNOT_BEAT_PARENT = "cannot_beat_parent"  # the upper bound is below the parent's lower bound
    BELOW_TOP_K = "below_top_k"  # the upper bound is below the run's k-th best lower bound
