"""The cost model: how long each instruction occupies its engine, in nanoseconds.

Formulas are the op table's (:mod:`machine.optable`, sourced from
``../shared/reference/neuron-machine.md`` section 1.4); clocks are the machine's
(:meth:`MachineSpec.clock_ghz`, section 1.3), so ``ns = cycles / GHz``.  ``N`` is the free
size of an access (elements per partition; for DRAM all its elements), and, unless the table
names an operand, the largest ``N`` among the instruction's accesses.

Compute engines
    * PE: ``matmul`` ``max(min(64, M), N)`` cycles with ``M`` the stationary's (``reads[0]``)
      and ``N`` the moving's (``reads[1]``) free size, x4 when either is ``float32``;
      ``transpose`` ``max(P, min(64, F))`` of its input ``[P, F]``.
    * DVE / ACT: the table's formula with the minimum initiation interval as a floor,
      ``max(MIN_II, formula)`` (section 1.4: the formulas hold for ``N > 128`` and an
      instruction never issues faster than ``MIN_II``).  ``tensor_tensor`` is ``2N``, or ``N``
      with a PSUM input or bf16 add / subtract / multiply; ``tensor_tensor_scan`` ``2N`` with
      ``N`` its ``data0``'s free size; ``tensor_reduce`` ``N``, ``N/2`` for bf16 add / max;
      ``bn_aggr`` ``13N/3`` with ``N`` its input's free size; ``memset`` ``N``, ``N/2``
      zero-filling a 2-byte dtype; ``set_rand_state`` ``64``; everything else (``bn_stats``,
      ``tensor_scalar`` with one or two operators alike) ``N``.  An ``activation`` with a fused
      reduction (``reduce_op``) adds ``MIN_II`` after the floor, the ``ActReadAccumulator``
      instruction (``max(MIN_II, N) + MIN_II``).
    * POOL: ``GPSIMD_START + work`` (section 1.4, "GPSIMD_START ~ 150 cycles"; ``work`` is the
      formula above without the floor, e.g. ``150 + 2N`` for ``tensor_tensor``);
      ``set_rand_state`` stays ``64``.
    * Opaque ops: ``max(64, N)`` on any engine.
    * ``attrs.cycles`` replaces the formula on every op.

DMA (section 2.3-2.4)
    * Transfer on the queue: ``dma_fixed_ns + bytes / dma_bytes_per_ns`` with ``bytes`` the
      larger of the bytes read and written (a casting copy moves both) and the bandwidth of a
      transfer spread over all DMA engines (16 x 17 B/ns on trn1).  Hardware DGE (``dge:
      hwdge``) adds ``HWDGE_NS`` to the transfer (the DGE block's ~600 ns per instruction,
      which "can overlap earlier ACT compute", so not on the sequencer).  ``attrs.cycles``
      on a DMA is its whole transfer time in ns (a notional 1 GHz DMA clock).
    * Trigger on the sequencer: ``MIN_II`` cycles of the sequencer (a DMA trigger is an
      ordinary control instruction of its stream), plus ``SWDGE_NS`` when POOL generates the
      descriptors (``dge: swdge``, section 2.4; the compiler's PerfSim charges 700 ns,
      *unconfirmed*).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from math import prod

from machine.ir import Access, Instruction, MemoryKind, Tensor
from machine.sim.memory import access_shape
from machine.optable import OP_TABLE
from machine.presets import MachineSpec

__all__ = ["OpCost", "instruction_cost", "free_size", "HWDGE_NS", "SWDGE_NS"]

#: Hardware DGE time per DMA instruction [2.4] ("~600 ns per DMA instruction").
HWDGE_NS = 600.0
#: Software DGE descriptor generation on POOL [1.4 PerfSim constants, unconfirmed].
SWDGE_NS = 700.0

_TWO_BYTE_FLOATS = ("bfloat16", "float16")


@dataclass(frozen=True, slots=True)
class OpCost:
    """Cost of one instruction (every instance of it costs the same)."""

    duration_ns: float
    """Compute time on the engine, or a DMA's transfer time on its queue."""
    issue_ns: float = 0.0
    """A DMA's trigger time on its sequencer (0 for compute instructions)."""
    cycles: float = 0.0
    """Engine cycles behind ``duration_ns`` (compute instructions)."""
    bytes: int = 0
    """Bytes a DMA moves (0 for compute instructions)."""


def free_size(tensor: Tensor, access: Access) -> int:
    """Elements per partition (SBUF / PSUM) or in all (DRAM) of an access.

    >>> from machine.ir import Tensor, Access, MemoryKind
    >>> t = Tensor("t", MemoryKind.SBUF, "float32", (128, 64), partition=0, offset=0)
    >>> free_size(t, Access("t")), free_size(t, Access("t", pattern=((8, 4), (1, 2))))
    (64, 8)
    """
    shape = access_shape(tensor, access)
    return prod(shape) if tensor.memory == MemoryKind.DRAM else prod(shape[1:])


