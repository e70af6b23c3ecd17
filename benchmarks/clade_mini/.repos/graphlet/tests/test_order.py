from graphlet import Graph, topological_sort


def test_order_follows_the_edges() -> None:
    graph = Graph()
    graph.add_edge("test", "deploy")
    graph.add_edge("compile", "test")
    graph.add_edge("fetch", "compile")
    assert topological_sort(graph) == ["fetch", "compile", "test", "deploy"]


def test_ties_keep_insertion_order() -> None:
    graph = Graph()
    for node in ("c", "a", "b"):
        graph.add_node(node)
    graph.add_edge("a", "z")
    assert topological_sort(graph) == ["c", "a", "b", "z"]


def test_empty_graph() -> None:
    assert topological_sort(Graph()) == []
