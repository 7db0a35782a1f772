"""``verifyAntiDependence``: recompute each dep's kind from the footprints and compare.

The expected kind of "Y waits for X" is read off the bytes the two share:

* a byte X writes and Y reads: ``RAW`` -> :attr:`EdgeKind.FLOW`;
* a byte both write: ``WAW`` -> :attr:`EdgeKind.OUTPUT`;
* a byte X reads and Y writes: ``WAR`` -> :attr:`EdgeKind.ANTI`;
* no shared byte: :attr:`EdgeKind.ORDERED`.

The computed kind is the *maximum* over every conflicting byte, because that is how edges
are stored (``DepGraph``'s max-merge: a pair that is both RAW and WAR is one Flow edge).  It
is computed over two sets of instance pairs, which bound the right label:

* at least the kind of the pairs the dep waits on directly (each instance of Y with the
  instances of X it names) - a weaker label hides a real dependence;
* at most the kind of every pair the dep orders, which includes the *earlier* instances of X
  too (the instances of one instruction complete in order, so a wait on ``X[k-1]`` also
  orders ``X[k-2]``: that is how a distance-1 loop-carried dep orders a conflict two
  iterations back, and such a conflict may give the dep its kind).

A label outside these bounds is a finding, as in the seed (``"Inconsistent dependence
labeling on:" / "computed:" / "labeled:"``, computed being the bound it breaks).

>>> from neuronsim.machine.ir.program import Access, Dep, Instruction, MemoryKind, Program, Tensor
>>> t = {"t": Tensor("t", MemoryKind.SBUF, "float32", (128, 4), partition=0, offset=0)}
>>> body = (Instruction("w", "dve", "memset", writes=(Access("t"),)),
...         Instruction("r", "act", "tensor_copy", reads=(Access("t"),), writes=(Access("t"),),
...                     deps=(Dep("w", EdgeKind.ANTI),)))
>>> [f.message for f in verify_anti_dependence(Program(t, body))]
['Inconsistent dependence labeling on: w -> r computed: flow labeled: anti']
"""

from __future__ import annotations

from dataclasses import dataclass

from neuronsim.machine.ir.edges import KIND_NAMES, EdgeKind
from neuronsim.machine.model.geometry import footprint, overlap
from neuronsim.machine.ir.program import Program
from neuronsim.machine.order.unroll import unroll

__all__ = ["LabelFinding", "verify_anti_dependence", "computed_kinds"]


@dataclass(frozen=True, slots=True)
class LabelFinding:
    """A dep whose label is not the kind its footprints give."""

    former: str
    waiter: str
    loop_carried: bool
    computed: EdgeKind
    labeled: EdgeKind
    first: str | None
    """Instance of ``former`` whose bytes give the computed kind (None when no byte is shared)."""
    second: str | None
    memory: str | None
    partitions: tuple[int, int] | None
    bytes: tuple[int, int] | None

    @property
    def message(self) -> str:
        return (f"Inconsistent dependence labeling on: {self.former} -> {self.waiter} "
                f"computed: {KIND_NAMES[self.computed]} labeled: {KIND_NAMES[self.labeled]}")

    def to_json(self) -> dict:
        out = {"message": self.message, "former": self.former, "waiter": self.waiter,
               "loop_carried": self.loop_carried, "computed": KIND_NAMES[self.computed],
               "labeled": KIND_NAMES[self.labeled]}
        if self.first is not None:
            out.update(first=self.first, second=self.second, memory=self.memory, bytes=list(self.bytes))
            if self.partitions is not None:
                out["partitions"] = list(self.partitions)
        return out


@dataclass(frozen=True, slots=True)
class _Evidence:
    kind: EdgeKind
    first: str | None = None
    second: str | None = None
    memory: str | None = None
    partitions: tuple[int, int] | None = None
    bytes: tuple[int, int] | None = None


_NONE = _Evidence(EdgeKind.ORDERED)


def computed_kinds(program: Program) -> dict[tuple[str, int], tuple[_Evidence, _Evidence]]:
    """``(waiter, dep index) -> (lower, upper)`` evidence of the kinds each dep's bytes give.

    ``lower``: over the pairs the dep waits on directly (each instance of Y with the
    instances of X it names).  ``upper``: also over every earlier instance of X, which the
    wait orders as well (instances of one instruction complete in order).
    """
    unrolled = unroll(program)
    tensors = program.tensors
    cache: dict[int, list] = {}

    def prints(iid: int) -> list:
        found = cache.get(iid)
        if found is None:
            inst = unrolled[iid]
            iteration = inst.iteration
            found = cache[iid] = [(footprint(tensors[a.tensor], a, iteration), w) for a, w in inst.instr.accesses]
        return found

    out: dict[tuple[str, int], tuple[_Evidence, _Evidence]] = {}
    for inst in unrolled:
        for k, dep in enumerate(inst.instr.deps):
            key = (inst.instr.name, k)
            low, high = out.get(key, (_NONE, _NONE))
            direct = unrolled.wait_targets(inst, dep)
            if low.kind != EdgeKind.FLOW:
                for target in direct:
                    low = _strongest(low, prints(target), prints(inst.id), unrolled[target].name, inst.name)
            high = low if low.kind > high.kind else high
            if direct and high.kind != EdgeKind.FLOW:
                last = max(direct)
                for target in unrolled.ids_of(dep.on):
                    if target > last or high.kind == EdgeKind.FLOW:
                        break
                    high = _strongest(high, prints(target), prints(inst.id), unrolled[target].name, inst.name)
            out[key] = (low, high)
    return out


def _strongest(best: _Evidence, earlier: list, later: list, first: str, second: str) -> _Evidence:
    for fa, wa in earlier:
        for fb, wb in later:
            if not (wa or wb):
                continue
            kind = EdgeKind.FLOW if wa and not wb else EdgeKind.OUTPUT if wa else EdgeKind.ANTI
            if kind <= best.kind:
                continue
            shared = overlap(fa, fb)
            if shared is None:
                continue
            memory = fa.memory.name.lower()
            best = _Evidence(kind, first, second, memory, shared.partition_range, shared.byte_range)
    return best


def verify_anti_dependence(program: Program, kinds: frozenset[EdgeKind] | None = None) -> tuple[LabelFinding, ...]:
    """Findings for every dep (of ``kinds``, default all) whose label differs from its bytes.

    Requires placed tensors.  Guarantees: a finding per mislabelled dep, in program order of
    the waiter, then dep order; none for a dep whose label equals the computed kind.
    """
    if program.has_virtual_tensors:
        raise ValueError("label verification needs placed tensors (run the allocation passes first)")
    evidence = computed_kinds(program)
    findings = []
    for instr, _ in program.instructions():
        for k, dep in enumerate(instr.deps):
            if kinds is not None and dep.kind not in kinds:
                continue
            low, high = evidence.get((instr.name, k), (_NONE, _NONE))
            ev = low if dep.kind < low.kind else high if dep.kind > high.kind else None
            if ev is not None:
                findings.append(LabelFinding(dep.on, instr.name, dep.loop_carried, ev.kind, dep.kind,
                                             ev.first, ev.second, ev.memory, ev.partitions, ev.bytes))
    return tuple(findings)
