"""What only an NKI kernel can get wrong: findings located at the kernel's lines.

A program traced from an NKI kernel (``neuronsim.machine.nki``) carries three facts the program format
alone does not: which kept loops were ``nl.affine_range`` (``x-nki-range: "affine"`` on the
loop), which instructions are ``+=`` into a tile (``x-nki-accumulate``), and which tensors the
kernel placed itself (direct allocation: the tensors already placed in the traced program).
The NKI docs say the compiler does not order the iterations of an affine loop (only matmul
accumulation into PSUM may cross them) and that its lifetime checks of directly allocated
tiles may miss races.  neuronsim checks both, exactly, on the instances:

``carried``
    a value flowing across the iterations of an affine loop (the same iteration of the loops
    around it): an instance reads bytes whose last writer, in program order, ran in an earlier
    iteration (an upward-exposed read), other than PSUM accumulation (both instructions
    accumulate into PSUM).  The NKI docs call such a loop unsafe: the compiler reorders and
    overlaps affine iterations as if no value flowed between them.  Two iterations writing the
    same bytes of a tensor declared outside the loop are the same finding with ``WAW`` (the
    errors page's ``err_unexpected_output_dependencies``: which write stays is not defined),
    unless the kernel placed the tensor itself (``allocation``'s).  A tile the kernel creates inside
    the loop body (``x-nki-scope`` on the tensor names the loop; without it, a virtual tensor
    every access of which lies inside the loop) is a new buffer in every iteration: nothing is
    carried through it.  Reported per instruction pair with the smallest iteration distance and
    its witness.  Found by one sweep per tensor (:mod:`neuronsim.verify.nki.carried`).
``sbuf-accumulate`` (a warning)
    the same test when both instructions are ``+=`` into SBUF: an associative reduction.  The
    ``affine_range`` docs say such reductions are no loop-carried dependence (and the fused
    Mamba tutorial accumulates so), an SDK maintainer says ``+=`` works well only for a matmul
    into PSUM: the sources disagree, so it is said, citing both, and fails nothing.  A ``+=``
    into a slice of its own per iteration (``sums[i] += x``) or into a tile made in the body
    is none.
``allocation``
    two placed tensors (the kernel's own placements) on common bytes whose instances the
    compiler's deps leave unordered: the deps are computed as the NKI compiler builds them,
    after allocation, on the bytes the kernel gave its tiles (the compiler's own tiles apart),
    with an affine loop's carried flow deps dropped (the compiler does not order values across
    its iterations), and the placed program is race-checked under them
    (:func:`neuronsim.verify.racecheck.check_program`).  Both lines are named.  A bank or SBUF
    range handed from one kernel tensor to another once the first is dead is therefore ordered
    (the attention tutorial's ``attn_fwd_v9``); what remains wrong is a tile written over
    while the other is live in program order (``clobber``), found by
    :mod:`neuronsim.verify.nki.lifetimes`: wrong whatever the schedule.

``uninitialised`` (a warning, of a kernel run only)
    an instruction reads bytes nothing wrote before it, and the outputs depend on them
    (:mod:`neuronsim.verify.nki.uninitialised`: it runs the kernel, so ``run`` adds it, not
    :func:`nki_findings`).

Every finding names the kernel lines (``x-source``); ``neuronsim run KERNEL.py::FUNC`` exits 1
when there is an error among them (a warning alone fails nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from neuronsim.machine.order.conflicts import conflicts
from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.ir.program import Loop, MemoryKind, Program
from neuronsim.machine.ir.source import instance_label
from neuronsim.machine.order.stream import InstanceStream, stream_of

from neuronsim.verify.nki.carried import (ACCUMULATE_KEY, AFFINE, RANGE_KEY, SCOPE_KEY, has_unrolled_affine,
                                         sweep_loops)
from neuronsim.verify.nki.finding import NkiFinding
from neuronsim.verify.nki.placement import identity_placement as _identity_placement
from neuronsim.verify.nki.control_findings import control_findings
from neuronsim.verify.nki.lifetimes import clobber_findings
from neuronsim.verify.nki.core_races import core_race_findings

__all__ = ["NkiFinding", "nki_findings", "carried_findings", "allocation_findings", "grouped_findings",
           "call_findings", "SCOPE_KEY",
           "AFFINE", "RANGE_KEY", "ACCUMULATE_KEY"]



def _affine_loops(program: Program) -> Iterator[tuple[Loop, int]]:
    """Every affine loop with its depth (loops around it)."""
    for node, loops in program.walk():
        if isinstance(node, Loop) and node.extras.get(RANGE_KEY) == AFFINE:
            yield node, len(loops)


#: Why declaring an HBM tensor inside an affine loop gives its iterations no buffers of their own.
HBM_ONE_BUFFER = ("an HBM tensor is one buffer for every iteration, wherever it is declared: only an SBUF / PSUM "
                  "tile declared in the loop's body is a fresh one each iteration")


def carried_findings(program: Program, stream: InstanceStream | None = None) -> list[NkiFinding]:
    """The ``carried`` findings and ``sbuf-accumulate`` warnings of every affine loop (module
    doc), on the identity placement (:func:`_identity_placement`: two tensors share bytes only
    when they are one, or one DRAM alias group), by :func:`neuronsim.verify.nki.carried.sweep_loops`."""
    stream = stream or stream_of(_identity_placement(program))
    out = []
    for pair in sweep_loops(program, stream):
        first, second = instance_label(stream, pair.writer), instance_label(stream, pair.reader)
        if pair.kind in ("accumulate", "psum-accumulate"):
            out.append(NkiFinding(kind="sbuf-accumulate" if pair.kind == "accumulate" else "psum-accumulate",
                                  dependence="RAW", first=first, second=second, loop=pair.loop,
                                  distance=pair.distance, tensors=pair.tensors, severity="warning"))
        elif pair.kind == "anti":
            out.append(NkiFinding(kind="carried", dependence="WAR", first=first, second=second, loop=pair.loop,
                                  distance=pair.distance, tensors=pair.tensors,
                                  note="a later iteration overwrites bytes an earlier one reads: run in another "
                                       "order, the earlier iteration reads the new value"))
        elif pair.kind == "output" and all(program.tensors[t].memory == MemoryKind.DRAM for t in pair.tensors):
            # (the hint to declare the tile inside the loop misled for an HBM scratch declared there: probe_s)
            out.append(NkiFinding(kind="carried", dependence="WAW", first=first, second=second, loop=pair.loop,
                                  distance=pair.distance, tensors=pair.tensors, note=HBM_ONE_BUFFER))
        else:
            matmuls = stream.instrs[stream.instr[pair.writer]].op == "matmul"
            what = "the matmuls continue one PSUM accumulation" if matmuls else "the += continues one accumulation"
            note = "" if pair.partial is None else (
                f"{what} across its iterations, and {instance_label(stream, pair.partial)} reads it inside the "
                f"loop: each iteration gets the sums of the ones before it (zero the accumulator in the loop's body, "
                f"or declare it there)")
            out.append(NkiFinding(kind="carried", dependence="WAW" if pair.kind == "output" else "RAW",
                                  first=first, second=second, loop=pair.loop, distance=pair.distance,
                                  tensors=pair.tensors, note=note))
    return out


def _tensors_of(stream: InstanceStream, i: int, j: int) -> tuple[str, ...]:
    found = conflicts(stream, i, j)
    names = stream.tensor_names
    return tuple(dict.fromkeys(names[t] for _, pa, pb, _, _ in found for t in (pa.tensor, pb.tensor)))


CONSTRUCTION_PIPELINE = "alloc,build-fdeps,remove-redundancies,anti-deps"


def _by_identity(program: Program, placed: Program) -> Program:
    """``placed`` with the deps the NKI compiler derives from ``program``: on the bytes the
    kernel gave its own tiles, every other tile apart (:func:`_identity_placement` with
    ``kernel_bytes``: the compiler builds its deps after allocation, on addresses), an affine
    loop's carried flow deps dropped (it orders the reuse of storage, never a value flowing
    from one iteration to the next)."""
    from neuronsim.passes import PassContext, run_pipeline

    derived = run_pipeline(_identity_placement(program, kernel_bytes=True), CONSTRUCTION_PIPELINE,
                           PassContext(verify=False))
    affine = {loop.name for loop, _ in _affine_loops(program)}
    loops_of = {inst.name: loops for inst, loops in derived.instructions()}
    deps = {}
    for inst, loops in derived.instructions():
        kept = []
        for dep in inst.deps:
            common = [a for a, b in zip(loops, loops_of[dep.on]) if a.name == b.name]
            if not (dep.loop_carried and dep.kind == EdgeKind.FLOW and common and common[-1].name in affine):
                kept.append(dep)
        deps[inst.name] = tuple(kept)
    # an instruction only the real allocation made (a spill's copy) keeps its own deps
    return placed.map_instructions(lambda inst: replace(inst, deps=deps.get(inst.name, inst.deps)))


def allocation_findings(program: Program) -> list[NkiFinding]:
    """Races between directly allocated tiles (module doc)."""
    from neuronsim.passes import PassContext, run_pipeline

    from neuronsim.verify.racecheck import check_program

    placed_by_kernel = {n for n, t in program.tensors.items() if t.memory != MemoryKind.DRAM and not t.is_virtual}
    if len(placed_by_kernel) < 2:
        return []
    placed = program  # the compiler's own allocations placed apart from the kernel's
    if program.has_virtual_tensors:
        placed = run_pipeline(program, "alloc", PassContext(verify=False))
    ordered = _by_identity(program, placed)
    stream = stream_of(ordered)
    out, seen = [], set()
    for race in check_program(ordered, max_races=10_000).races:
        tensors = _tensors_of(stream, race.first_id, race.second_id)
        rotating = len(tensors) == 1 and ordered.tensors[tensors[0]].rotate is not None  # slots too few
        if not set(tensors) <= placed_by_kernel or not (len(tensors) > 1 or rotating):
            continue
        key = tuple(sorted(tensors))
        if key in seen:
            continue
        seen.add(key)
        out.append(NkiFinding("allocation", race.kind, instance_label(stream, race.first_id),
                              instance_label(stream, race.second_id), tensors=tensors))
    return out


def nki_findings(program: Program, inputs=None, stream: InstanceStream | None = None) -> list[NkiFinding]:
    """Every NKI-specific finding of a traced ``program`` (before compilation); ``inputs``, the
    kernel's input arrays, decide whether two cores' unordered accesses change its outputs
    (:mod:`neuronsim.verify.nki.core_races`; default: the seeded pattern); ``stream``: that of
    its identity placement, when at hand (a run shares it with the ``uninitialised`` check)."""
    if not any(True for _ in _affine_loops(program)) and not has_unrolled_affine(program):
        stream = None  # only the carried findings walk it
    elif stream is None:
        stream = stream_of(_identity_placement(program))
    found = control_findings(program)  # compiled loops' Python state, PSUM accumulation (control_findings.py)
    if stream is not None:
        found += carried_findings(program, stream)
    found += core_race_findings(program, inputs)  # two cores' HBM accesses with no meeting between (core_races.py)
    clobbered = clobber_findings(program)
    pairs = {frozenset(f.tensors) for f in clobbered}
    return found + clobbered + [f for f in allocation_findings(program) if frozenset(f.tensors) not in pairs]



def _line_of(label: str) -> str:
    """A finding's instance label without its iteration: ``+= at k.py:18 [k=0]`` -> ``+= at k.py:18``."""
    head, bracket, _ = label.rpartition(" [") if label.endswith("]") and " [" in label else (label, "", "")
    return head if bracket else label.split("[", 1)[0]


