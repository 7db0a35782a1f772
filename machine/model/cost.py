"""The cost model: what each instruction costs on its engine, its result latency, and how a
DMA transfer splits over the DMA engines.  Every constant is a :class:`MachineSpec` field
(``machine/model/presets.py``) or an op-table formula (``machine/model/optable.py``); ``docs/timing.md``
names the public source of each and the three calibrated assumptions.

``N`` is the free size of an access (elements per partition; for DRAM all its elements) and,
unless the table names an operand, the largest ``N`` among the instruction's accesses.

Compute instructions (engine cycles; ``ns = cycles / GHz``)
    * *element cost* ``C``: the op's formula (``neuronsim.machine.model.optable``: matmul
      ``max(min(64, M), N)`` x4 for fp32, transpose ``max(P, min(64, F))``, DVE / ACT ``N``,
      ``2N``, ``13N/3`` ..., opaque ops named after an ``nki.isa`` instruction their ISA formula,
      e.g. ``reciprocal`` 8N); x2 on ACT / DVE / POOL when an SBUF / PSUM access steps more
      than 16 bytes in its innermost free dimension (the architecture guide's half rate);
      POOL adds ``pool_start_cycles`` (GPSIMD_START), an ``activation`` with ``reduce_op``
      adds ``min_ii_cycles`` (its ActReadAccumulator);
    * *occupancy* (``duration_ns``, the recorded ``E - S``): ``max(min_ii_cycles, C)`` on ACT /
      DVE (the ISA's back-to-back cost: independent instructions pipeline), ``C`` elsewhere;
    * *result* (``result_ns``, from ``S``): ``(C + overhead) / GHz + result_latency_ns``, the
      earliest start of an instruction that depends on this one.  The overhead is the engine's
      fixed per-instruction overhead (``act_overhead_cycles`` ...), which *adds* to the element
      cost (not a floor) and shows only where an instruction waits for its producer.
    * ``attrs.cycles`` replaces ``C`` (and the occupancy) on every op.

DMA transfers (ns)
    * trigger on the sequencer (``issue_ns``): ``min_ii_cycles`` of the sequencer, plus
      ``swdge_ns`` when POOL generates the descriptors (``dge: swdge``);
    * latency (``latency_ns``) from the trigger to the first byte: ``dma_fixed_ns``, plus
      ``hwdge_ns`` with hardware DGE (``dge: hwdge``).  It overlaps everything else;
    * data: the transfer is split by partitions of its SBUF side (partition ``p`` goes to
      engine ``p // dma_partitions_per_engine``), or for DRAM to DRAM by the rows of its
      destination (:func:`dram_rows`); each engine's share moves at ``dma_rate`` and keeps its engine for
      ``max(data, rows x dma_descriptor_ns)`` (the descriptor-rate limit, overlapping data).
    * the descriptor generation is the transfer's ``dge`` attribute, on ``dma_copy``,
      ``dma_transpose`` and opaque DMA ops alike, as the validator reads it; an on-chip
      ``dma_transpose`` costs what a copy of its bytes does, as a transposing load from DRAM
      (a ``dma_copy`` of a permuted view) already does;
    * ``attrs.cycles`` on a DMA is its data time in ns, on no engine (a stand-in transfer).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from math import ceil, prod

from neuronsim.machine.ir.identity import IdentityMemo
from neuronsim.machine.ir.program import Access, Instruction, MemoryKind, Tensor
from neuronsim.machine.model.geometry import access_extent, access_shape, iteration_shift
from neuronsim.machine.model.optable import ISA_COSTS, OP_TABLE
from neuronsim.machine.model.presets import MachineSpec

__all__ = ["OpCost", "CostMemo", "cost_key", "instruction_cost", "dma_shares", "dram_rows", "free_size", "is_strided",
           "STRIDE_LIMIT_BYTES"]

#: An innermost free-dimension step above this many bytes halves the SBUF access rate
#: (Trainium / Inferentia2 architecture guide, "128 elements per cycle ... stride <= 16 B").
STRIDE_LIMIT_BYTES = 16
_TWO_BYTE_FLOATS = ("bfloat16", "float16")
_HALF_RATE_ENGINES = ("act", "dve", "pool")

DmaShare = tuple[int, float, float]
"""``(engine, data_ns, hold_ns)``: one DMA engine's share of a transfer and how long it keeps
the engine from starting its next share (``max(data_ns, rows x dma_descriptor_ns)``)."""


@dataclass(frozen=True, slots=True)
class OpCost:
    """Cost of one instruction (every instance costs the same unless its partitions move)."""

    duration_ns: float
    """Compute: occupancy of the engine (``E - S``).  DMA: the lone transfer from its issued
    trigger to its completion (latency plus the slowest share)."""
    issue_ns: float = 0.0
    """A DMA's trigger time on its sequencer (0 for compute instructions)."""
    cycles: float = 0.0
    """Engine cycles behind ``duration_ns`` (compute instructions)."""
    bytes: int = 0
    """Bytes a DMA moves (0 for compute instructions)."""
    result_ns: float = 0.0
    """Compute: from its start until a dependent instruction may start."""
    latency_ns: float = 0.0
    """DMA: from the issued trigger until data may move."""
    shares: tuple[DmaShare, ...] = ()
    """DMA: the engines' shares, by engine."""


