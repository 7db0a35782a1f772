"""``remove-redundancies``: hand-written cases and happens-before preserved (networkx oracle)."""

from __future__ import annotations

from dataclasses import replace

import networkx as nx
from hypothesis import given

from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.ir.program import Dep
from neuronsim_tests.oracles import hb_graph
from neuronsim_tests.passes_kit import compiled, dep_set, dr, ins, loop, prog, sb
from neuronsim.verify.strategies import programs


def with_deps(program, table):
    """``table``: waiter -> [(on, loop_carried)]."""
    return program.map_instructions(
        lambda i: replace(i, deps=tuple(Dep(on, EdgeKind.FLOW, lc) for on, lc in table.get(i.name, ()))))


def _tensors():
    return [sb("t"), sb("u", offset=256), sb("v", offset=512), dr("src", 0, 128 * 64)]


def test_engine_order_makes_a_same_sequencer_dep_redundant():
    p = with_deps(prog(_tensors(), ins("a", "dve", "memset", writes=["t"]),
                       ins("b", "dve", "tensor_copy", reads=["t"], writes=["u"])),
                  {"b": [("a", False)]})
    for mode in ("engine", "paths"):
        out, ctx = compiled(p, f"remove-redundancies{{mode={mode}}}")
        assert dep_set(out) == set()
        assert ctx.stats["remove-redundancies"]["removed_engine_order"] == 1


def test_a_dep_implied_by_a_path_goes():
    p = with_deps(prog(_tensors(), ins("a", "dve", "memset", writes=["t"]),
                       ins("b", "act", "activation", reads=["t"], writes=["u"]),
                       ins("c", "pool", "tensor_copy", reads=["u"], writes=["v"])),
                  {"b": [("a", False)], "c": [("b", False), ("a", False)]})
    out, ctx = compiled(p, "remove-redundancies")
    assert dep_set(out) == {("b", "a", "flow", False), ("c", "b", "flow", False)}
    assert ctx.stats["remove-redundancies"]["removed_path"] == 1
    kept, _ = compiled(p, "remove-redundancies{mode=engine}")
    assert len(dep_set(kept)) == 3


def test_a_dma_start_order_does_not_imply_a_wait():
    # rule 3 orders the second transfer's start after the first one's end, but a wait orders
    # its trigger: POOL's memset after the second DMA relies on that
    p = with_deps(prog(_tensors(), ins("d1", "sp", "dma_copy", reads=["src"], writes=["t"], queue="dma0"),
                       ins("d2", "pool", "dma_copy", reads=["src"], writes=["u"], queue="dma0"),
                       ins("m", "pool", "memset", writes=["t"])),
                  {"d2": [("d1", False)]})
    out, _ = compiled(p, "remove-redundancies")
    assert dep_set(out) == {("d2", "d1", "flow", False)}


def test_a_loop_carried_dep_needed_in_some_iterations_stays():
    p = with_deps(prog(_tensors(), loop("i", 3, ins("a", "act", "activation", reads=["t"], writes=["u"]),
                                         ins("b", "dve", "memset", writes=["t"]))),
                  {"a": [("b", True)], "b": [("a", False)]})
    out, _ = compiled(p, "remove-redundancies")
    assert dep_set(out) == {("a", "b", "flow", True), ("b", "a", "flow", False)}


def test_a_loop_carried_dep_that_never_resolves_goes():
    p = with_deps(prog(_tensors(), loop("i", 1, ins("a", "act", "activation", reads=["t"], writes=["u"]),
                                         ins("b", "dve", "memset", writes=["t"]))),
                  {"a": [("b", True)]})
    out, _ = compiled(p, "remove-redundancies")
    assert dep_set(out) == set()


def _closure(program):
    graph = hb_graph(program)
    return {node: frozenset(nx.descendants(graph, node)) for node in graph}


@given(programs(deps="random", max_instructions=8, max_trip=3))
def test_happens_before_is_unchanged(program):
    out, _ = compiled(program, "remove-redundancies")
    assert dep_set(out) <= dep_set(program)
    assert _closure(out) == _closure(program)


@given(programs(deps="sequential", max_instructions=8, max_trip=3))
def test_happens_before_is_unchanged_on_fully_ordered_programs(program):
    out, _ = compiled(program, "remove-redundancies")
    assert _closure(out) == _closure(program)
    assert len(dep_set(out)) <= len(dep_set(program))
