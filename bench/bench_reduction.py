"""Benchmark: dep_reduction against networkx and a plain integer vector clock, in one run.

    .venv/bin/python bench/bench_reduction.py                  # 1e4, 1e5, 1e6 + networkx at 5e3 nodes
    .venv/bin/python bench/bench_reduction.py --sizes 10000 --nx-nodes 2000 --no-program

Workload (performance notes, 1.1, on the spec's machine): N instances, each issued by one of
the five sequencers, 30 % of them DMA transfers on one of three queues; each waits on 1-3
random instances among the previous 256, and 1 % also on one anywhere earlier.  Program order
is topological; sequencer and queue order are rules 1-3.

Timed, on the same instance-level waits:

* ``ours``: :func:`neuronsim.passes.dep_reduction.redundant_waits` (frontier clocks of the SyncState);
* ``syncstate``: :func:`neuronsim.testing.reduction.redundant_waits_syncstate` (the seed's two BitMap
  banks, per instance);
* ``plain``: a plain integer vector clock written here, independently (lists, ``map(max)``),
  with the same rules (a DMA's sequencer keeps its trigger clock);
* ``networkx``: ``transitive_reduction`` over the trigger / start / end graph of rules 1-4, on
  a prefix of the workload with ``--nx-nodes`` graph nodes (a non-DMA's trigger is its start),
  against ``ours`` on the same prefix: same workload lists in, same kept-wait set out, both
  best of ``--repeat``, building each one's input (the networkx graph; our positions and
  waits) timed apart from the reduction, and the ratio printed for the reduction alone and
  for both together.

Every method's kept wait set is checked identical to ``ours``.  ``program`` times the whole
pass on a :class:`~neuronsim.machine.ir.program.Program` (unrolling, wait resolution, reduction, rebuilding the
deps).  Garbage collection is off inside ``ours``; ``plain`` runs with it off too.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time

import networkx as nx

from neuronsim.machine.ir.program import SEQUENCERS, Dep, Instruction, Program
from neuronsim.machine.order.stream import InstanceStream
from neuronsim.passes.dep_reduction import dep_reduction, redundant_waits, waits_from_targets
from neuronsim.testing.reduction import redundant_waits_syncstate

QUEUES = 3
WIDTH = len(SEQUENCERS) + QUEUES


def workload(n: int, seed: int = 1, window: int = 256):
    """``(issuer, is_dma, queue, waits)`` lists for ``n`` instances."""
    rng = random.Random(seed)
    issuer, is_dma, queue, waits = [], [], [], []
    for i in range(n):
        issuer.append(rng.randrange(len(SEQUENCERS)))
        dma = rng.random() < 0.3
        is_dma.append(dma)
        queue.append(rng.randrange(QUEUES) if dma else -1)
        targets = set()
        if i:
            lo = max(0, i - window)
            for _ in range(rng.randint(1, 3)):
                targets.add(rng.randrange(lo, i))
            if rng.random() < 0.01:
                targets.add(rng.randrange(i))
        waits.append(sorted(targets))
    return issuer, is_dma, queue, waits


def stream_of_workload(issuer, is_dma, queue) -> InstanceStream:
    """The instance stream of the workload's instances (no deps: the waits are given apart)."""
    return InstanceStream(as_program(issuer, is_dma, queue, [[] for _ in issuer]))


def plain_vector_clock(issuer, is_dma, queue, waits, join="map") -> set[tuple[int, int]]:
    """Independent baseline: kept ``(target, waiter)`` pairs with list clocks.

    ``clock[e]`` = completions of engine ``e`` known (a count); ``done[x]`` the clock at E(x).
    """
    nseq = len(SEQUENCERS)
    comp = [nseq + q if d else s for s, d, q in zip(issuer, is_dma, queue)]
    count = [0] * WIDTH
    seq_clock = [[0] * WIDTH for _ in range(nseq)]
    queue_clock = [[0] * WIDTH for _ in range(QUEUES)]
    done: list = [None] * len(issuer)
    pos = [0] * len(issuer)
    kept = set()
    for y in range(len(issuer)):
        u = seq_clock[issuer[y]]
        for x in reversed(waits[y]):  # latest first
            if pos[x] > u[comp[x]]:
                kept.add((x, y))
                u = list(map(max, u, done[x])) if join == "map" else [a if a > b else b for a, b in zip(u, done[x])]
        e = comp[y]
        count[e] += 1
        pos[y] = count[e]
        if is_dma[y]:
            seq_clock[issuer[y]] = u
            c = list(map(max, u, queue_clock[queue[y]]))
            c[e] = count[e]
            queue_clock[queue[y]] = c
        else:
            c = list(u)
            c[e] = count[e]
            seq_clock[issuer[y]] = c
        done[y] = c
    return kept


