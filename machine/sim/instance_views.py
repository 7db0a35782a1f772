"""Where each instance's accesses lie in memory, computed once per instruction.

:func:`~neuronsim.machine.sim.memory.access_view` places one access of one instance from
scratch (its extent, element shape, strides and dtype, then the loop shift); the functional
runs ask it for every access of every instance, and for a tiled kernel of thousands of
instances that was a quarter of the sequential run's cost beyond the numerics (issue 31).
Everything but the shift is the same for all instances of an instruction, and the shift moves
the view's byte offset linearly (bytes, plus partitions times the row width), so
:class:`InstanceViews` keeps each access's view at iteration zero and adds the shift.

>>> from neuronsim.machine.formats.program_json import load_program
>>> from neuronsim.machine.sim.memory import initial_memory
>>> from neuronsim.machine.sim.plan import build_plan
>>> plan = build_plan(load_program("examples/matmul_k_loop.json"))
>>> layout = initial_memory(plan.program, plan.spec).dram_layout
>>> fast = InstanceViews(plan, layout)
>>> all(fast.of(i) == plan.views(i, layout) for i in range(len(plan)))
True
"""

from __future__ import annotations

from neuronsim.machine.ir.identity import IdentityMemo
from neuronsim.machine.ir.program import Access, MemoryKind, Tensor
from neuronsim.machine.model.geometry import iteration_shift
from neuronsim.machine.sim.memory import AccessView, DramLayout, access_view
from neuronsim.machine.sim.plan import Plan

__all__ = ["InstanceViews"]

# One access of one instruction: its tensor, the access, its view at iteration zero, the
# bytes a partition step moves, the shift at iteration zero, and whether it ever moves.
_Static = tuple[Tensor, Access, AccessView, int, tuple[int, int], bool]


class InstanceViews:
    """The read and write :class:`AccessView` s of each instance of ``plan`` (equal to
    :meth:`Plan.views`), with the per-instruction part cached."""

    __slots__ = ("plan", "dram", "_static", "_by_id", "_by_access", "_rows")

    def __init__(self, plan: Plan, dram: DramLayout) -> None:
        self.plan = plan
        self.dram = dram
        self._static: dict[int, tuple[list[_Static], list[_Static], bool]] = {}
        # An unrolled kernel's instances are instructions of their own that mostly repeat a
        # few accesses (ring slots, PSUM banks): each distinct access is placed once, found
        # by the object first (machine/ir/identity.py), then by value.
        self._by_id: IdentityMemo[_Static] = IdentityMemo()
        self._by_access: dict[Access, _Static] = {}
        self._rows = {MemoryKind.SBUF: dram.sbuf_row, MemoryKind.PSUM: dram.psum_row}

    def _placed(self, access: Access) -> _Static:
        return self._by_id.get(access, self._by_value)

    def _by_value(self, access: Access) -> _Static:
        found = self._by_access.get(access)
        if found is None:
            tensor = self.plan.program.tensors[access.tensor]
            moves = bool(access.per_iteration or access.partitions_per_iteration or tensor.rotate is not None)
            found = self._by_access[access] = (
                tensor, access, access_view(tensor, access, {}, self.plan.spec, self.dram),
                self._rows.get(tensor.memory, 0), iteration_shift(tensor, access, {}), moves)
        return found

    def _statics(self, instr) -> tuple[list[_Static], list[_Static], bool]:
        placed = self._placed
        reads, writes = [placed(a) for a in instr.reads], [placed(a) for a in instr.writes]
        return reads, writes, any(s[5] for s in reads) or any(s[5] for s in writes)

    def of(self, i: int) -> tuple[list[AccessView], list[AccessView]]:
        """Read and write views of instance ``i``."""
        inst = self.plan.unrolled[i]
        instr = inst.instr
        if not inst.loops:  # its instruction's only instance (a flattened kernel's): no shift, no cache
            placed = self._placed
            return [placed(a)[2] for a in instr.reads], [placed(a)[2] for a in instr.writes]
        statics = self._static.get(id(instr))
        if statics is None:
            statics = self._static[id(instr)] = self._statics(instr)
        reads, writes, moves = statics
        if not moves:
            return [s[2] for s in reads], [s[2] for s in writes]
        iteration = inst.iteration
        return [_shifted(s, iteration) for s in reads], [_shifted(s, iteration) for s in writes]


def _shifted(static: _Static, iteration: dict[str, int]) -> AccessView:
    tensor, access, view, row, (moved0, pmoved0), moves = static
    if not moves:
        return view
    moved, pmoved = iteration_shift(tensor, access, iteration)
    delta = (moved - moved0) + (pmoved - pmoved0) * row
    if not delta:
        return view
    return AccessView(view.space, view.offset + delta, view.shape, view.strides, view.dtype, view.tensor)
