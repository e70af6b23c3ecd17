import pytest
from graphlet import Graph


def test_nodes_and_edges() -> None:
    graph = Graph()
    graph.add_edge("a", "b", 2)
    graph.add_edge("a", "c")
    graph.add_node("d")
    assert graph.nodes() == ["a", "b", "c", "d"]
    assert graph.edges() == [("a", "b", 2.0), ("a", "c", 1.0)]
    assert graph.successors("a") == {"b": 2.0, "c": 1.0}
    assert "d" in graph and "e" not in graph
    assert len(graph) == 4


def test_negative_weights_are_rejected() -> None:
    with pytest.raises(ValueError):
        Graph().add_edge("a", "b", -1)


def test_remove_node_removes_its_edges() -> None:
    graph = Graph()
    graph.add_edge("a", "b")
    graph.add_edge("b", "c")
    graph.remove_node("b")
    assert graph.nodes() == ["a", "c"]
    assert graph.edges() == []
