"""Estimating every agent's true resolve rate from the selection results of its whole lineage.

A run's agents form a tree: a child is its parent's code plus one edit. The model behind the
estimate is a random walk down that tree, seen through binomial noise:

    theta_child = theta_parent + step,   step ~ N(0, tau^2)
    r / n       ~ N(theta, p (1 - p) / n)   (p: the run's pooled resolve rate)

The tree's roots get a flat prior. Given tau^2 the posterior of every theta is exact and cheap:
one pass up the tree and one down (Gaussian belief propagation). tau^2 is not a tuned constant.
It is estimated from the run's own parent-child pairs by the method of moments:

    E[(y_child - y_parent)^2] = tau^2 + s_child^2 + s_parent^2

So a run whose edits change little pools a lot, and a run whose edits matter pools little.
`contracts.family` is the fixed-weight, one-generation version of the same idea.
"""

from __future__ import annotations

from dataclasses import dataclass

from contracts.family import Scored

# The smallest step variance: (0.01)^2, so that a run whose children all look alike still
# lets an agent's own tasks count more than a distant relative's.
MIN_STEP_VARIANCE = 1e-4
# The pooled rate is kept off 0 and 1 so that the noise variance never vanishes.
RATE_FLOOR = 0.05


@dataclass(frozen=True)
class Estimate:
    mean: float
    variance: float


def step_variance(members: list[Scored]) -> float | None:
    """tau^2 from the run's scored parent-child pairs; None when there is no such pair."""
    scored = {m.agent_id: m for m in members if m.attempted > 0}
    noise = _noise(scored)
    terms = [
        (_rate(child) - _rate(scored[child.parent_id])) ** 2 - noise[child.agent_id] - noise[child.parent_id]
        for child in scored.values()
        if child.parent_id in scored
    ]
    if not terms:
        return None
    return max(MIN_STEP_VARIANCE, sum(terms) / len(terms))


def lineage_estimates(members: list[Scored], tau2: float | None = None) -> dict[str, Estimate]:
    """Each scored member's posterior mean and variance of its resolve rate (members with no
    attempt are left out; a member whose parent is not scored is a root). `tau2`: the step
    variance, by default estimated from the members (`step_variance`)."""
    scored = {m.agent_id: m for m in members if m.attempted > 0}
    noise = _noise(scored)
    if tau2 is None:
        tau2 = step_variance(members)
    if tau2 is None:  # no parent-child pair: each agent is on its own
        return {agent_id: Estimate(_rate(m), noise[agent_id]) for agent_id, m in scored.items()}
    children: dict[str, list[str]] = {}
    for member in scored.values():
        if member.parent_id in scored:
            children.setdefault(member.parent_id, []).append(member.agent_id)
    roots = [m.agent_id for m in scored.values() if m.parent_id not in scored]
    order = _preorder(roots, children)

    # Up: each agent's belief from its own subtree, in precision form (precision, precision * mean).
    up: dict[str, tuple[float, float]] = {}
    to_parent: dict[str, tuple[float, float]] = {}  # the message a child sends its parent
    for agent_id in reversed(order):
        precision = 1.0 / noise[agent_id]
        weighted = precision * _rate(scored[agent_id])
        for child in children.get(agent_id, []):
            child_precision, child_weighted = to_parent[child]
            precision += child_precision
            weighted += child_weighted
        up[agent_id] = (precision, weighted)
        message_precision = 1.0 / (1.0 / precision + tau2)
        to_parent[agent_id] = (message_precision, message_precision * weighted / precision)

    # Down: each agent's belief from the whole tree.
    posterior: dict[str, tuple[float, float]] = {root: up[root] for root in roots}
    for agent_id in order:
        precision, weighted = posterior[agent_id]
        for child in children.get(agent_id, []):
            # The parent's belief without what this child told it, one step further down.
            message_precision, message_weighted = to_parent[child]
            rest_precision = precision - message_precision
            rest_weighted = weighted - message_weighted
            down_precision = 1.0 / (1.0 / rest_precision + tau2)
            child_precision, child_weighted = up[child]
            posterior[child] = (
                child_precision + down_precision,
                child_weighted + down_precision * rest_weighted / rest_precision,
            )
    return {
        agent_id: Estimate(weighted / precision, 1.0 / precision)
        for agent_id, (precision, weighted) in posterior.items()
    }


def _rate(member: Scored) -> float:
    return member.resolved / member.attempted


def _noise(scored: dict[str, Scored]) -> dict[str, float]:
    """Each agent's binomial noise variance at the run's pooled rate."""
    resolved = sum(m.resolved for m in scored.values())
    attempted = sum(m.attempted for m in scored.values())
    pooled = min(1.0 - RATE_FLOOR, max(RATE_FLOOR, resolved / attempted)) if attempted else 0.5
    return {agent_id: pooled * (1.0 - pooled) / m.attempted for agent_id, m in scored.items()}


def _preorder(roots: list[str], children: dict[str, list[str]]) -> list[str]:
    """Parents before their children (iterative: a lineage can be deeper than the call stack)."""
    order, stack = [], list(reversed(roots))
    while stack:
        agent_id = stack.pop()
        order.append(agent_id)
        stack.extend(reversed(children.get(agent_id, [])))
    return order
