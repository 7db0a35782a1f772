"""The scheduler's conflict edges (issue 30.5): about linear in the accesses where they used to
be quadratic, and still ordering every conflicting pair through their transitive closure."""

from __future__ import annotations

import itertools

import networkx as nx

from neuronsim.passes.list_schedule import _order_edges


def _entries(steps: int) -> list[tuple]:
    """A Mamba step's PSUM pattern: extent ``b`` (half a bank) read, then extent ``a`` (the
    whole bank, overlapping it) written, ``steps`` times; entries ``(extent, write, node)``."""
    whole = ("a", 1, 0, 2048, False, None)
    half = ("b", 1, 0, 1024, False, None)
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
    entries += [(("a", 1, 0, 2048, False, None), False, 60 + k) for k in range(5)]
    entries += [(("b", 1, 0, 1024, False, None), True, 65)]
    edges: set[tuple[int, int]] = set()
    _order_edges(entries, edges)
    graph = nx.DiGraph(edges)
    for before, after in _conflicts(entries):
        assert nx.has_path(graph, before, after), (before, after)


def _column_blocks(blocks: int, rows: int = 8, width: int = 2048) -> list[tuple]:
    """``blocks`` stores of one column block each into a row-major DRAM tensor of ``rows``
    rows: each block's hull spans nearly the whole tensor, its bytes ``rows`` runs of ``width``."""
    row = blocks * width
    out = []
    for j in range(blocks):
        runs = tuple((r * row + j * width, r * row + (j + 1) * width) for r in range(rows))
        out.append((("", 0, runs[0][0], runs[-1][1], False, runs), True, j))
    return out


def test_column_blocks_that_share_no_byte_meet_no_other():
    """probe_u: the blocks' hulls all overlapped, so every pair met (quadratic edges and time:
    a 4,096-block store took 18.7 s to schedule); by their runs, none meets another."""
    entries = _column_blocks(300)
    edges: set[tuple[int, int]] = set()
    _order_edges(entries, edges)
    assert not edges
    # a later store of a row across every block meets each of them
    row0 = (0, 300 * 2048)
    entries.append((("", 0, row0[0], row0[1], False, None), True, 300))
    _order_edges(entries, edges)
    graph = nx.DiGraph(edges)
    assert all(nx.has_path(graph, j, 300) for j in range(300))
