"""``dep-reduction{window=async}``: ``procAsync``'s edges, the async window (bank B) and the
redundant-async remover, against the exact clocks and networkx; the arch gate."""

from __future__ import annotations

import networkx as nx
import pytest

from neuronsim.machine.ir.program import Dep, Instruction, Program
from neuronsim.machine.order.stream import InstanceStream
from neuronsim.machine.order.unroll import unroll
from neuronsim.passes.analysis.asyncwindow import proc_async, redundant_waits_window
from neuronsim.passes.dep_reduction import DepReduction, instance_waits, redundant_waits
from neuronsim.passes.pipeline import PassContext, parse_pipeline
from neuronsim_tests.reduction_kit import chain_program, kept_pairs, random_program

SEEDS = range(40)


def dma(name: str, engine: str, queue: str, *deps: str) -> Instruction:
    return Instruction(name, engine, "dma_copy", queue=queue, deps=tuple(Dep(d) for d in deps))


def op(name: str, engine: str, *deps: str) -> Instruction:
    return Instruction(name, engine, "op", deps=tuple(Dep(d) for d in deps))


def nx_kept_from_proc_async(program: Program) -> set[tuple[int, int]]:
    """networkx's reduction of the happens-before graph whose rules 2-3 edges are procAsync's
    (rule 1 and each instance's T -> S -> E written here): the kept wait pairs."""
    unrolled = unroll(program)
    graph = nx.DiGraph()
    waits, structural = set(), set()
    last: dict[str, int] = {}
    for inst in unrolled:
        i = inst.id
        graph.add_edge((i, "T"), (i, "S"))
        graph.add_edge((i, "S"), (i, "E"))
        prev = last.get(inst.instr.engine)
        if prev is not None and not unrolled[prev].instr.is_dma:  # rule 1 (rule 2 is procAsync's)
            graph.add_edge((prev, "E"), (i, "T"))
            structural.add(((prev, "E"), (i, "T")))
        last[inst.instr.engine] = i
        for dep in inst.instr.deps:
            for t in unrolled.wait_targets(inst, dep):
                graph.add_edge((t, "E"), (i, "T"))
                waits.add(((t, "E"), (i, "T")))
    async_edges = proc_async(InstanceStream(program)).hb_edges()
    graph.add_edges_from(async_edges)
    structural.update(async_edges)
    reduced = nx.transitive_reduction(graph)
    return {(u[0], v[0]) for u, v in reduced.edges if (u, v) in waits and (u, v) not in structural}


def test_proc_async_lists_the_issue_and_queue_edges():
    program = Program({}, (dma("a", "sp", "dma0"), op("b", "act"), dma("c", "act", "dma0"), op("d", "sp"),
                           dma("e", "sp", "dma1"), dma("f", "act", "dma0")))
    edges = proc_async(InstanceStream(program))
    assert edges.issue == ((0, 3), (2, 5)) and edges.queue == ((0, 2), (2, 5))


@pytest.mark.parametrize("seed", SEEDS)
def test_window_with_the_exact_fold_agrees_with_the_clocks_and_networkx(seed):
    program = random_program(40, seed, dma_share=0.5)
    waits = instance_waits(program)
    exact = redundant_waits(waits)
    window, in_window, removed = redundant_waits_window(waits)
    assert window == exact  # entry for entry: the remover finds nothing the exact fold kept
    assert not any(removed)
    assert kept_pairs(waits, window) == nx_kept_from_proc_async(program)


@pytest.mark.parametrize("seed", SEEDS)
def test_window_with_the_seeds_fold_lies_between_the_seeds_fold_and_exact(seed):
    program = random_program(40, seed, dma_share=0.5)
    waits = instance_waits(program)
    exact = redundant_waits(waits)
    seed_fold = redundant_waits(waits, "program-order")
    window, in_window, removed = redundant_waits_window(waits, "program-order")
    for k in range(len(exact)):
        assert seed_fold[k] <= window[k] <= exact[k]
        assert not removed[k] or (in_window[k] and not seed_fold[k])  # the remover reads bank B


def test_the_remover_recovers_an_earlier_transfer_of_one_queue_in_the_window():
    # sp triggers x1 then x2 on dma0, then y (on sp) waits on both: x1 was in y's window and
    # completes before x2 starts (rule 3), so the wait on x1 is redundant; the seed's
    # program-order fold tests x1 before merging x2's record and keeps it, the remover drops it
    program = Program({}, (dma("x1", "sp", "dma0"), dma("x2", "sp", "dma0"), op("y", "sp", "x1", "x2")))
    waits = instance_waits(program)
    assert list(redundant_waits(waits, "program-order")) == [0, 0]
    redundant, in_window, removed = redundant_waits_window(waits, "program-order")
    assert (list(redundant), list(in_window), list(removed)) == ([0, 1], [1, 1], [0, 1])
    assert list(redundant_waits_window(waits, "program-order", remover=False)[0]) == [0, 0]
    assert list(redundant_waits(waits)) == [0, 1]


def test_the_seeds_answer_is_weaker_than_exact_outside_the_window():
    # The seed's window answer misses (1) a transfer the waiter never knew was triggered
    # (act triggered x1, x2; y on dve): not in its window, so the remover leaves it, and (2)
    # a wait implied through another engine (chain_program): no async op at all.
    program = Program({}, (dma("x1", "act", "dma0"), dma("x2", "act", "dma0"), op("y", "dve", "x1", "x2")))
    waits = instance_waits(program)
    redundant, in_window, removed = redundant_waits_window(waits, "program-order")
    assert list(in_window) == [0, 0] and list(redundant) == [0, 0]
    assert list(redundant_waits(waits)) == [0, 1]  # exact: x1 is implied through x2
    chain = instance_waits(chain_program())
    assert list(redundant_waits_window(chain, "program-order")[0]) == [0, 0, 0] != list(redundant_waits(chain))


def test_pass_options_window_and_arch_gate():
    program = Program({}, (dma("x1", "sp", "dma0"), dma("x2", "sp", "dma0"), op("y", "sp", "x1", "x2")))
    (seed_mode,) = parse_pipeline("dep-reduction{fold=program-order,window=async}")
    ctx = PassContext()
    out = seed_mode.apply(program, ctx)
    assert [d.on for d in out.instruction_map()["y"].deps] == ["x2"]
    (plain,) = parse_pipeline("dep-reduction{fold=program-order}")
    assert [d.on for d in plain.apply(program, PassContext()).instruction_map()["y"].deps] == ["x1", "x2"]
    gated = PassContext()
    assert DepReduction(arch=10).apply(program, gated) is program
    assert gated.stats["dep-reduction"] == {"skipped-arch": 1}
    assert DepReduction(arch=20).apply(program, PassContext()) != program
    with pytest.raises(ValueError, match="window"):
        DepReduction(window="sync")
