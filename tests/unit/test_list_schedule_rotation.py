"""The scheduler's extent of a kept loop's access to a rotating tile covers every slot the loop
reaches, not only the first and last iterations' (probe_u: a loop of odd trips ends on slot 0,
so its extent missed slot 1; the scheduler moved another tile's use of slot 1's bytes across
the loop, and nki BASED attention's den rows came out 2.8 off at sequence 8192, where the
schedule keeps loops rather than flattening them)."""

from __future__ import annotations

import networkx as nx
import numpy as np

from neuronsim.machine.build.builder import KernelBuilder
from neuronsim.machine.model.cost import CostMemo
from neuronsim.machine.model.presets import resolve_machine
from neuronsim.machine.sim.simulator import simulate
from neuronsim.passes.list_schedule import _conflict_edges, _FlatExtents, _summarize
from neuronsim.passes.pipeline import PassContext, run_pipeline
from neuronsim.passes.schedule import Schedule


def _program():
    """``t`` (slot 1's bytes) set to 5, then a loop of 3 trips writing 1 into a tile rotating
    over 2 slots (iteration 1 writes ``t``'s bytes), then ``y`` <- ``t``: 1 in program order."""
    kb = KernelBuilder("rotation")
    y = kb.dram_output("y", (128, 16), "float32")
    t = kb.sbuf("t", (128, 16), "float32", partition=0, offset=64)
    r = kb.sbuf("r", (128, 16), "float32", partition=0, offset=0, slots=2, loop="i", stride=64)
    kb.memset(t, 5.0)
    with kb.loop("i", 3):
        kb.memset(r, 1.0)
    kb.dma_copy(y, t)
    return kb.program()


def test_a_loop_of_odd_trips_conflicts_with_its_second_slot():
    program = _program()
    spec = resolve_machine(program.machine)
    costs, flat = CostMemo(program.tensors, spec), _FlatExtents(program)
    info = [_summarize(program, node, (), costs, flat) for node in program.body]
    graph = nx.DiGraph(_conflict_edges(program, info))
    assert nx.has_path(graph, 0, 1) and nx.has_path(graph, 1, 2)


def test_the_loop_kept_and_scheduled_computes_what_program_order_does():
    program = _program()
    scheduled = run_pipeline(program, (Schedule(flatten=False),), PassContext(verify=False))
    for prog in (program, scheduled):
        out = simulate(prog, seeds=[None]).runs[0].outputs["y"]
        assert np.all(out == 1.0)