def networkx_graph(issuer, is_dma, queue, waits):
    """The happens-before graph of rules 1-4 over trigger / start / end events (a non-DMA's
    trigger is its start), with the wait edges and the rule-1/2 edges a wait may double."""
    graph = nx.DiGraph()
    last_seq: dict[int, int] = {}
    last_queue: dict[int, int] = {}
    wait_edges, rule1 = set(), set()
    for y in range(len(issuer)):
        t = (y, "T") if is_dma[y] else (y, "S")
        if is_dma[y]:
            graph.add_edge(t, (y, "S"))
        graph.add_edge((y, "S"), (y, "E"))
        prev = last_seq.get(issuer[y])
        if prev is not None:
            edge = ((prev, "T"), t) if is_dma[prev] else ((prev, "E"), t)  # rule 2 / rule 1
            graph.add_edge(*edge)
            rule1.add(edge)
        last_seq[issuer[y]] = y
        if is_dma[y]:
            if queue[y] in last_queue:
                graph.add_edge((last_queue[queue[y]], "E"), (y, "S"))  # rule 3
            last_queue[queue[y]] = y
        for x in waits[y]:
            graph.add_edge((x, "E"), t)  # rule 4
            wait_edges.add(((x, "E"), t))
    return graph, wait_edges, rule1


def networkx_reduce(built) -> set[tuple[int, int]]:
    """Kept ``(target, waiter)`` waits of ``networkx.transitive_reduction`` on the built graph."""
    graph, wait_edges, rule1 = built
    reduced = nx.transitive_reduction(graph)
    # a wait that doubles a rule-1 edge is structure, not a kept wait
    return {(u[0], v[0]) for u, v in reduced.edges if (u, v) in wait_edges and (u, v) not in rule1}


def networkx_kept(issuer, is_dma, queue, waits) -> set[tuple[int, int]]:
    """Kept ``(target, waiter)`` waits of ``networkx.transitive_reduction`` (rules 1-4)."""
    return networkx_reduce(networkx_graph(issuer, is_dma, queue, waits))


def ours_build(issuer, is_dma, queue, waits):
    """Our input from the same workload: the instance stream and the instance-level waits."""
    return waits_from_targets(stream_of_workload(issuer, is_dma, queue), waits)


def kept_of(waits_obj, redundant) -> set[tuple[int, int]]:
    start, target = waits_obj.start, waits_obj.target
    return {(target[k], y) for y in range(len(start) - 1) for k in range(start[y], start[y + 1]) if not redundant[k]}


def as_program(issuer, is_dma, queue, waits) -> Program:
    body = tuple(
        Instruction(f"i{y}", SEQUENCERS[issuer[y]], "dma_copy" if is_dma[y] else "op",
                    deps=tuple(Dep(f"i{x}") for x in waits[y]), queue=f"dma{queue[y]}" if is_dma[y] else None)
        for y in range(len(issuer)))
    return Program({}, body)


