"""``verifyAntiDependence``: recompute each dep's kind from the footprints and compare.

The expected kind of "Y waits for X" is read off the bytes the two share, over every
instance pair the dep orders: each instance of Y with each instance of X it waits on *and
every earlier instance of X* (the instances of one instruction complete in order, so a wait
on ``X[k-1]`` also orders ``X[k-2]``; that is how a distance-1 loop-carried dep orders a
conflict two iterations back, and such a conflict is what gives the dep its kind):

* a byte X writes and Y reads: ``RAW`` -> :attr:`EdgeKind.FLOW`;
* a byte both write: ``WAW`` -> :attr:`EdgeKind.OUTPUT`;
* a byte X reads and Y writes: ``WAR`` -> :attr:`EdgeKind.ANTI`;
* no shared byte: :attr:`EdgeKind.ORDERED`.

The computed kind is the *maximum* over every conflicting byte, because that is how edges
are stored (``DepGraph``'s max-merge: a pair that is both RAW and WAR is one Flow edge).  A
label that differs from it, stronger or weaker, is a finding, as in the seed
(``"Inconsistent dependence labeling on:" / "computed:" / "labeled:"``).

>>> from machine.ir import Access, Dep, Instruction, MemoryKind, Program, Tensor
>>> t = {"t": Tensor("t", MemoryKind.SBUF, "float32", (128, 4), partition=0, offset=0)}
>>> body = (Instruction("w", "dve", "memset", writes=(Access("t"),)),
...         Instruction("r", "act", "tensor_copy", reads=(Access("t"),), writes=(Access("t"),),
...                     deps=(Dep("w", EdgeKind.ANTI),)))
>>> [f.message for f in verify_anti_dependence(Program(t, body))]
['Inconsistent dependence labeling on: w -> r computed: flow labeled: anti']
"""

from __future__ import annotations

from dataclasses import dataclass

from machine.edges import KIND_NAMES, EdgeKind
from machine.geometry import footprint, overlap
from machine.ir import Program
from machine.unroll import unroll

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


def computed_kinds(program: Program) -> dict[tuple[str, int], _Evidence]:
    """``(waiter, dep index) -> evidence`` of the kind each dep's footprints give."""
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

    out: dict[tuple[str, int], _Evidence] = {}
    for inst in unrolled:
        for k, dep in enumerate(inst.instr.deps):
            key = (inst.instr.name, k)
            best = out.get(key, _NONE)
            if best.kind == EdgeKind.FLOW:
                continue
            last = unrolled.resolve_wait(inst, dep)
            if last is None:
                out[key] = best
                continue
            # Waiting for an instance of X also orders every earlier instance of X (they
            # complete in order on one engine): a distance-1 loop-carried dep is how a
            # conflict two or more iterations back is ordered, and its label comes from it.
            for target in unrolled.ids_of(dep.on):
                if target > last:
                    break
                best = _strongest(best, prints(target), prints(inst.id), unrolled[target].name, inst.name)
                if best.kind == EdgeKind.FLOW:
                    break
            out[key] = best
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
            ev = evidence.get((instr.name, k), _NONE)
            if ev.kind != dep.kind:
                findings.append(LabelFinding(dep.on, instr.name, dep.loop_carried, ev.kind, dep.kind,
                                             ev.first, ev.second, ev.memory, ev.partitions, ev.bytes))
    return tuple(findings)