def _bytes(tensors: Mapping[str, Tensor], accesses: tuple[Access, ...]) -> int:
    return sum(prod(access_shape(tensors[a.tensor], a)) * tensors[a.tensor].itemsize for a in accesses)


def _work_cycles(instr: Instruction, tensors: Mapping[str, Tensor], spec: MachineSpec) -> tuple[float, bool]:
    """Cycles of the op's formula and whether the MIN_II / GPSIMD_START rule applies."""
    op, attrs = instr.op, instr.attrs
    accesses = (*instr.reads, *instr.writes)
    n = max((free_size(tensors[a.tensor], a) for a in accesses), default=1)
    if op not in OP_TABLE:  # opaque
        return float(max(spec.min_ii_cycles, n)), False
    if op == "matmul":
        stationary, moving = (tensors[a.tensor] for a in instr.reads[:2])
        m = free_size(stationary, instr.reads[0])
        cycles = max(min(64, m), free_size(moving, instr.reads[1]))
        fp32 = "float32" in (stationary.dtype, moving.dtype)
        return float(cycles * (4 if fp32 else 1)), False
    if op == "transpose" and instr.engine == "pe":
        source = tensors[instr.reads[0].tensor]
        p = access_shape(source, instr.reads[0])[0]
        return float(max(p, min(64, free_size(source, instr.reads[0])))), False
    if op == "set_rand_state":
        return float(spec.min_ii_cycles), False
    if op == "tensor_tensor":
        inputs = [tensors[a.tensor] for a in instr.reads]
        psum_input = any(t.memory == MemoryKind.PSUM for t in inputs)
        bf16_fast = attrs.get("op", "add") in ("add", "subtract", "multiply") and all(
            tensors[a.tensor].dtype == "bfloat16" for a in accesses)
        return float(n if psum_input or bf16_fast else 2 * n), True
    if op == "tensor_reduce":
        source = tensors[instr.reads[0].tensor]
        halved = source.dtype == "bfloat16" and attrs.get("op", "add") in ("add", "max")
        return (n / 2 if halved else float(n)), True
    if op == "tensor_tensor_scan":
        return 2.0 * free_size(tensors[instr.reads[0].tensor], instr.reads[0]), True
    if op == "bn_aggr":
        return 13.0 * free_size(tensors[instr.reads[0].tensor], instr.reads[0]) / 3.0, True
    if op == "memset":
        target = tensors[instr.writes[0].tensor]
        halved = attrs.get("value", 0) == 0 and target.dtype in _TWO_BYTE_FLOATS
        return (n / 2 if halved else float(n)), True
    if op in ("iota", "affine_select"):
        return float(n), True
    return float(n), True


def instruction_cost(instr: Instruction, tensors: Mapping[str, Tensor], spec: MachineSpec) -> OpCost:
    """The :class:`OpCost` of ``instr`` on ``spec`` (see the module doc for the formulas).

    >>> from machine.format import load_program
    >>> from machine.presets import resolve_machine
    >>> prog = load_program("examples/matmul_k_loop.json")
    >>> insts = prog.instruction_map()
    >>> cost = instruction_cost(insts["mm0"], prog.tensors, resolve_machine("trn1"))
    >>> cost.cycles, round(cost.duration_ns, 3)         # max(min(64, 128), 128) PE cycles at 2.8 GHz
    (128.0, 45.714)
    >>> load = instruction_cost(insts["ld_x0"], prog.tensors, resolve_machine("trn1"))
    >>> load.bytes, round(load.duration_ns, 3), round(load.issue_ns, 3)   # 1300 + 32768 / 272; 64 / 1.4
    (32768, 1420.471, 45.714)
    """
    ghz = spec.clock_ghz(instr.engine)
    override = instr.attrs.get("cycles")
    if instr.is_dma:
        moved = max(_bytes(tensors, instr.reads), _bytes(tensors, instr.writes))
        dge = instr.attrs.get("dge", "none") if instr.op in OP_TABLE else "none"
        if override is not None:
            transfer = float(override)
        else:
            transfer = spec.dma_fixed_ns + moved / spec.dma_bytes_per_ns + (HWDGE_NS if dge == "hwdge" else 0.0)
        issue = spec.min_ii_cycles / ghz + (SWDGE_NS if dge == "swdge" else 0.0)
        return OpCost(transfer, issue, 0.0, moved)
    if override is not None:
        cycles = float(override)
    else:
        cycles, floored = _work_cycles(instr, tensors, spec)
        if floored and instr.engine == "pool" and instr.op != "set_rand_state":
            cycles += spec.pool_start_cycles
        elif floored:
            cycles = max(float(spec.min_ii_cycles), cycles)
        if instr.op == "activation" and "reduce_op" in instr.attrs:
            cycles += spec.min_ii_cycles  # the ActReadAccumulator that writes reduce_res [1.4]
    return OpCost(cycles / ghz, 0.0, cycles, 0)
