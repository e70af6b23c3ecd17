"""Topological order (Kahn's algorithm)."""

from __future__ import annotations

from collections import deque

from graphlet.errors import CycleError
from graphlet.graph import Graph, Node


def topological_sort(graph: Graph) -> list[Node]:
    """Every node, ordered so that each edge goes from an earlier node to a later one.

    Among nodes that could come next, the one added to the graph first comes
    first. Raises CycleError when there is no such order (the graph has a cycle).
    """
    waiting = {node: 0 for node in graph.nodes()}
    for _, target, _ in graph.edges():
        waiting[target] += 1
    ready = deque(node for node, count in waiting.items() if count == 0)
    order: list[Node] = []
    while ready:
        node = ready.popleft()
        order.append(node)
        for successor in graph.successors(node):
            waiting[successor] -= 1
            if waiting[successor] == 0:
                ready.append(successor)
    return order
