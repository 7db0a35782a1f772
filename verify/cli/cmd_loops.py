"""``neuronsim loops PROGRAM [--json]``: per-loop dependence graphs, distances and fusion verdicts.

The human view follows the seed's debug dump (``viewDependenceGraph``): per loop its defs and
uses, then one line per (def, use) pair of one tensor with ``dependent``, the distance and the
direction vectors, then the loop's distance cache.  It ends with the verdict on every pair of
adjacent loops (what ``fuse-loops`` would do first), and the nesting levels.  ``--json``
writes ``{"format": "neuronsim.loops/1", "levels", "loops", "fusion"}``.  Exit 0, or 2 for
unusable input.
"""

from __future__ import annotations

from collections import Counter
from math import gcd

import click

from neuronsim.machine.formats.program_json import load_program
from neuronsim.passes.analysis.distance import AccessSite, same_location
from neuronsim.passes.analysis.program_index import ProgramIndex
from neuronsim.passes.fuse_loops import candidate_pairs, check_fusion
from neuronsim.passes.analysis.loopgraph import LoopGraph, instructions_by_level, loop_dependence_graphs

from neuronsim.verify.cli.common import (UsageFailure, emit_json, guard_size, json_option, program_argument,
                                         run_command, size_options)

FORMAT = "neuronsim.loops/1"
#: Access pairs the distance kernel may run on before ``loops`` refuses (each costs about a
#: millisecond: the default keeps a refused run's would-be time under a minute).
DEFAULT_MAX_PAIRS = 50_000


def _describe(site: AccessSite) -> str:
    a = site.access
    parts = [f"{site.label}  tensor {a.tensor}"]
    if a.partitions is not None:
        parts.append(f"partitions {list(a.partitions)}")
    if a.offset:
        parts.append(f"offset {a.offset}")
    if a.pattern is not None:
        parts.append(f"pattern {[list(p) for p in a.pattern]}")
    if a.per_iteration:
        parts.append("per_iteration {" + ", ".join(f"{k}: {v}" for k, v in a.per_iteration) + "}")
    return "  ".join(parts)


def _vector(v: tuple[int, ...]) -> str:
    return "[" + ", ".join(f"{x:+d}" if x else "0" for x in v) + "]"


def render_graph(graph: LoopGraph, verbose: bool = True) -> list[str]:
    """The lines of one loop: its header and dependent pairs; with ``verbose`` the seed-like
    debug dump (``(DEBUG)`` lines: every def, use and pair, and the distance cache)."""
    parents = ", ".join(graph.parents) or "-"
    lines = [f"loop {graph.loop}: trip count {graph.trip_count}, depth {graph.depth}, parents {parents}, "
             f"niters {graph.niters}"]
    tag = "(DEBUG) " if verbose else ""
    if verbose:
        lines += [f"  (DEBUG) def = {_describe(s)}" for s in graph.defs]
        lines += [f"  (DEBUG) use = {_describe(s)}" for s in graph.uses]
    for pair in graph.pairs:
        r = pair.result
        if not verbose and not r.dependent:
            continue
        line = (f"  {tag}def -> use: {pair.defn.label} -> {pair.use.label} ({pair.defn.access.tensor}), "
                f"dependent = {str(r.dependent).lower()}")
        if r.dependent:
            vectors = " ".join(_vector(v) for v in pair.directions) + ("" if pair.complete else " ...")
            line += f", distance = {r.distance}, distance vector over [{', '.join(pair.common)}] = {vectors}"
            if r.witness is not None:
                w = r.witness
                line += f", e.g. {w.first_instance} -> {w.second_instance} at {w.where()}"
        lines.append(line)
    if not graph.pairs:
        lines.append("  no def and use of one tensor")
    elif not verbose:
        if not any(p.result.dependent for p in graph.pairs):
            lines.append(f"  no dependent pair among {len(graph.pairs)} (-v shows them)")
    else:
        lines.append("  distance cache:")
        for site, row in graph.cache.items():
            cells = ", ".join(f"{other.label}: {d}" for other, d in row.items())
            lines.append(f"    {site.label}: {{{cells}}}")
    return lines


