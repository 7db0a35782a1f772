"""The scheduler's conflict edges (issue 30.5): about linear in the accesses where they used to
be quadratic, and still ordering every conflicting pair through their transitive closure."""

from __future__ import annotations

import itertools

import networkx as nx

from neuronsim.passes.list_schedule import _order_edges


def _entries(steps: int) -> list[tuple]:
    """A Mamba step's PSUM pattern: extent ``b`` (half a bank) read, then extent ``a`` (the
    whole bank, overlapping it) written, ``steps`` times; entries ``(extent, write, node)``."""
    whole = ("a", 1, 0, 2048, False)
    half = ("b", 1, 0, 1024, False)
    out = []
    for step in range(steps):
        out.append((half, False, 2 * step))
        out.append((whole, True, 2 * step + 1))
    return out


def _conflicts(entries: list[tuple]):
    for (e1, w1, k1), (e2, w2, k2) in itertools.combinations(entries, 2):
        overlap = e1[2] < e2[3] and e2[2] < e1[3]
        if overlap and (w1 or w2) and k1 != k2:
            yield k1, k2


def test_a_write_stands_for_the_reads_it_orders():
    for steps in (10, 200):
        edges: set[tuple[int, int]] = set()
        _order_edges(_entries(steps), edges)
        # before: every write took an edge from every read of the other extent ever made
        # (steps ** 2 / 2 of them); now a few per access
        assert len(edges) <= 4 * steps
        assert all(i < k for i, k in edges)


def test_every_conflicting_pair_stays_ordered():
    entries = _entries(30)
    # a second pattern in the same bucket: reads of the whole bank between the writes
    entries += [(("a", 1, 0, 2048, False), False, 60 + k) for k in range(5)]
    entries += [(("b", 1, 0, 1024, False), True, 65)]
    edges: set[tuple[int, int]] = set()
    _order_edges(entries, edges)
    graph = nx.DiGraph(edges)
    for before, after in _conflicts(entries):
        assert nx.has_path(graph, before, after), (before, after)
