"""Machine presets ``trn1`` (NeuronCore-v2), ``trn2`` (NeuronCore-v3) and ``trn3`` (NeuronCore-v4),
with overrides.

Every figure is sourced from ``docs/machine-model.md`` (section in brackets) or, for the
timing model, from the public page named in brackets (``docs/timing.md`` lists every timing
constant with its page).  Figures marked *unconfirmed* come from third-party reverse
engineering, not from AWS; the three *assumptions* are calibrated on published measurements
(``docs/timing.md``).

A program's ``machine`` is a preset name or ``{"base": "trn1", KEY: VALUE, ...}`` whose keys
are the field names of :class:`MachineSpec` below (for example ``{"base": "trn1",
"dma_queues": 4}``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any

from neuronsim.machine.ir.errors import ProgramError, join_path
from neuronsim.machine.ir.program import SEQUENCERS

__all__ = ["MachineSpec", "PRESETS", "resolve_machine", "OVERRIDABLE", "FLOAT_FIGURE_RANGE"]


@dataclass(frozen=True, slots=True)
class MachineSpec:
    """Parameters of one NeuronCore model."""

    name: str
    """Preset the spec was derived from."""
    dma_queues: int = 3
    """DMA queues modelled (``dma0 … dmaN-1``); the spec fixes 3 for both presets by default."""
    pe_ghz: float = 2.8
    """TensorE clock [1.3]: 2.8 GHz on v2, 2.4 GHz on v3 and v4."""
    act_ghz: float = 1.4
    """ScalarE clock [1.3]."""
    dve_ghz: float = 1.12
    """VectorE clock [1.3]: 1.12 / 0.96 / 1.2 GHz on v2 / v3 / v4."""
    pool_ghz: float = 1.4
    """GpSimd clock [1.3]."""
    sp_ghz: float = 1.4
    """Sync engine clock: not given by the sources; taken equal to ScalarE's."""
    sbuf_partitions: int = 128
    """SBUF partitions [2.1]."""
    sbuf_partition_bytes: int = 192 * 1024
    """SBUF bytes per partition [2.1]: 192 KiB (v2), 224 KiB (v3), 256 KiB (v4: 32 MiB / 128)."""
    sbuf_reserved_bytes: int = 16384
    """Bytes at the top of each SBUF partition the compiler keeps for itself, out of reach of its
    allocator: 16 KiB on v2, 16 KiB + 8 B on v3 and v4 (nki-library's usable-SBUF constants,
    ``224 * 1024 - 16384 - 8 - ...``; [RE-CONST]).  ``alloc`` places virtual tiles below it; a
    tile placed by its program may use the whole partition."""
    psum_banks: int = 8
    """PSUM banks per partition [2.1]."""
    psum_bank_bytes: int = 2048
    """Bytes per PSUM bank per partition [2.1] (512 fp32)."""
    dram_bytes: int = 16 * 2**30
    """Per-core HBM window [2.2]: 16 GiB (gen2) / 24 GiB (gen3) / 36 GiB (gen4), *unconfirmed*."""
    dram_bin_bytes: int = 64 * 1024
    """Bin size the anti-dependence analyzer uses for DRAM: a project choice (the largest
    transfer one descriptor carries [2.4], 64 KiB, *unconfirmed*)."""
    dma_engines: int = 16
    """DMA engines per NeuronCore [DMA overview]; each moves one transfer's share at a time."""
    dma_engine_bytes_per_ns: float = 17.0
    """Bandwidth of one DMA engine [DMA bandwidth guide table]: 17 / 23 / 33 B/ns (trn1 / trn2 / trn3)."""
    dma_core_bytes_per_ns: float = 272.0
    """Aggregate DMA bandwidth cap of the core [DMA bandwidth guide table]: 272 / 368 / 528 GB/s.  When
    below ``dma_engines x dma_engine_bytes_per_ns`` each engine runs at its share of it."""
    dma_fixed_ns: float = 550.0
    """Latency from a transfer's trigger (after its descriptors exist) to its first byte moving:
    descriptor fetch and semaphore hand-off.  Pure latency: it overlaps other transfers in
    flight and the previous transfer of its queue.  *Assumption A1* (docs/timing.md), calibrated
    on the DMA overview's two 32 KiB profiles; the bandwidth guide's round ~1,300 ns includes
    descriptor generation and the waits around the transfer."""
    dma_descriptor_ns: float = 106.0
    """Descriptor processing per contiguous buffer (a partition row) on a DMA engine: an engine
    starts its next share no sooner than ``rows x dma_descriptor_ns`` after its current one
    (the bandwidth guide's packet-rate limit; it overlaps data movement).  *Assumption A2*,
    calibrated on the DMA overview's efficiency curve."""
    dma_paced_by_queue: bool = False
    """Where that descriptor-rate limit sits (docs/timing.md, "Where descriptors are made").
    False (NeuronCore-v2): on the engines, as A2 first put it: descriptors are built before the
    run and read by the DMA engines, each engine held ``rows x dma_descriptor_ns`` per share
    whatever the queue.  True (v3, v4: descriptors made at run time by a DGE or GpSimd): on the
    issuing queue, each queue starting a transfer no sooner than that after its previous one,
    the engines held for the data only, so transfers of several queues overlap on them."""
    swdge_ns: float = 468.0
    """Software DGE: GpSimd time generating one transfer's descriptors [DMA overview, profile of
    its 128 x 128 example]; the POOL sequencer is busy for it."""
    hwdge_ns: float = 600.0
    """Hardware DGE: time per DMA instruction in the DGE block [DGE reference, ~600 ns]; latency
    of the transfer, not of its sequencer."""
    min_ii_cycles: int = 64
    """Minimum initiation interval of an ACT / DVE instruction [nki.isa docstrings]: independent
    instructions issue no closer than this."""
    pool_start_cycles: int = 150
    """GPSIMD_START overhead of a GpSimd instruction [nki.isa iota / affine_select docstrings]."""
    pe_transpose_fp32_factor: int = 4
    """What an fp32 transpose on PE costs over a bf16 one: 4 on v2, which transposes by a matmul
    against the identity (fp32 operands 4x [ISA ``nc_matmul``]); 2 from v3 on, whose TensorE
    transpose mode gives "2x speedup in FP32 transpose, vs. no transpose mode" [ARCH-v3]."""
    pe_transpose_exact: bool = False
    """Whether a transpose on PE moves the elements bit for bit: from v3 on ("Starting
    NeuronCore-v3, all Tensor Engine transpose is bit-accurate" [ISA ``nc_transpose``]); v2
    transposes by a matmul against the identity, in fp32, so integers past 2**24 round."""
    pe_write_banks: int = 1
    """PSUM banks one PE instruction may write: one on v2 and v3, the whole PSUM (eight) from v4
    [ISA ``nc_matmul``: the moving tile "must not exceed 512" on v2 and v3, "can go up to 4096 for
    float32 dst or 8192 for bfloat16 dst, matching the size of 8x PSUM banks" from v4]."""
    pe_overhead_cycles: int = 64
    """PE pipeline latency (matmul initial latency [NKI performance guide]) added to a result's
    availability."""
    act_overhead_cycles: int = 220
    """ACT fixed per-instruction overhead: static overhead ~100 cycles [NKI performance guide]
    plus two SBUF accesses of ~60 cycles [architecture guide]."""
    dve_overhead_cycles: int = 144
    """DVE fixed per-instruction overhead [nki-library top-k cost helper: 144 + N]."""
    sp_overhead_cycles: int = 100
    """Sync-engine fixed per-instruction overhead: the static ~100 cycles [NKI performance guide]."""
    result_latency_ns: float = 30.0
    """Hand-off of a result to a dependent instruction (write-back and semaphore), after the
    producer's pipeline.  *Assumption A3*, calibrated on the dependent-activation chain of the
    NKI performance guide (189 ns start to start, 159 ns per instruction)."""
    has_hwdge: bool = False
    """Hardware descriptor generation (``dge: hwdge``) exists from v3 on [2.4]."""

    def __post_init__(self) -> None:
        if not 0 <= self.sbuf_reserved_bytes < self.sbuf_partition_bytes:
            raise ValueError(f"sbuf_reserved_bytes ({self.sbuf_reserved_bytes}) must be at least 0 and below "
                             f"sbuf_partition_bytes ({self.sbuf_partition_bytes}): the allocator needs room")

    @property
    def engines(self) -> tuple[str, ...]:
        """The sequencers followed by the DMA queues: eight engines with three queues."""
        return SEQUENCERS + self.queue_names

    @property
    def queue_names(self) -> tuple[str, ...]:
        return tuple(f"dma{i}" for i in range(self.dma_queues))

    @property
    def sbuf_allocatable_bytes(self) -> int:
        """Bytes of a partition the compiler's allocator places tiles in (below the reserve)."""
        return self.sbuf_partition_bytes - self.sbuf_reserved_bytes

    @property
    def psum_partition_bytes(self) -> int:
        return self.psum_banks * self.psum_bank_bytes

    @property
    def dma_partitions_per_engine(self) -> int:
        """SBUF partitions one DMA engine serves (128 / 16 = 8 [DMA overview])."""
        return max(1, self.sbuf_partitions // self.dma_engines)

    @property
    def dma_rate(self) -> float:
        """Bytes per ns of one DMA engine under the core's aggregate cap."""
        return min(self.dma_engine_bytes_per_ns, self.dma_core_bytes_per_ns / self.dma_engines)

    def overhead_cycles(self, engine: str) -> int:
        """Fixed per-instruction overhead of a compute engine (0 on POOL: its start overhead
        is part of its occupancy)."""
        return {"pe": self.pe_overhead_cycles, "act": self.act_overhead_cycles, "dve": self.dve_overhead_cycles,
                "pool": 0, "sp": self.sp_overhead_cycles}[engine]

    def clock_ghz(self, engine: str) -> float:
        return {
            "pe": self.pe_ghz,
            "act": self.act_ghz,
            "dve": self.dve_ghz,
            "pool": self.pool_ghz,
            "sp": self.sp_ghz,
        }[engine]


PRESETS: dict[str, MachineSpec] = {
    "trn1": MachineSpec(name="trn1"),
    "trn2": MachineSpec(
        name="trn2",
        pe_ghz=2.4,
        act_ghz=1.2,
        dve_ghz=0.96,
        pool_ghz=1.2,
        sp_ghz=1.2,
        sbuf_partition_bytes=224 * 1024,
        sbuf_reserved_bytes=16384 + 8,
        dram_bytes=24 * 2**30,
        dma_engine_bytes_per_ns=23.0,
        dma_core_bytes_per_ns=368.0,
        has_hwdge=True,
        dma_paced_by_queue=True,
        pe_transpose_fp32_factor=2,
        pe_transpose_exact=True,
    ),
    # NeuronCore-v4 (docs/timing.md, "trn3"): the Trainium3 architecture guide's clocks, SBUF
    # (32 MiB over 128 partitions) and PSUM (2 MiB, as before), and the DMA table's 33 B/ns an
    # engine; figures no v4 page publishes (overheads, DGE times, the calibrated A1-A3) keep trn2's.
    "trn3": MachineSpec(
        name="trn3",
        pe_ghz=2.4,
        act_ghz=1.2,
        dve_ghz=1.2,
        pool_ghz=1.2,
        sp_ghz=1.2,
        sbuf_partition_bytes=32 * 2**20 // 128,
        sbuf_reserved_bytes=16384 + 8,
        dram_bytes=36 * 2**30,
        dma_engine_bytes_per_ns=33.0,
        dma_core_bytes_per_ns=528.0,
        has_hwdge=True,
        dma_paced_by_queue=True,
        pe_transpose_fp32_factor=2,
        pe_transpose_exact=True,
        pe_write_banks=8,
    ),
}

#: Keys a machine override object may set, with their types.
OVERRIDABLE: dict[str, type] = {
    f.name: (float if f.type == "float" else bool if f.type == "bool" else int)
    for f in fields(MachineSpec)
    if f.name != "name"
}


#: Overrides that may be 0 (every other figure is positive): no SBUF reserve.
MAY_BE_ZERO = frozenset({"sbuf_reserved_bytes"})


#: The range of a float figure (clocks, bandwidths, latencies): wide of any real machine, and
#: narrow enough that every simulated time stays a finite double (a bandwidth of 1e-300 B/ns
#: made durations overflow to infinity, and the times after them NaN).
FLOAT_FIGURE_RANGE = (1e-6, 1e12)


def _figure(raw: Any, want: type, path: str) -> Any:
    """One override value: a boolean, or a positive number of the field's type (an integer
    field below 2**63; a float field within :data:`FLOAT_FIGURE_RANGE`)."""
    if want is bool:
        if not isinstance(raw, bool):
            raise ProgramError(path, "expected true or false")
        return raw
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise ProgramError(path, f"expected a positive {want.__name__}")
    if isinstance(raw, int) and want is int:
        if not 0 < raw < 2**63:
            raise ProgramError(path, "expected a positive int below 2**63")
        return raw
    try:
        value = float(raw)
    except OverflowError:
        raise ProgramError(path, f"expected a positive {want.__name__} within the range of a double") from None
    if not math.isfinite(value) or value <= 0:
        raise ProgramError(path, f"expected a positive finite {want.__name__}")
    if want is int:
        if not value.is_integer() or value >= 2**63:
            raise ProgramError(path, "expected a positive int below 2**63")
        return int(value)
    low, high = FLOAT_FIGURE_RANGE
    if not low <= value <= high:
        raise ProgramError(path, f"expected a float between {low:g} and {high:g} (simulated times must stay finite), "
                                 f"got {value:g}")
    return value


def resolve_machine(value: Any, path: str = "machine") -> MachineSpec:
    """Turn the format's ``machine`` value into a :class:`MachineSpec`.

    >>> resolve_machine("trn2").sbuf_partition_bytes
    229376
    >>> resolve_machine({"base": "trn1", "dma_queues": 4}).engines[-1]
    'dma3'
    """
    if value is None:
        return PRESETS["trn1"]
    if isinstance(value, str):
        if value not in PRESETS:
            raise ProgramError(path, f"unknown machine preset {value!r}; expected one of {sorted(PRESETS)}")
        return PRESETS[value]
    if not isinstance(value, dict):
        raise ProgramError(path, "expected a preset name or an object with 'base' and overrides")
    base = value.get("base", "trn1")
    if not isinstance(base, str):  # null too: the format's default is the absent key, not null
        raise ProgramError(join_path(path, "base"), f"expected a preset name, one of {sorted(PRESETS)}")
    spec = resolve_machine(base, join_path(path, "base"))
    changes: dict[str, Any] = {}
    for key, raw in value.items():
        if key == "base" or key.startswith("x-"):
            continue
        if key not in OVERRIDABLE:
            raise ProgramError(join_path(path, key),
                               f"unknown machine parameter; expected one of {sorted(OVERRIDABLE)}")
        changes[key] = (0 if key in MAY_BE_ZERO and raw == 0 and not isinstance(raw, bool)
                        else _figure(raw, OVERRIDABLE[key], join_path(path, key)))
    partition = changes.get("sbuf_partition_bytes", spec.sbuf_partition_bytes)
    reserve = changes.get("sbuf_reserved_bytes", spec.sbuf_reserved_bytes)
    if reserve >= partition:
        raise ProgramError(join_path(path, "sbuf_reserved_bytes" if "sbuf_reserved_bytes" in changes
                                     else "sbuf_partition_bytes"),
                           f"the compiler's SBUF reserve ({reserve} bytes, sbuf_reserved_bytes) leaves the allocator "
                           f"no room in a {partition}-byte partition; set sbuf_reserved_bytes below it (0: none)")
    spec = replace(spec, **changes)
    if spec.dma_queues > 16:
        raise ProgramError(join_path(path, "dma_queues"), "at most 16 DMA queues per engine exist")
    if spec.sbuf_partitions > 128:
        raise ProgramError(join_path(path, "sbuf_partitions"), "a NeuronCore has at most 128 partitions")
    if spec.dma_engines > spec.sbuf_partitions:  # engines serve partitions: one each at the most
        raise ProgramError(join_path(path, "dma_engines"), f"at most one DMA engine per SBUF partition "
                                                           f"({spec.sbuf_partitions}); got {spec.dma_engines}")
    return spec