def free_size(tensor: Tensor, access: Access) -> int:
    """Elements per partition (SBUF / PSUM) or in all (DRAM) of an access.

    >>> from neuronsim.machine.ir.program import Tensor, Access, MemoryKind
    >>> t = Tensor("t", MemoryKind.SBUF, "float32", (128, 64), partition=0, offset=0)
    >>> free_size(t, Access("t")), free_size(t, Access("t", pattern=((8, 4), (1, 2))))
    (64, 8)
    """
    shape = access_shape(tensor, access)
    return prod(shape) if tensor.memory == MemoryKind.DRAM else prod(shape[1:])


def is_strided(tensor: Tensor, access: Access) -> bool:
    """True when an on-chip access steps more than :data:`STRIDE_LIMIT_BYTES` in its innermost
    free dimension that has more than one element.

    >>> from neuronsim.machine.ir.program import Tensor, Access, MemoryKind
    >>> t = Tensor("t", MemoryKind.SBUF, "float32", (128, 64), partition=0, offset=0)
    >>> (is_strided(t, Access("t")), is_strided(t, Access("t", pattern=((8, 8),))),
    ...  is_strided(t, Access("t", pattern=((4, 8),))))
    (False, True, False)
    """
    if tensor.memory == MemoryKind.DRAM:
        return False
    _offset, pattern = access_extent(tensor, access)
    for stride, count in reversed(pattern):
        if count > 1:
            return abs(stride) * tensor.itemsize > STRIDE_LIMIT_BYTES
    return False


def _bytes(tensors: Mapping[str, Tensor], accesses: tuple[Access, ...]) -> int:
    return sum(prod(access_shape(tensors[a.tensor], a)) * tensors[a.tensor].itemsize for a in accesses)


