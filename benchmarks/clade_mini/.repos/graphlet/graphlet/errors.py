class GraphError(Exception):
    """Base class of graphlet's errors."""


class NoPath(GraphError):
    """There is no path between the two nodes."""


class CycleError(GraphError):
    """The graph has a cycle, so it has no topological order."""
