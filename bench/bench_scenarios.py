"""Every shipped scenario with its loops kept beside the same kernel fully expanded.

Issue #12 asks that the default pipeline keep exactly the minimum of waits on real loop
kernels *with the loops kept*, and that what this costs or buys in time be visible.  For every
scenario (:func:`neuronsim.verify.app.scenario_runs.all_scenarios`) and two allocations, ``alloc`` (loop-body
tiles multi-buffered) and ``alloc{rotate=false}`` (one placement per tensor), this prints:

* ``instances``: instruction instances of the program;
* ``waits before / after / minimum``: instance-level waits after dependence construction
  (``alloc,build-fdeps,remove-redundancies,anti-deps``), after ``dep-reduction``, and the
  spec's minimum for the placed program (:mod:`neuronsim.verify.sync_counts`); ``kept/min`` is their
  ratio (below 1 when deps order pairs through instructions that do not conflict);
* ``kept ns``: the nominal makespan (timing-only simulation) of the loop program after the
  default pipeline;
* ``expanded ns``: the same for the fully expanded program: ``expand-scheduling-units``
  first, then the same pipeline (its waits are printed too), and ``kept/exp``, the ratio of
  the two makespans.  Expanding first also means ``alloc`` sees no loops, so it cannot
  multi-buffer: under ``alloc`` the ratio shows what keeping the loops buys overall, under
  ``alloc{rotate=false}`` (the same placements either way) what it costs in sync alone.

``expand-scheduling-units`` refuses a rotating placement (``x-rotate``: its loop is gone after
expansion), so :func:`expand_fully` materializes the slots first: each slot becomes a tensor
of its own at its bytes and each instance names the slot its iteration uses; instances,
bytes and program order are unchanged.

``--waits SCENARIO`` lists the instances whose waits differ between the two (same count of
waits, but a wait placed on an earlier waiter or on a later producer instance, costs time).

Usage::

    .venv/bin/python bench/bench_scenarios.py              # the table
    .venv/bin/python bench/bench_scenarios.py --markdown   # the README's table
    .venv/bin/python bench/bench_scenarios.py --only mamba,transpose2d
    .venv/bin/python bench/bench_scenarios.py --waits allocated_fused_linear
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType

from neuronsim.machine.ir.program import Instruction, Loop, Node, Program
from neuronsim.machine.sim.simulator import simulate
from neuronsim.passes import CONSTRUCTION_PIPELINE, compile_program
from neuronsim.passes.expand_scheduling_units import expand_scheduling_units
from neuronsim.verify.app.scenario_runs import all_scenarios, scenario_name
from neuronsim.verify.sync_counts import sync_report

ALLOCATIONS = ("alloc", "alloc{rotate=false}")


def _instances(nodes: tuple[Node, ...], iteration: Mapping[str, int]) -> Iterator[tuple[Instruction, dict]]:
    """Every instruction instance in program order, with its loop indices."""
    for node in nodes:
        if isinstance(node, Loop):
            for k in range(node.trip_count):
                yield from _instances(node.body, {**iteration, node.name: k})
        else:
            yield node, dict(iteration)


def expand_fully(program: Program) -> Program:
    """``expand-scheduling-units``: every loop unrolled, each slot of a rotating placement a
    tensor of its own placed at its bytes (slot 0 keeps the name).

    >>> from neuronsim.machine.build.builder import KernelBuilder
    >>> kb = KernelBuilder("k")
    >>> x = kb.dram_input("x", (384, 4), "float32")
    >>> t = kb.sbuf("t", (128, 4), "float32", partition=0, offset=0, slots=2, loop="i")
    >>> with kb.loop("i", 3) as i:
    ...     _ = kb.dma_copy(t, x.tile(i, 128), name="ld")
    >>> flat = expand_fully(kb.program())
    >>> [(inst.name, inst.writes[0].tensor) for inst in flat.body]
    [('ld[0]', 't'), ('ld[1]', 't@1'), ('ld[2]', 't')]
    >>> flat.tensors["t@1"].offset, flat.tensors["t"].rotate
    (16, None)
    """
    return expand_scheduling_units(program)


@dataclass(frozen=True, slots=True)
class Figures:
    """One program through one allocation and the default pipeline."""

    instances: int
    before: int
    after: int
    minimum: int
    makespan_ns: float

    @property
    def ratio(self) -> float:
        """Kept waits per wait of the minimum."""
        return self.after / self.minimum if self.minimum else 1.0


def figures(program: Program, allocation: str) -> Figures:
    """Sync counts and nominal makespan of ``program`` after ``allocation`` and the default
    dependence pipeline (construction, then ``dep-reduction``)."""
    construction = CONSTRUCTION_PIPELINE.replace("alloc", allocation, 1)
    constructed, _ = compile_program(program, construction)
    final, _ = compile_program(constructed, "dep-reduction")
    before, after = sync_report([("constructed", constructed), ("final", final)], simulate=False).stages
    makespan = simulate(final, functional=False).trace.makespan
    return Figures(sum(1 for _ in _instances(program.body, {})), before.figures.waits, after.figures.waits,
                   after.minimum.figures.waits, makespan)


@dataclass(frozen=True, slots=True)
class Row:
    scenario: str
    allocation: str
    kept: Figures
    expanded: Figures

    @property
    def speedup(self) -> float:
        """Kept makespan over expanded makespan (below 1: keeping the loops is faster)."""
        return self.kept.makespan_ns / self.expanded.makespan_ns


def scenario_rows(module: ModuleType, allocations: tuple[str, ...] = ALLOCATIONS) -> list[Row]:
    """The figures of one scenario, loops kept and fully expanded, under each allocation."""
    program = module.build()
    flat = expand_fully(program)
    return [Row(scenario_name(module), allocation, figures(program, allocation), figures(flat, allocation))
            for allocation in allocations]


HEADER = ("scenario", "allocation", "instances", "waits before / after / minimum", "kept/min", "kept ns",
          "expanded ns", "expanded waits after / min", "kept/exp")
COMPACT = ("scenario", "instances", "waits before / after / min", "kept/min", "kept ns", "expanded ns", "kept/exp",
           "rotate=false: waits after / min", "kept ns", "expanded ns", "kept/exp")


def cells(row: Row) -> tuple[str, ...]:
    k, x = row.kept, row.expanded
    return (row.scenario, row.allocation, str(k.instances), f"{k.before} / {k.after} / {k.minimum}",
            f"{k.ratio:.3f}", f"{k.makespan_ns:,.0f}", f"{x.makespan_ns:,.0f}", f"{x.after} / {x.minimum}",
            f"{row.speedup:.2f}")


def compact_cells(multi: Row, single: Row) -> tuple[str, ...]:
    """One scenario on one line: ``alloc`` figures, then the ``alloc{rotate=false}`` ones."""
    k, s = multi.kept, single.kept
    return (f"`{multi.scenario}`", str(k.instances), f"{k.before} / {k.after} / {k.minimum}", f"{k.ratio:.3f}",
            f"{k.makespan_ns:,.0f}", f"{multi.expanded.makespan_ns:,.0f}", f"{multi.speedup:.2f}",
            f"{s.after} / {s.minimum}", f"{s.makespan_ns:,.0f}", f"{single.expanded.makespan_ns:,.0f}",
            f"{single.speedup:.2f}")


def wait_targets(program: Program) -> dict[str, list[str]]:
    """Instance name -> the instances it waits for (its deps resolved per instance)."""
    from neuronsim.machine.order.deptable import dep_table
    from neuronsim.machine.order.stream import stream_of

    stream = stream_of(program)
    waits = stream.resolve(dep_table(program, stream))
    name = stream.instance_name
    return {name(i): sorted(name(int(t)) for t in waits.target[waits.ptr[i]:waits.ptr[i + 1]])
            for i in range(len(stream))}


def wait_differences(module: ModuleType, allocation: str) -> list[str]:
    """The instances whose waits differ between the loop program and the expanded one after
    ``allocation`` and the default pipeline (the same instances, named alike)."""
    program = module.build()
    pipeline = CONSTRUCTION_PIPELINE.replace("alloc", allocation, 1) + ",dep-reduction"
    kept = wait_targets(compile_program(program, pipeline)[0])
    flat = wait_targets(compile_program(expand_fully(program), pipeline)[0])
    return [f"{inst}: kept waits for {kept[inst] or 'nothing'}, expanded for {flat[inst] or 'nothing'}"
            for inst in kept if kept[inst] != flat[inst]]


def _print(table: list[tuple[str, ...]], markdown: bool, left: int) -> None:
    if markdown:
        print("| " + " | ".join(table[0]) + " |")
        print("|" + "|".join("---" if i < left else "---:" for i in range(len(table[0]))) + "|")
        for line in table[1:]:
            print("| " + " | ".join(line) + " |")
        return
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    for line in table:
        print("  ".join(c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="one line per scenario, as a Markdown table")
    parser.add_argument("--only", default="", help="comma-separated scenario names")
    parser.add_argument("--waits", metavar="SCENARIO", help="list the instances whose waits differ between the "
                        "loop program and the expanded one (under --allocation)")
    parser.add_argument("--allocation", default="alloc{rotate=false}",
                        help="allocation for --waits (default: one placement per tensor, the same in both)")
    args = parser.parse_args()
    if args.waits:
        from neuronsim.verify.app.scenario_runs import get_scenario

        found = wait_differences(get_scenario(args.waits), args.allocation)
        print("\n".join(found) or "the same waits, instance for instance")
        return
    wanted = {name for name in args.only.split(",") if name}
    per_scenario = [scenario_rows(module) for module in all_scenarios()
                    if not wanted or scenario_name(module) in wanted]
    if args.markdown:
        _print([COMPACT, *(compact_cells(*rows) for rows in per_scenario)], True, 1)
    else:
        _print([HEADER, *(cells(row) for rows in per_scenario for row in rows)], False, 2)


if __name__ == "__main__":
    main()