def _element_cycles(instr: Instruction, tensors: Mapping[str, Tensor], spec: MachineSpec) -> tuple[float, str]:
    """Cycles of the op's formula ``C`` and its rule: ``"ii"`` (the MIN_II floor on ACT / DVE,
    GPSIMD_START on POOL), ``"opaque"`` (the floor on any engine) or ``"plain"``."""
    op, attrs = instr.op, instr.attrs
    accesses = (*instr.reads, *instr.writes)
    n = max((free_size(tensors[a.tensor], a) for a in accesses), default=1)
    if op not in OP_TABLE:
        formula = ISA_COSTS.get(op)
        if formula is None:  # opaque: max(MIN_II, N) like any one-input instruction
            return float(n), "opaque"
        two_byte = all(tensors[a.tensor].dtype in _TWO_BYTE_FLOATS for a in accesses)
        return formula(n, two_byte, attrs, spec), "ii"
    if op in ("matmul", "matmul_mx"):  # matmul_mx: one packed moving column a cycle (docs/timing.md)
        stationary, moving = (tensors[a.tensor] for a in instr.reads[:2])
        m, n = free_size(stationary, instr.reads[0]), free_size(moving, instr.reads[1])
        if attrs.get("double_row", False):  # FP8 double row: two rows of K a pass, N columns
            m, n = m // 2, n // 2
        cycles = max(min(64, m), n)
        fp32 = "float32" in (stationary.dtype, moving.dtype)
        return float(cycles * (4 if fp32 else 1)), "plain"
    if op == "transpose" and instr.engine == "pe":  # a matmul against the identity (the source stationary)
        source = tensors[instr.reads[0].tensor]
        p = access_shape(source, instr.reads[0])[0]
        factor = spec.pe_transpose_fp32_factor if source.dtype == "float32" else 1
        return float(max(p, min(64, free_size(source, instr.reads[0]))) * factor), "plain"
    if op == "tensor_copy" and attrs.get("dynamic") in ("src", "dst"):  # tensor_copy_dynamic_src / _dst's page
        return ISA_COSTS[f"tensor_copy_dynamic_{attrs['dynamic']}"](n, False, attrs, spec), "plain"
    if op == "set_rand_state":
        return float(spec.min_ii_cycles), "plain"
    if op == "tensor_tensor":
        inputs = [tensors[a.tensor] for a in instr.reads]
        psum_input = any(t.memory == MemoryKind.PSUM for t in inputs)
        bf16_fast = attrs.get("op", "add") in ("add", "subtract", "multiply") and all(
            tensors[a.tensor].dtype == "bfloat16" for a in accesses)
        return float(n if psum_input or bf16_fast else 2 * n), "ii"
    if op == "tensor_reduce":
        source = tensors[instr.reads[0].tensor]
        halved = source.dtype == "bfloat16" and attrs.get("op", "add") in ("add", "max")
        return (n / 2 if halved else float(n)), "ii"
    if op == "tensor_tensor_scan":
        return 2.0 * free_size(tensors[instr.reads[0].tensor], instr.reads[0]), "ii"
    if op in ("select_reduce", "tensor_copy_predicated"):  # two streamed inputs, as tensor_tensor
        return 2.0 * n, "ii"
    if op == "exponential":  # the Trainium3 architecture guide: "4x the throughput" of ACT's exp (N)
        return n / 4.0, "ii"
    if op == "tensor_partition_reduce":  # no public figure: each of 8 GpSimd cores reads its partitions' rows
        source = tensors[instr.reads[0].tensor]
        partitions = access_shape(source, instr.reads[0])[0] if source.memory != MemoryKind.DRAM else 1
        return float(free_size(source, instr.reads[0]) * ceil(partitions / 8)), "ii"
    if op == "bn_aggr":
        return 13.0 * free_size(tensors[instr.reads[0].tensor], instr.reads[0]) / 3.0, "ii"
    if op == "memset":
        target = tensors[instr.writes[0].tensor]
        halved = attrs.get("value", 0) == 0 and target.dtype in _TWO_BYTE_FLOATS
        return (n / 2 if halved else float(n)), "ii"
    return float(n), "ii"


def _compute_cost(instr: Instruction, tensors: Mapping[str, Tensor], spec: MachineSpec) -> OpCost:
    engine = instr.engine
    ghz = spec.clock_ghz(engine)
    override = instr.attrs.get("cycles")
    if override is not None:
        busy = slot = float(override)
    else:
        busy, rule = _element_cycles(instr, tensors, spec)
        if engine in _HALF_RATE_ENGINES and any(is_strided(tensors[a.tensor], a) for a, _w in instr.accesses):
            busy *= 2
        slot = busy
        if rule == "ii" and engine == "pool":
            busy = slot = busy + spec.pool_start_cycles
        elif rule != "plain":
            slot = max(float(spec.min_ii_cycles), busy)
        if instr.op == "activation" and "reduce_op" in instr.attrs:
            busy += spec.min_ii_cycles  # the ActReadAccumulator that writes reduce_res
            slot += spec.min_ii_cycles
    result = (busy + spec.overhead_cycles(engine)) / ghz + spec.result_latency_ns
    return OpCost(slot / ghz, 0.0, slot, 0, result)


def _engine_rows(tensors: Mapping[str, Tensor], instr: Instruction, spec: MachineSpec,
                 partition_shift: int) -> dict[int, int]:
    """Rows (partitions, or DRAM rows) each DMA engine carries."""
    sbuf = [a for a in (*instr.writes, *instr.reads) if tensors[a.tensor].memory == MemoryKind.SBUF]
    engines = spec.dma_engines
    if sbuf:
        access = sbuf[0]
        tensor = tensors[access.tensor]
        start, count, step = access.partitions or (0, tensor.shape[0], 1)
        first = (tensor.partition or 0) + start + partition_shift
        return dict(_partition_rows(first, count, step, spec.dma_partitions_per_engine, engines))
    side = instr.writes or instr.reads  # the destination's rows, as a load's are its partitions
    total = dram_rows(tensors[side[0].tensor], side[0]) if side else 1
    if total < engines:
        return {e: 1 for e in range(total)}
    return {e: ceil((e + 1) * total / engines) - ceil(e * total / engines) for e in range(engines)}


