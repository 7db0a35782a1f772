"""Shared helpers of the tests, moved from tests/property/test_reduction_gen.py."""

from __future__ import annotations
import random
import networkx as nx
from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.ir.program import SEQUENCERS, Dep, Instruction, Program
from neuronsim.machine.order.unroll import Unrolled, unroll
from neuronsim.passes.dep_reduction import InstanceWaits


def hb_digraph(program: Program, unrolled: Unrolled | None = None, waits=None):
    """``(graph, wait_edges, structural_edges)``; waits default to every dep target instance."""
    unrolled = unrolled or unroll(program)
    graph = nx.DiGraph()
    structural, wait_edges = set(), set()
    last_seq: dict[str, int] = {}
    last_queue: dict[str, int] = {}

    def edge(u, v, bucket):
        graph.add_edge(u, v)
        bucket.add((u, v))

    for inst in unrolled:
        i, instr = inst.id, inst.instr
        edge((i, "T"), (i, "S"), structural)
        edge((i, "S"), (i, "E"), structural)
        prev = last_seq.get(instr.engine)
        if prev is not None:
            kind = "T" if unrolled[prev].instr.is_dma else "E"  # rule 2 / rule 1
            edge((prev, kind), (i, "T"), structural)
        last_seq[instr.engine] = i
        if instr.is_dma:
            q = instr.queue or "dma0"
            if q in last_queue:
                edge((last_queue[q], "E"), (i, "S"), structural)  # rule 3
            last_queue[q] = i
        targets = ([t for dep in instr.deps for t in unrolled.wait_targets(inst, dep)]
                   if waits is None else waits[i])
        for t in targets:
            edge((t, "E"), (i, "T"), wait_edges)  # rule 4
    return graph, wait_edges, structural


def nx_kept_waits(program: Program, waits=None) -> set[tuple[int, int]]:
    """``(target, waiter)`` instance pairs whose wait survives networkx's reduction."""
    graph, wait_edges, structural = hb_digraph(program, waits=waits)
    reduced = nx.transitive_reduction(graph)
    return {(u[0], v[0]) for u, v in reduced.edges if (u, v) in wait_edges and (u, v) not in structural}


def kept_pairs(waits: InstanceWaits, redundant) -> set[tuple[int, int]]:
    return {(waits.target[k], y) for y in range(len(waits.start) - 1) for k in waits.waits_of(y) if not redundant[k]}


def chain_program() -> Program:
    """``c`` waits on ``a`` and ``b``; ``b`` already waited on ``a`` (three engines).

    The wait ``c -> a`` is implied through the *later* target ``b``: the exact fold drops it,
    the seed's program-order fold tests ``a`` before it has merged ``b``'s clock and keeps it.
    """
    return Program({}, (
        Instruction("a", "pe", "op_a"),
        Instruction("b", "act", "op_b", deps=(Dep("a"),)),
        Instruction("c", "dve", "op_c", deps=(Dep("a"), Dep("b"))),
    ))


def random_program(n: int, seed: int, *, window: int = 12, max_deps: int = 3, dma_share: float = 0.3) -> Program:
    """``n`` instructions on random sequencers (DMAs on random queues), each with up to
    ``max_deps`` deps of random kinds on instructions among the previous ``window``."""
    rng = random.Random(seed)
    kinds = list(EdgeKind)[1:]
    body = []
    for i in range(n):
        engine = rng.choice(SEQUENCERS)
        dma = rng.random() < dma_share
        count = rng.randint(0, min(i, max_deps))
        formers = rng.sample(range(max(0, i - window), i), min(count, i - max(0, i - window)))
        deps = tuple(Dep(f"i{j}", rng.choice(kinds)) for j in sorted(formers))
        body.append(Instruction(f"i{i}", engine, "dma_copy" if dma else "op", deps=deps,
                                queue=f"dma{rng.randrange(3)}" if dma else None))
    return Program({}, tuple(body))