def call_findings(traced) -> tuple[NkiFinding, ...]:
    """The warnings the trace noted at its calls: misspelt keywords and the like
    (:attr:`~neuronsim.machine.nki.frontend.TracedKernel.call_warnings`)."""
    return tuple(NkiFinding(kind, "", where, "", severity="warning", note=message)
                 for where, kind, message in traced.call_warnings)


def grouped_findings(findings: list[NkiFinding] | tuple[NkiFinding, ...],
                     render: Callable[[NkiFinding], str] | None = None) -> list[str]:
    """One line (``render`` of its first finding) per kind of finding on one pair of kernel
    lines, in the order first found, with how many alike it stands for: a kernel's loop nest
    repeats one mistake on many tiles, which is one thing to fix.

    >>> same = [NkiFinding("carried", "RAW", f"add at k.py:9 [i={i}]", f"mul at k.py:12 [i={i + 1}]", loop="i",
    ...                    distance=1, tensors=(f"t{i}",)) for i in range(3)]
    >>> [line[-40:] for line in grouped_findings(same)]
    ['(3 findings of this kind on these lines)']
    """
    if render is None:  # each finding's own describe: a subclass (ControlFinding) has its own sentence
        render = lambda finding: finding.describe()  # noqa: E731
    groups: dict[tuple, list[NkiFinding]] = {}
    for finding in findings:
        key = (finding.kind, finding.dependence, finding.severity, _line_of(finding.first), _line_of(finding.second))
        groups.setdefault(key, []).append(finding)
    return [render(members[0]) + (f" ({len(members)} findings of this kind on these lines)" if len(members) > 1 else "")
            for members in groups.values()]
