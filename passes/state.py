"""The pipeline state: what the passes of one pipeline run hand each other.

A :class:`PipelineState` holds a program as three parts, so that a pass that changes one
part leaves the others (and what was computed from them) to the next pass:

``structure``
    the program's tensors, loops and instructions (a :class:`~neuronsim.machine.ir.program.Program`);
``deps``
    its instruction-level deps as a :class:`~neuronsim.machine.order.deptable.DepTable`;
``stream``
    its :class:`~neuronsim.machine.order.stream.InstanceStream` (built from the structure and the
    placements, never from the deps).

A dependence pass returns ``state.with_deps(table)``: no instruction object is rebuilt (at a
million instructions that rebuild costs more than the pass), the stream is shared.  An
allocation returns ``state.with_placements(tensors)``: the stream keeps its layout and
compiles its accesses again.  Anything else returns ``state.with_structure(program)``.  Each
says in :attr:`PipelineState.changed` what differs from the state it came from, and
verification between passes (:mod:`neuronsim.passes.verification`) checks only that.

The state is a value: nothing is looked up by object identity.  Its stream, its dep table
(when the deps are still those written in the structure) and :attr:`PipelineState.program`
are computed when first asked for and kept with it.

Examples
--------
>>> from neuronsim.machine.ir.program import Dep, Instruction, Program
>>> from neuronsim.machine.order.deptable import DepTable
>>> p = Program({}, (Instruction("a", "pe", "x"), Instruction("b", "act", "y", deps=(Dep("a"),))))
>>> s = PipelineState.of(p)
>>> len(s.deps), sorted(s.changed)
(1, ['deps', 'placements', 'structure'])
>>> t = s.with_deps(DepTable.empty())
>>> sorted(t.changed), t.stream is s.stream, t.program.body[1].deps
(['deps'], True, ())
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from neuronsim.machine.ir.program import Program, Tensor
from neuronsim.machine.model.presets import MachineSpec, resolve_machine
from neuronsim.machine.order.deptable import DepTable, write_deps
from neuronsim.machine.order.stream import InstanceStream

__all__ = ["PipelineState", "STRUCTURE", "PLACEMENTS", "DEPS", "EVERYTHING"]

STRUCTURE, PLACEMENTS, DEPS = "structure", "placements", "deps"
#: What a state made from a whole program changed: everything (verification checks it all).
EVERYTHING = frozenset({STRUCTURE, PLACEMENTS, DEPS})


@dataclass(frozen=True, slots=True)
class PipelineState:
    """A program between passes: structure, deps and instance stream (see the module doc).

    ``table`` is the deps when they differ from those written in ``structure``'s instructions
    (None: those are the deps).  Build states with :meth:`of` and the ``with_*`` methods.
    """

    structure: Program
    spec: MachineSpec
    changed: frozenset[str] = EVERYTHING
    table: DepTable | None = None
    _made: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, program: Program, spec: MachineSpec | None = None) -> PipelineState:
        """The state of a whole program (everything counts as changed)."""
        return cls(structure=program, spec=spec or resolve_machine(program.machine))

    def _kept(self, key: str, make) -> Any:
        value = self._made.get(key)
        if value is None:
            value = self._made[key] = make()
        return value

    @property
    def stream(self) -> InstanceStream:
        """The instance stream of the structure (its ``program`` is :attr:`structure`, whose
        written deps may be out of date: resolve waits with :attr:`deps`)."""
        return self._kept("stream", self._new_stream)

    def _new_stream(self) -> InstanceStream:
        stream = InstanceStream(self.structure, self.spec)
        stream.share_accesses(self._made.pop("before", None))  # the input's, when its accesses are these
        return stream

    @property
    def deps(self) -> DepTable:
        """The program's deps."""
        if self.table is not None:
            return self.table
        return self._kept("deps", lambda: DepTable.of_program(self.structure, self.stream))

    @property
    def dep_count(self) -> int:
        """How many deps the program has (without building a table when none is at hand)."""
        if self.table is not None or "deps" in self._made:
            return len(self.deps)
        if "stream" in self._made:  # its instruction list: no walk of the tree
            return sum(len(inst.deps) for inst in self.stream.instrs)
        return sum(len(inst.deps) for inst, _ in self.structure.instructions())

    @property
    def program(self) -> Program:
        """The whole program, its deps written into its instructions (built once per state)."""
        if self.table is None:
            return self.structure
        return self._kept("program", lambda: write_deps(self.structure, self.table))

    def listed_deps(self) -> dict[tuple[str, str, bool], int]:
        """``(instruction, on, loop-carried) -> kind`` of the deps :attr:`program` lists, in its
        order (of equal keys, the last).  Read from the table when the state has one and its
        stream: a pass that counts deps then needs no program with them written in (writing
        makes an object per changed instruction; the pipeline writes its final deps once)."""
        if self.table is None or "stream" not in self._made:
            return {(i.name, d.on, d.loop_carried): d.kind for i, _ in self.program.instructions() for d in i.deps}
        names = [inst.name for inst in self.stream.instrs]
        table = self.table
        order, _ = table.by_waiter(len(names))  # the order write_deps lists them in
        rows = zip(table.waiter[order].tolist(), table.former[order].tolist(), (table.distance[order] > 0).tolist(),
                   table.kind[order].tolist())
        return {(names[y], names[x], carried): kind for y, x, carried, kind in rows}

    def with_deps(self, table: DepTable) -> PipelineState:
        """The same structure and placements with exactly the deps of ``table`` (over this
        state's instruction ids)."""
        return PipelineState(structure=self.structure, spec=self.spec, changed=frozenset({DEPS}), table=table,
                             _made={"stream": self.stream})

    def with_placements(self, tensors: Mapping[str, Tensor]) -> PipelineState:
        """The same body and deps over ``tensors`` (placements changed, as by an allocation)."""
        structure = self.structure.with_tensors(tensors)
        made = {"stream": self.stream.for_placement(structure)}
        if self.table is None and "deps" in self._made:
            made["deps"] = self._made["deps"]
        return PipelineState(structure=structure, spec=self.spec, changed=frozenset({PLACEMENTS}), table=self.table,
                             _made=made)

    def with_structure(self, program: Program) -> PipelineState:
        """A new program (anything may have changed; a stream of this state's already built
        lends its compiled accesses when the new one's are the same objects)."""
        made = {"before": self._made["stream"]} if "stream" in self._made else {}
        return PipelineState(structure=program, spec=self.spec, _made=made)

    def changed_since(self, earlier: PipelineState) -> PipelineState:
        """This state, saying what changed since ``earlier`` for a pass that ran several steps
        (each of which says only what it changed): everything when the structure is another
        object, else what this state already says."""
        if self.structure is earlier.structure:
            return self
        return PipelineState(structure=self.structure, spec=self.spec, table=self.table, _made=self._made)

    def changed_together(self, earlier: PipelineState) -> PipelineState:
        """This state, saying what changed since ``earlier`` over the passes between, of which
        its own ``changed`` says only the last: everything when the structure is another object
        (as :meth:`changed_since`), else the deps when the table is another."""
        if self.structure is not earlier.structure:
            return self.changed_since(earlier)
        changed = self.changed | ({DEPS} if self.table is not earlier.table else frozenset())
        return PipelineState(structure=self.structure, spec=self.spec, changed=frozenset(changed), table=self.table,
                             _made=self._made)

    def unchanged(self) -> PipelineState:
        """This state, saying that nothing changed (a pass that returned its input)."""
        return PipelineState(structure=self.structure, spec=self.spec, changed=frozenset(), table=self.table,
                             _made=self._made)

    def after(self, given: Program, result: Program, preserves: frozenset[str] = frozenset()) -> PipelineState:
        """The state after a pass that was handed ``given`` (this state's :attr:`program`) and
        returned ``result``; ``preserves`` is what the pass declares it leaves alone
        (:attr:`neuronsim.passes.base.Pass.preserves`).

        A body equal to the one given (value equality) means the structure and the deps are
        unchanged; then equal tensors mean nothing changed, else the placements did.  A pass
        that preserves the structure and the placements changed only deps, read from its
        result's instructions."""
        if result.machine == given.machine and result.extras == given.extras \
                and result.tensors.keys() == given.tensors.keys():  # (a tensor dropped or added: structure)
            if result.body == given.body:
                if result.tensors == given.tensors:
                    return self.unchanged()
                return self.with_placements(result.tensors)
            if {STRUCTURE, PLACEMENTS} <= preserves:
                return self.with_deps(DepTable.of_program(result, self.stream))
        return self.with_structure(result)
