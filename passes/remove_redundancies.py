"""``remove-redundancies``: drop deps that other deps or engine order already imply (pass 75).

Runs between the two builders and prunes the Flow graph: a dep is redundant when, for every
instance it makes wait, the order it asks for (``E(target) <= T(waiter)``, rule 4) already
follows from the spec's rules 1-3 and the *other* deps.

Mode ``paths`` (default) decides this exactly with vector clocks over the instances
(:mod:`passes.analysis.clocks`), the transitive-reduction scheme of the performance notes: an
instance's wait targets are visited latest first, and a target is implied iff its completion
position is already covered by the sequencer's clock and the completion clocks of the later
targets (only a later target can imply an earlier one, and completions of one engine are in
program order).  A dep is dropped iff it is implied at *every* instance it resolves for.

Soundness: the instance-level waits form a DAG (each points backwards); a wait implied by a
path of length >= 2 can be removed, and removing any set of such waits together keeps
reachability (a longest path between two nodes never uses a removable wait).  Instance
waits are judged against the full graph, and a dep goes only when all its waits are
removable, so every happens-before order of the input survives.  Orders that reach only the
*start* of a DMA (rule 3: ``E <= S``) do not imply a wait, which orders the *trigger*.

Mode ``engine`` only drops what rule 1 gives directly: deps on a non-DMA instruction of the
waiter's own sequencer (the sequencer completes it before triggering anything after it).

Contract
    requires: a valid program.
    guarantees: deps are a subset of the input's; the happens-before relation over trigger,
    start and end events of all instances is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from machine.edges import DepGraph
from machine.ir import Program

from passes.analysis.clocks import Clocks
from passes.analysis.instances import Stream
from passes.pipeline import Pass, PassContext, graph_rows, with_graph

__all__ = ["RemoveRedundancies", "redundant_edges"]


def redundant_edges(stream: Stream, graph: DepGraph, mode: str = "paths") -> list[tuple[str, str, bool]]:
    """``(waiter, former, loop_carried)`` of every dep implied by the others (see module)."""
    infos, by_name = stream.infos, stream.by_name
    edges = [(by_name[waiter], by_name[former], bool(flag))
             for flag, rows in enumerate(graph_rows(graph)) for waiter, row in rows.items() for former in row]
    if mode == "engine":
        return [(infos[y].name, infos[x].name, lc) for y, x, lc in edges
                if not infos[x].is_dma and infos[x].seq == infos[y].seq]
    if mode != "paths":
        raise ValueError(f"mode must be 'paths' or 'engine', got {mode!r}")
    deps_of: list[list[int]] = [[] for _ in infos]
    for e, (y, _, _) in enumerate(edges):
        deps_of[y].append(e)
    needed = bytearray(len(edges))
    clocks = Clocks(stream.spec.dma_queues, len(stream))
    end, pos, join, resolve = clocks.end, clocks.pos, clocks.join, stream.resolve
    inst_instr = stream.inst_instr
    comp_of = [info.comp for info in infos]
    has_loops = stream.has_loops
    first_of = [info.first for info in infos]
    seq_clock, finish = clocks.seq, clocks.finish
    for b in range(len(stream)):
        y = inst_instr[b]
        info = infos[y]
        trigger = seq_clock[info.seq]
        mine = deps_of[y]
        if mine:
            if has_loops:
                targets = [(t, e) for t, e in ((resolve(b, y, edges[e][1], edges[e][2]), e) for e in mine) if t >= 0]
            else:
                targets = [(first_of[edges[e][1]], e) for e in mine]
            if len(targets) > 1:
                targets.sort(reverse=True)
            for t, e in targets:
                if pos[t] > trigger[comp_of[inst_instr[t]]]:
                    needed[e] = 1
                    trigger = join(trigger, end[t])
        finish(b, info.seq, info.comp, info.is_dma, trigger)
    return [(infos[y].name, infos[x].name, lc) for e, (y, x, lc) in enumerate(edges) if not needed[e]]


@dataclass(frozen=True, slots=True)
class RemoveRedundancies(Pass):
    """Drop deps that the other deps and the engines' order already imply.

    Contract
        requires: a valid program.
        guarantees: the deps are a subset of the input's, and happens-before over the trigger,
        start and end of every instance is unchanged (``mode=paths`` drops every dep implied
        at all its instances; ``mode=engine`` only those rule 1 implies).
    """

    name: ClassVar[str] = "remove-redundancies"
    mode: str = "paths"

    def __post_init__(self) -> None:
        if self.mode not in ("paths", "engine"):
            raise ValueError(f"mode must be 'paths' or 'engine', got {self.mode!r}")

    def apply(self, program: Program, ctx: PassContext) -> Program:
        stream = ctx.stream(program)
        graph = ctx.take_graph(program)
        dropped = redundant_edges(stream, graph, self.mode)
        infos, by_name = stream.infos, stream.by_name
        for waiter, former, lc in dropped:
            graph.remove_dependency(waiter, former, lc)
            same_engine = not infos[by_name[former]].is_dma and infos[by_name[former]].seq == infos[by_name[waiter]].seq
            ctx.count(self.name, "removed_engine_order" if same_engine else "removed_path")
        ctx.count(self.name, "kept", len(graph))
        out = with_graph(program, graph, stream.by_name, {waiter for waiter, _, _ in dropped})
        ctx.carry_stream(program, out)
        ctx.keep_graph(out, graph)
        return out
