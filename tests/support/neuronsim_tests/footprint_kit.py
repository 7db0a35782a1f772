"""Shared helpers of the tests, moved from tests/unit/test_footprint.py."""

from __future__ import annotations
import networkx as nx
from neuronsim.machine.order.unroll import unroll
from neuronsim_tests.oracles import brute_races
from neuronsim_tests.reduction_kit import hb_digraph
from neuronsim.verify.strategies import strip_deps


EDGE_OF_RACE = {"RAW": "flow", "WAW": "output", "WAR": "anti"}


def _oracle_minimum(program):
    """Unordered conflicting pairs by brute force, then networkx's reduction of their waits:
    ``(pairs, kept waits, kept waits by edge kind)``."""
    unrolled = unroll(program)
    ids = {inst.name: inst.id for inst in unrolled}
    races = brute_races(strip_deps(program))
    waits = [[] for _ in unrolled]
    kind_of = {}
    for race in races:
        waits[ids[race[2]]].append(ids[race[1]])
        kind_of[ids[race[1]], ids[race[2]]] = EDGE_OF_RACE[race[0]]
    graph, wait_edges, structural = hb_digraph(program, unrolled, waits)
    reduced = nx.transitive_reduction(graph)
    kept = {(u, v) for u, v in reduced.edges if (u, v) in wait_edges and (u, v) not in structural}
    by_kind = {name: 0 for name in ("flow", "anti", "output", "ordered")}
    for (x, _), (y, _) in kept:  # (E(x), T(y))
        by_kind[kind_of[x, y]] += 1
    return len(races), len(kept), by_kind