def _located_pairs(index: ProgramIndex, a: Counter, b: Counter) -> int:
    """Access pairs of two nodes on one location (with these tensor counts): the pairs the
    distance kernel may run on, an upper bound (the roles are not told apart)."""
    tensors = index.program.tensors
    return sum(na * nb for ta, na in a.items() for tb, nb in b.items() if same_location(tensors[ta], tensors[tb]))


def analysis_pairs(index: ProgramIndex, candidates) -> int:
    """The access pairs ``loops`` compares, counted per tensor without running the kernel:
    per loop, the defs and uses of one tensor name; per candidate pair with a shared factor,
    the two loops' sites on one location, and each loop's against the nodes between them.
    Inherently quadratic in the accesses of one loop, so refused past ``--max-pairs``."""
    counted: dict[str, Counter] = {}

    def counts(name: str) -> Counter:  # each node's accesses per tensor, counted once
        if name not in counted:
            defs, uses = index.node_sites(name)
            counted[name] = Counter(site.access.tensor for site in (*defs, *uses))
        return counted[name]

    total = 0
    for name in index.loops:
        defs, uses = index.node_sites(name)
        written = Counter(site.access.tensor for site in defs)
        total += sum(written[site.access.tensor] for site in uses)
    for a, b in candidates:
        if gcd(a.trip_count, b.trip_count) == 1 and a.trip_count != b.trip_count:
            continue  # refused on trip counts alone
        ca, cb = counts(a.name), counts(b.name)
        total += _located_pairs(index, ca, cb)
        first, second = index.places[a.name], index.places[b.name]
        block = first.loops[-1].body if first.loops else index.program.body
        for node in block[first.position + 1:second.position]:
            cn = counts(node.name)
            if cn:
                total += _located_pairs(index, ca, cn) + _located_pairs(index, cb, cn)
    return total


@click.command()
@program_argument
@json_option
@click.option("-v", "--verbose", is_flag=True, help="Also the debug dump: every def, use and pair (\"(DEBUG)\" "
                                                       "lines) and the distance cache.")
@click.option("--max-pairs", type=click.IntRange(min=1), default=DEFAULT_MAX_PAIRS, show_default=True, metavar="N",
              help="Refuse programs whose loops make more access pairs for the distance analysis (checked first).")
@size_options
@run_command
def loops(program: str, as_json: bool, verbose: bool, max_pairs: int, max_instances: int,
          max_memory: int | None) -> int:
    """Show each loop's dependent def/use pairs and the fusion verdicts (-v: the debug dump)."""
    prog = load_program(program)
    guard_size(prog, max_instances=max_instances, max_memory=max_memory)  # the distances tile every instance
    index = ProgramIndex.of(prog)  # one walk: every loop and pair below looks names up in it
    candidates = candidate_pairs(prog)
    pairs = analysis_pairs(index, candidates)
    if pairs > max_pairs:
        raise UsageFailure(f"the loops make {pairs:,} access pairs for the distance analysis to compare; the limit is "
                           f"{max_pairs:,}: raise it with --max-pairs N", "--max-pairs")
    graphs = loop_dependence_graphs(prog, index=index)
    verdicts = [check_fusion(prog, a.name, b.name, index=index) for a, b in candidates]
    levels = instructions_by_level(prog)
    if as_json:
        emit_json({"format": FORMAT, "levels": {str(k): list(v) for k, v in levels.items()},
                   "loops": [g.to_json() for g in graphs], "fusion": [v.to_json() for v in verdicts]})
        return 0
    lines = [] if graphs else ["no loops"]
    for graph in graphs:
        lines += render_graph(graph, verbose)
    if verdicts:
        lines.append("fusion of the loops within the window (8 positions):")
        lines += [f"  {verdict.message}" for verdict in verdicts]
    lines.append("nesting levels: " + "; ".join(f"{k}: {', '.join(v)}" for k, v in levels.items()))
    click.echo("\n".join(lines))  # one write: a line at a time made 10,000 loops' 90,000 lines slow
    return 0
