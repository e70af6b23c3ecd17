"""Reachability and shortest paths (Dijkstra's algorithm)."""

from __future__ import annotations

import heapq

from graphlet.errors import NoPath
from graphlet.graph import Graph, Node


def reachable(graph: Graph, source: Node) -> set[Node]:
    """Every node with a path from `source`, `source` included."""
    seen = {source}
    stack = [source]
    while stack:
        for target in graph.successors(stack.pop()):
            if target not in seen:
                seen.add(target)
                stack.append(target)
    return seen


def shortest_path(graph: Graph, source: Node, target: Node) -> tuple[float, list[Node]]:
    """The cheapest path from `source` to `target`: its total weight and its nodes.

    A node's path to itself is [node], of weight 0. Raises NoPath when `target`
    cannot be reached, or when either node is not in the graph.
    """
    if source not in graph or target not in graph:
        raise NoPath(f"{source!r} or {target!r} is not in the graph")
    distance: dict[Node, float] = {source: 0.0}
    previous: dict[Node, Node] = {}
    queue: list[tuple[float, Node]] = [(0.0, source)]
    done: set[Node] = set()
    while queue:
        cost, node = heapq.heappop(queue)
        if node in done:
            continue
        done.add(node)
        if node == target:
            return cost, _walk_back(previous, source, target)
        for successor, weight in graph.successors(node).items():
            if successor not in distance:
                distance[successor] = cost + weight
                previous[successor] = node
                heapq.heappush(queue, (cost + weight, successor))
    raise NoPath(f"no path from {source!r} to {target!r}")


def _walk_back(previous: dict[Node, Node], source: Node, target: Node) -> list[Node]:
    path = [target]
    while path[-1] != source:
        path.append(previous[path[-1]])
    return path[::-1]