def timed(fn, *args, gc_off: bool = False, **kwargs):
    if gc_off:
        gc.disable()
    try:
        started = time.perf_counter()
        out = fn(*args, **kwargs)
        return out, time.perf_counter() - started
    finally:
        gc.enable()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--nx-nodes", type=int, default=5_000)
    parser.add_argument("--syncstate-max", type=int, default=1_000_000, help="largest size for the BitMap-bank path")
    parser.add_argument("--no-program", action="store_true", help="skip the end-to-end pass timing")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs in the networkx comparison")
    args = parser.parse_args(argv)

    print(f"{'N':>9} {'waits':>9} {'kept':>8} {'ours s':>8} {'plain s':>8} {'ours/plain':>10} "
          f"{'list-comp':>9} {'syncstate s':>11} {'program s':>9}")
    for n in args.sizes:
        issuer, is_dma, queue, waits = workload(n, args.seed)
        wobj = waits_from_targets(stream_of_workload(issuer, is_dma, queue), waits)
        redundant, ours = timed(redundant_waits, wobj)
        kept = kept_of(wobj, redundant)
        plain, t_plain = timed(plain_vector_clock, issuer, is_dma, queue, waits, gc_off=True)
        plain_lc, t_plain_lc = timed(plain_vector_clock, issuer, is_dma, queue, waits, "listcomp", gc_off=True)
        assert plain == kept == plain_lc, "plain vector clock disagrees"
        sync = "-"
        if n <= args.syncstate_max:
            (red2, _), t_sync = timed(redundant_waits_syncstate, wobj)
            assert red2 == redundant, "syncstate path disagrees"
            sync = f"{t_sync:.3f}"
        prog = "-"
        if not args.no_program:
            program = as_program(issuer, is_dma, queue, waits)
            result, t_prog = timed(dep_reduction, program)
            assert result.instance_waits_minimum == len(kept)
            prog = f"{t_prog:.2f}"
            del program, result
        print(f"{n:>9} {len(wobj):>9} {len(kept):>8} {ours:>8.3f} {t_plain:>8.3f} {ours / t_plain:>10.2f} "
              f"{ours / t_plain_lc:>9.2f} {sync:>11} {prog:>9}", flush=True)

    # networkx: the largest prefix of the workload whose graph has at most --nx-nodes nodes.
    # Like with like: both start from the same workload lists, both answer the same question
    # (which waits the transitive reduction keeps, as a set of (target, waiter) pairs), both
    # are timed the same way (best of --repeat), with building the input and reducing timed
    # apart.  networkx gets rules 1-3 as explicit edges; ours applies them inside its clocks.
    issuer, is_dma, queue, waits = workload(args.nx_nodes, args.seed)
    n, nodes = 0, 0
    while n < len(issuer) and nodes + (3 if is_dma[n] else 2) <= args.nx_nodes:
        nodes += 3 if is_dma[n] else 2
        n += 1
    issuer, is_dma, queue, waits = issuer[:n], is_dma[:n], queue[:n], waits[:n]
    best = {}

    def best_of(key, fn, *fn_args):
        out = None
        for _ in range(args.repeat):
            out, t = timed(fn, *fn_args)
            best[key] = min(best.get(key, float("inf")), t)
        return out

    wobj = best_of("ours build", ours_build, issuer, is_dma, queue, waits)
    redundant = best_of("ours reduce", redundant_waits, wobj)
    built = best_of("nx build", networkx_graph, issuer, is_dma, queue, waits)
    reference = best_of("nx reduce", networkx_reduce, built)
    same = reference == kept_of(wobj, redundant)
    graph = built[0]
    print(f"networkx comparison on {n} instances = {graph.number_of_nodes()} event nodes, "
          f"{graph.number_of_edges()} edges ({len(wobj)} waits); best of {args.repeat}:")
    print(f"  build input:   networkx graph {best['nx build'] * 1e3:9.2f} ms   ours (positions + waits) "
          f"{best['ours build'] * 1e3:8.2f} ms")
    print(f"  reduce:        networkx        {best['nx reduce'] * 1e3:9.2f} ms   ours (redundant_waits)   "
          f"{best['ours reduce'] * 1e3:8.2f} ms   -> {best['nx reduce'] / best['ours reduce']:,.0f}x")
    both_nx, both_ours = best["nx build"] + best["nx reduce"], best["ours build"] + best["ours reduce"]
    print(f"  build+reduce:  networkx        {both_nx * 1e3:9.2f} ms   ours                     "
          f"{both_ours * 1e3:8.2f} ms   -> {both_nx / both_ours:,.0f}x")
    print(f"  identical kept set: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
