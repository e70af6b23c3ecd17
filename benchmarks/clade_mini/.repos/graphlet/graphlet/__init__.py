"""graphlet: small weighted directed graphs."""

from graphlet.errors import CycleError, GraphError, NoPath
from graphlet.graph import Graph
from graphlet.order import topological_sort
from graphlet.paths import reachable, shortest_path

__all__ = ["CycleError", "Graph", "GraphError", "NoPath", "reachable", "shortest_path", "topological_sort"]
