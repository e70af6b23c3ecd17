import pytest
from graphlet import Graph, NoPath, reachable, shortest_path


def chain() -> Graph:
    graph = Graph()
    graph.add_edge("a", "b", 1)
    graph.add_edge("b", "c", 2)
    graph.add_edge("c", "d", 3)
    return graph


def test_reachable() -> None:
    graph = chain()
    graph.add_edge("x", "a")
    assert reachable(graph, "b") == {"b", "c", "d"}
    assert reachable(graph, "x") == {"x", "a", "b", "c", "d"}


def test_shortest_path_along_a_chain() -> None:
    assert shortest_path(chain(), "a", "d") == (6.0, ["a", "b", "c", "d"])


def test_path_to_itself() -> None:
    assert shortest_path(chain(), "b", "b") == (0.0, ["b"])


def test_unreachable_target() -> None:
    with pytest.raises(NoPath):
        shortest_path(chain(), "d", "a")
    with pytest.raises(NoPath):
        shortest_path(chain(), "a", "nowhere")


def test_direct_edge_is_cheapest() -> None:
    graph = chain()
    graph.add_edge("a", "d", 5)
    assert shortest_path(graph, "a", "d") == (5.0, ["a", "d"])
