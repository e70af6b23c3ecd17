"""A directed graph with weighted edges."""

from __future__ import annotations

from collections.abc import Hashable

Node = Hashable


class Graph:
    """Directed edges with non-negative weights. Nodes keep the order they were added in."""

    def __init__(self) -> None:
        self._successors: dict[Node, dict[Node, float]] = {}

    def __contains__(self, node: object) -> bool:
        return node in self._successors

    def __len__(self) -> int:
        return len(self._successors)

    def add_node(self, node: Node) -> None:
        self._successors.setdefault(node, {})

    def add_edge(self, source: Node, target: Node, weight: float = 1.0) -> None:
        """Add (or re-weight) the edge source -> target, adding both nodes if needed."""
        if weight < 0:
            raise ValueError(f"negative weight {weight} on {source!r} -> {target!r}")
        self.add_node(source)
        self.add_node(target)
        self._successors[source][target] = float(weight)

    def remove_node(self, node: Node) -> None:
        """Remove a node and every edge from or to it."""
        del self._successors[node]
        for targets in self._successors.values():
            targets.pop(node, None)

    def nodes(self) -> list[Node]:
        return list(self._successors)

    def edges(self) -> list[tuple[Node, Node, float]]:
        return [
            (source, target, weight)
            for source, targets in self._successors.items()
            for target, weight in targets.items()
        ]

    def successors(self, node: Node) -> dict[Node, float]:
        """The nodes `node` has an edge to, with the edges' weights."""
        return dict(self._successors[node])