def dram_rows(tensor: Tensor, access: Access) -> int:
    """The rows of a DRAM-to-DRAM transfer's destination: its contiguous runs, none longer
    than a row of the tensor (its last dimension); an element apart when the innermost
    dimension steps.  A whole (32, 128) tensor is 32 rows, not 4,096 elements.  The source's
    pattern is not counted, as a load's DRAM side is not (a load is split by the partitions it
    writes): a transposing copy costs what a straight one into the same rows does.

    >>> from neuronsim.machine.ir.program import Tensor, Access, MemoryKind
    >>> d = Tensor("d", MemoryKind.DRAM, "int32", (32, 128), address=0)
    >>> [dram_rows(d, Access("d", pattern=p)) for p in (None, ((128, 4), (1, 64)), ((2, 8),))]
    [32, 4, 8]
    """
    _offset, pattern = access_extent(tensor, access)
    elements = prod(count for _stride, count in pattern)
    stride, count = pattern[-1]
    run = min(count, tensor.shape[-1]) if stride == 1 else 1
    return max(1, ceil(elements / max(run, 1)))


@lru_cache(maxsize=4096)
def _partition_rows(first: int, count: int, step: int, per_engine: int, engines: int) -> tuple[tuple[int, int], ...]:
    """``(engine, rows)`` for partitions ``first, first + step, ...`` (``count`` of them), in the
    order engines are first met; cached: a tiled kernel asks for the same few sets for every
    transfer (issue 31: 0.3 ms a transfer in Python)."""
    rows: dict[int, int] = {}
    for k in range(count):
        engine = ((first + k * step) // per_engine) % engines
        rows[engine] = rows.get(engine, 0) + 1
    return tuple(rows.items())


def dma_shares(instr: Instruction, tensors: Mapping[str, Tensor], spec: MachineSpec,
               partition_shift: int = 0) -> tuple[DmaShare, ...]:
    """The per-engine shares of a transfer (see the module doc), its SBUF side's partitions
    moved by ``partition_shift`` (an instance of a loop that moves them).

    >>> from neuronsim.machine.ir.program import Tensor, Access, MemoryKind, Instruction
    >>> from neuronsim.machine.model.presets import resolve_machine
    >>> ts = {"d": Tensor("d", MemoryKind.DRAM, "bfloat16", (128, 128), address=0),
    ...       "s": Tensor("s", MemoryKind.SBUF, "bfloat16", (128, 128), partition=0, offset=0)}
    >>> load = Instruction("l", "sp", "dma_copy", (Access("d"),), (Access("s"),))
    >>> shares = dma_shares(load, ts, resolve_machine("trn2"))
    >>> len(shares), shares[0][0], round(shares[0][1], 1), round(shares[0][2], 1)   # 2 KiB per engine at 23 B/ns
    (16, 0, 89.0, 848.0)
    """
    moved = max(_bytes(tensors, instr.reads), _bytes(tensors, instr.writes))
    rows = _engine_rows(tensors, instr, spec, partition_shift)
    total = sum(rows.values()) or 1
    rate, desc = spec.dma_rate, spec.dma_descriptor_ns
    out = []
    for engine in sorted(rows):
        data = moved * rows[engine] / total / rate
        out.append((engine, data, max(data, rows[engine] * desc)))
    return tuple(out)



def moves_partitions(instr: Instruction, tensors: Mapping[str, Tensor]) -> bool:
    """True when a DMA's SBUF side changes partitions from one instance to the next."""
    return any(a.partitions_per_iteration for a in (*instr.writes, *instr.reads)
               if tensors[a.tensor].memory == MemoryKind.SBUF)


def instance_shift(instr: Instruction, tensors: Mapping[str, Tensor], iteration: Mapping[str, int]) -> int:
    """Partitions the SBUF side of a DMA instance has moved by."""
    for a in (*instr.writes, *instr.reads):
        if tensors[a.tensor].memory == MemoryKind.SBUF:
            return iteration_shift(tensors[a.tensor], a, iteration)[1]
    return 0


def instruction_cost(instr: Instruction, tensors: Mapping[str, Tensor], spec: MachineSpec) -> OpCost:
    """The :class:`OpCost` of ``instr`` on ``spec`` (see the module doc for the formulas).

    >>> from neuronsim.machine.formats.program_json import load_program
    >>> from neuronsim.machine.model.presets import resolve_machine
    >>> prog = load_program("examples/matmul_k_loop.json")
    >>> insts = prog.instruction_map()
    >>> cost = instruction_cost(insts["mm0"], prog.tensors, resolve_machine("trn1"))
    >>> cost.cycles, round(cost.duration_ns, 3), round(cost.result_ns, 3)  # 128 PE cycles at 2.8 GHz; + 64 + 30 ns
    (128.0, 45.714, 98.571)
    >>> load = instruction_cost(insts["ld_x0"], prog.tensors, resolve_machine("trn1"))
    >>> load.bytes, len(load.shares), round(load.duration_ns, 3), round(load.issue_ns, 3)  # 550 + 2 KiB / 17; 64 / 1.4
    (32768, 16, 670.471, 45.714)
    """
    if not instr.is_dma:
        return _compute_cost(instr, tensors, spec)
    moved = max(_bytes(tensors, instr.reads), _bytes(tensors, instr.writes))
    dge = instr.attrs.get("dge", "none")
    issue = spec.min_ii_cycles / spec.clock_ghz(instr.engine) + (spec.swdge_ns if dge == "swdge" else 0.0)
    override = instr.attrs.get("cycles")
    if override is not None:
        return OpCost(float(override), issue, 0.0, moved, 0.0, 0.0, ())
    latency = spec.dma_fixed_ns + (spec.hwdge_ns if dge == "hwdge" else 0.0)
    shares = dma_shares(instr, tensors, spec)
    data = max((share[1] for share in shares), default=0.0)
    return OpCost(latency + data, issue, 0.0, moved, 0.0, latency, shares)


def cost_key(instr: Instruction, tensors: Mapping[str, Tensor]) -> tuple:
    """What :func:`instruction_cost` reads of ``instr``: op, engine, attributes and each
    access's shape with its tensor's layout, never the names, so the thousands of instances
    of one instruction in a flattened kernel (each ring slot a tensor of its own) share one
    computation.  An offset counts only where no pattern gives the shape (it shortens the
    default one): a tiled load's thousands of DRAM offsets share one cost."""
    sides = []
    for access, is_write in instr.accesses:
        t = tensors[access.tensor]
        offset = access.offset if access.pattern is None else None
        sides.append((is_write, t.memory, t.dtype, t.shape, t.partition, t.rotate, access.partitions, offset,
                      access.pattern, access.per_iteration, access.partitions_per_iteration))
    return instr.engine, instr.op, repr(sorted(instr.attrs.items())), tuple(sides)


class CostMemo:
    """:func:`instruction_cost` memoised by :func:`cost_key`, for one program on one machine
    (the list scheduler's and the simulation plan's: an unrolled kernel's instances are
    instructions of their own, alike in all but their names).

    >>> from neuronsim.machine.formats.program_json import load_program
    >>> from neuronsim.machine.model.presets import resolve_machine
    >>> prog = load_program("examples/matmul_k_loop.json")
    >>> costs, insts = CostMemo(prog.tensors, resolve_machine("trn1")), prog.instruction_map()
    >>> costs(insts["mm0"]) is costs(insts["mm0"]), len(costs.known)
    (True, 1)
    """

    __slots__ = ("tensors", "spec", "known", "_seen")

    def __init__(self, tensors: Mapping[str, Tensor], spec: MachineSpec) -> None:
        self.tensors, self.spec, self.known = tensors, spec, {}
        # Instances unrolled from one instruction share its attrs and, where they touch the
        # same bytes, its access objects: a cost is found by those objects' identities before
        # cost_key builds its tuples (a third of the memo's time on a tiled matmul's 25,000
        # instances; machine/ir/identity.py says why it is safe, and stops when nothing is shared).
        self._seen: IdentityMemo[OpCost] = IdentityMemo()

    def __call__(self, instr: Instruction) -> OpCost:
        if not self._seen.active:
            return self._by_value(instr)
        ids = (instr.engine, instr.op, id(instr.attrs), *map(id, instr.reads), -1, *map(id, instr.writes))
        return self._seen.get_keyed(ids, (instr.attrs, instr.reads, instr.writes), lambda: self._by_value(instr))

    def _by_value(self, instr: Instruction) -> OpCost:
        key = cost_key(instr, self.tensors)
        cost = self.known.get(key)
        if cost is None:
            cost = self.known[key] = instruction_cost(instr, self.tensors, self.spec)
        return cost
