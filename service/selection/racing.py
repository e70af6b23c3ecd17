"""Racing: a stage's tasks sent a batch at a time, the agent stopped as soon as a bound decides.

After each batch (and only at batch boundaries, so that when results come in does not change
what is decided) the agent's results on the stage so far, `resolved` of `n`, give a Wilson
score interval whose each side holds with probability `confidence` (one-sided: z is the
normal quantile of `confidence`, 1.645 at 0.95). In this order:

    cannot_reach_threshold  even every remaining task resolved would stay below the threshold,
                            or the upper bound is below it
    cannot_beat_parent      the upper bound is below the parent's lower bound (its results on
                            the same stage's tasks), with `beat_parent`
    below_top_k             the upper bound is below the k-th best lower bound among the run's
                            admitted agents on the stage's tasks (`top_k`; fewer than k: no rule)
    clearly_passes          the stage has a threshold and it is reached for sure, or the lower
                            bound reaches it
    (none)                  the next batch is sent; once every task is in, the threshold decides
                            as in the fixed stages (stage_complete)

A stop that fails the stage counts as failing it (the first stage's failure rejects the child,
a later one's ends its evaluation with the score so far); a pass goes on to the next stage.
A stage without a threshold is never "clearly passed" early: on it every agent that is not
stopped as hopeless is measured on every task.
"""

from __future__ import annotations

from statistics import NormalDist

from contracts.config import RacingConfig
from contracts.intervals import wilson
from contracts.vocabulary import StageStop
from service.selection.evaluation import Counts, Decision, Need, StageOver, StageProgress


def one_sided_z(confidence: float) -> float:
    """The z at which one side of a Wilson interval holds with probability `confidence`."""
    return NormalDist().inv_cdf(confidence)


def bounds(counts: Counts, z: float) -> tuple[float, float]:
    """(low, high) of `counts`' resolved fraction at `z`; (0, 1) for no results."""
    return wilson(counts.resolved, counts.total, z)


def kth_best_low(peers: list[Counts], k: int, z: float) -> float | None:
    """The k-th highest lower bound among `peers` with results; None if fewer than k have any."""
    lows = sorted((bounds(c, z)[0] for c in peers if c.total), reverse=True)
    return lows[k - 1] if len(lows) >= k else None


class Racing:
    name = "racing"

    def __init__(self, config: RacingConfig) -> None:
        self.config = config
        self.z = one_sided_z(config.confidence)

    def decide(self, progress: StageProgress) -> Decision:
        tasks = progress.tasks
        measured = 0  # the longest run of whole batches whose results are all in
        for end in self._boundaries(len(tasks)):
            if any(slot not in progress.done for slot in progress.slots(tasks[:end])):
                break
            measured = end
        if measured == 0:
            return Need(progress.slots(tasks[: self._boundaries(len(tasks))[0]]))
        counted = progress.slots(tasks[:measured])
        counts = Counts(resolved=sum(1 for slot in counted if progress.done[slot]), total=len(counted))
        low, high = bounds(counts, self.z)
        if measured == len(tasks):
            return self._over(counts, measured, StageStop.STAGE_COMPLETE, None, low, high, progress.threshold)
        stop = self.stop(progress, counts, low, high)
        if stop is not None:
            reason, detail = stop
            return self._over(counts, measured, reason, detail, low, high, progress.threshold)
        return Need(progress.slots(tasks[: min(measured + self.config.batch, len(tasks))]))

    def stop(
        self, progress: StageProgress, counts: Counts, low: float, high: float
    ) -> tuple[StageStop, str] | None:
        """Why the agent stops after `counts` of the stage, in words too; None: measure on."""
        threshold = progress.threshold
        full = len(progress.tasks) * progress.trials
        if (counts.resolved + full - counts.total) / full < threshold:
            return StageStop.CANNOT_REACH_THRESHOLD, f"the rest resolved would still be below {threshold:g}"
        if high < threshold:
            return StageStop.CANNOT_REACH_THRESHOLD, f"upper bound {high:.3f} < threshold {threshold:g}"
        if self.config.beat_parent:
            parent = progress.peers.parent()
            if parent is not None and parent.total:
                parent_low = bounds(parent, self.z)[0]
                if high < parent_low:
                    return StageStop.CANNOT_BEAT_PARENT, (
                        f"upper bound {high:.3f} < the parent's lower bound {parent_low:.3f}"
                    )
        if self.config.top_k is not None:
            k = self.config.top_k
            top = kth_best_low(list(progress.peers.admitted()), k, self.z)
            if top is not None and high < top:
                return StageStop.BELOW_TOP_K, f"upper bound {high:.3f} < the top {k}'s lower bound {top:.3f}"
        if threshold > 0 and counts.resolved / full >= threshold:
            return StageStop.CLEARLY_PASSES, f"{counts.resolved} of {full} resolved reach {threshold:g}"
        if threshold > 0 and low >= threshold:
            return StageStop.CLEARLY_PASSES, f"lower bound {low:.3f} >= threshold {threshold:g}"
        return None

    def _boundaries(self, tasks: int) -> list[int]:
        """The task counts after which the bound is read: each batch's end, the stage's end."""
        return [*range(self.config.batch, tasks, self.config.batch), tasks]

    @staticmethod
    def _over(
        counts: Counts,
        tasks: int,
        stop: StageStop,
        detail: str | None,
        low: float,
        high: float,
        threshold: float,
    ) -> StageOver:
        passed = stop == StageStop.CLEARLY_PASSES or (
            stop == StageStop.STAGE_COMPLETE and counts.resolved / counts.total >= threshold
        )
        return StageOver(
            passed=passed,
            resolved=counts.resolved,
            total=counts.total,
            tasks=tasks,
            stop=stop,
            detail=detail,
            low=low,
            high=high,
        )
