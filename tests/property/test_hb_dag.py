"""DAG happens-before (:class:`neuronsim.machine.order.hb.DagHappensBefore`) against networkx reachability."""

from __future__ import annotations

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from neuronsim.machine.order.hb import TUPLE_WIDTH, DagHappensBefore, SparseClock


@st.composite
def dags(draw, max_nodes: int = 40):
    n = draw(st.integers(1, max_nodes))
    density = draw(st.floats(0.0, 0.5))
    preds = []
    for node in range(n):
        ps = [p for p in range(node) if draw(st.floats(0, 1)) < density] if node else []
        preds.append(tuple(draw(st.permutations(ps))))
    return preds


def _check(preds) -> DagHappensBefore:
    graph = nx.DiGraph()
    graph.add_nodes_from(range(len(preds)))
    graph.add_edges_from((p, node) for node, ps in enumerate(preds) for p in ps)
    hb = DagHappensBefore(preds)
    clocks = list(hb.clocks())
    for b in range(len(preds)):
        before = nx.ancestors(graph, b) | {b}
        for a in range(len(preds)):
            assert hb.ordered(a, clocks[b]) == (a in before), (a, b, preds)
    return hb


@settings(max_examples=150, deadline=None)
@given(dags())
def test_clocks_are_exact_reachability(preds):
    _check(preds)


@settings(max_examples=30, deadline=None)
@given(dags(max_nodes=90))
def test_wide_graphs_use_sparse_clocks_and_stay_exact(preds):
    preds = preds + [() for _ in range(TUPLE_WIDTH + 1)]  # loners: one chain each
    hb = _check(preds)
    assert hb.width > TUPLE_WIDTH
    assert isinstance(next(iter(hb.clocks())), SparseClock)


def test_chains_are_paths_and_clocks_are_forgotten():
    preds = [()] + [(k,) for k in range(999)]  # one long path: one chain, tuple clocks of width 1
    hb = DagHappensBefore(preds)
    assert hb.width == 1 and hb.pos[-1] == 1000
    assert all(hb.ordered(0, c) for c in hb.clocks())


def test_an_edge_forward_is_refused():
    try:
        DagHappensBefore([(1,), ()])
    except ValueError as err:
        assert "topological" in str(err)
    else:
        raise AssertionError("a forward edge was accepted")
