"""Buffers and allocation: automatic (virtual tensors) and direct (placed tensors, ``x-rotate``).

* ``nl.sbuf`` / ``nl.psum`` / ``nl.hbm`` / ``nl.shared_hbm`` / ``nl.private_hbm`` are
  :class:`Buffer` values.  A tile declared without a placement is a *virtual* tensor: the
  allocation pass places it (a tile declared inside a loop body is a new tensor each unrolled
  iteration; in a kept loop one virtual tensor the allocator may multi-buffer).
* Current API ``address=(partition, byte_offset)``: a placed tensor (PSUM: the byte offset
  counts from bank 0, 2 KiB a bank).
* Legacy ``ncc.sbuf.mod_alloc(base_addr=, base_partition=, num_free_tiles=)`` /
  ``ncc.psum.mod_alloc(base_bank=, num_bank_tiles=)`` on a tensor with block dimensions
  ``(B, par_dim(P), F)``: block ``b`` lives in slot ``b mod n``.  A block chosen by a kept
  loop's variable is a rotating tensor (``x-rotate`` over that loop); a constant block is a
  placed tensor of its own on its slot's bytes (tile identity as NKI's compiler sees it: blocks
  that share a slot are two tiles on the same bytes, never one tile).  ``ncc.sbuf.alloc(fn)`` /
  ``ncc.psum.alloc(fn)`` call ``fn`` with each block index (``(partition, byte)``; PSUM ``(bank, partition, byte)``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from math import prod
from typing import Any

import numpy as np

from neuronsim.machine.ir.dtypes import itemsize
from neuronsim.machine.ir.program import PSUM_BANK_BYTES
from neuronsim.machine.ir.fast_dataclasses import quick_init
from neuronsim.machine.model.presets import resolve_machine
from neuronsim.machine.nki.errors import NotAffine, SourceLine, fail, shown, unsupported
from neuronsim.machine.nki.indexing import SymIndex, concrete
from neuronsim.machine.nki.layout import Layout
from neuronsim.machine.nki.tracer import Tracer, assigned_name

__all__ = ["BUFFERS", "Buffer", "ParDim", "TileSpec", "ModAlloc", "FnAlloc", "Blocked", "declare", "declare_tile",
           "check_partitions", "HBM_KINDS", "ALLOC_GROUP_KEY"]

HBM_KINDS = ("hbm", "shared_hbm", "private_hbm")
ALLOC_GROUP_KEY = "x-nki-alloc"
"""On each block tensor of a directly allocated kernel tensor: that tensor's name.  Its blocks
are tiles of their own, but one allocation: the NKI compiler orders the reuse of a physical
tile among them (neuronsim.verify.nki.placement keeps them on their relative bytes)."""


class ParDim(int):
    """``nl.par_dim(n)``: marks the partition dimension of an on-chip shape."""


@dataclass(frozen=True)
class ModAlloc:
    memory: str
    base: int = 0
    base_partition: int = 0
    tiles: tuple[int, ...] = (1,)


@dataclass(frozen=True)
class FnAlloc:
    memory: str
    fn: Any


class Buffer:
    """A buffer kind (``nl.sbuf`` ...); ``.mod_alloc`` / ``.alloc`` give direct allocations."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __repr__(self) -> str:
        return f"nl.{self.kind}"

    def __eq__(self, other: Any) -> bool:  # t.buffer == nl.sbuf, or == "sbuf"
        return self.kind == (other.kind if isinstance(other, Buffer) else other)

    def __hash__(self) -> int:
        return hash(self.kind)

    def mod_alloc(self, *, base_addr: int = 0, base_partition: int = 0, num_par_tiles: Any = (1,),
                  num_free_tiles: Any = (1,), base_bank: int | None = None, num_bank_tiles: Any = None) -> ModAlloc:
        if tuple(num_par_tiles or (1,)) != (1,) and self.kind == "sbuf":
            raise unsupported("mod_alloc(num_par_tiles=...)", "tiles along partitions")
        if self.kind == "psum":
            tiles = num_bank_tiles if num_bank_tiles is not None else num_free_tiles
            return ModAlloc("psum", base_bank or 0, base_partition, tuple(tiles or (1,)))
        return ModAlloc("sbuf", base_addr, base_partition, tuple(num_free_tiles or (1,)))

    def alloc(self, fn: Any) -> FnAlloc:
        return FnAlloc(self.kind, fn)


#: The buffer values of ``nki.language`` (``nl.sbuf`` ...), by kind.
BUFFERS: dict[str, Buffer] = {kind: Buffer(kind) for kind in ("sbuf", "psum", *HBM_KINDS)}


@quick_init
@dataclass(frozen=True)
class TileSpec:
    """What a tile declaration asked for (shape in the kernel's order)."""

    shape: tuple[int, ...]
    dtype: str
    buffer: str
    par_axis: int = 0
    address: tuple[int, int] | None = None
    allocator: ModAlloc | FnAlloc | None = None

    @property
    def blocks(self) -> tuple[int, ...]:
        return self.shape[:self.par_axis]

    @property
    def tile_shape(self) -> tuple[int, ...]:
        """The IR shape of one block: ``(P, free...)``."""
        return self.shape[self.par_axis:]


def check_partitions(count: int) -> None:
    """Refuse, at the kernel line, an on-chip tile of more partitions than there are."""
    if count > 128:
        raise fail(f"partition dimension {count} of an on-chip tile exceeds 128 (nl.tile_size.pmax)")


def spec_of(shape: Any, dtype: str, buffer: Any, address: Any = None) -> TileSpec:
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    marks = [k for k, n in enumerate(shape) if isinstance(n, ParDim)]
    allocator = buffer if isinstance(buffer, (ModAlloc, FnAlloc)) else None
    kind = allocator.memory if allocator else (buffer.kind if isinstance(buffer, Buffer) else str(buffer or "sbuf"))
    if kind not in ("sbuf", "psum", *HBM_KINDS):
        raise fail(f"buffer {buffer!r} is not an NKI buffer")
    dims = tuple(concrete(n, "a tensor dimension") for n in shape)
    if not dims:
        raise fail("a tensor of shape (): a tensor has one dimension at least (on chip, its partitions)")
    if any(n < 1 for n in dims):
        raise fail(f"shape {dims} has an empty dimension")
    par_axis = marks[0] if marks else 0
    if kind in HBM_KINDS:
        par_axis = 0
    else:
        check_partitions(dims[par_axis])
    if address is not None:  # (HBM: NKI 0.7's ndarray page, "for HBM it is a 1-tuple (free_offset,)")
        sizes = (1, 2) if kind in HBM_KINDS else (2,)
        if (not isinstance(address, (tuple, list)) or len(address) not in sizes
                or not all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) and a >= 0 for a in address)):
            raise fail(f"address {shown(address)}: " + ("an HBM tensor's address is (free offset,), an int from 0"
                                                       if kind in HBM_KINDS else "a tile's address is (partition, "
                                                       "byte offset), two ints from 0"))
        address = tuple(int(a) for a in address)
    return TileSpec(dims, dtype, kind, par_axis, address, allocator)


def _rotation_loop(index: tuple[Any, ...]) -> str | None:
    """The kept loop a block index names (the loop a rotating block turns with), or None."""
    if len(index) == 1 and isinstance(index[0], SymIndex) and len(index[0].index.terms) == 1:
        return index[0].index.terms[0][0]
    return None


@dataclass
class Blocked:
    """A directly allocated tensor with block dimensions: indexing a block picks its slot."""

    spec: TileSpec
    name: str
    slots: dict[Any, Layout]
    depth: int = 1
    """Loop depth of the declaration (slot tensors are declared when first indexed)."""
    scope: list[str] | None = None
    """The kept loops around the declaration."""
    site: tuple[SourceLine, str, str | None] | None = None
    """The declaring kernel line, NKI call and the kernel's variable (each block's ``x-source``)."""
    lazy_fill: Callable[[Layout], None] | None = None
    """``nl.zeros(..., lazy_initialization=True)``: emits the fill of one block, each block
    filled when first indexed, not all at the declaration (see :meth:`block`); None: filled
    when declared."""
    rotating: list[str] = field(default_factory=list)
    """The loops whose rotation holds a block (keys of :attr:`slots` that are loop names): kept
    apart so that a kernel indexing thousands of blocks does not scan them all at each."""
    held: list[Any] = field(default_factory=list)
    """The tokens of its virtual blocks: they stay in reach while the tensor does (machine/nki/liveness.py)."""

    @property
    def shape(self) -> tuple[int, ...]:
        return self.spec.shape

    def block(self, tracer: Tracer, index: tuple[Any, ...], fill: bool = True) -> Layout:
        """The tensor of block ``index``: every block is a tile of its own (its own tensor,
        placed on its slot's bytes), as NKI's compiler tells tiles apart, so two blocks that
        share a slot while both are live are two tiles on the same bytes (a finding), not one
        tile written twice.  A block chosen by a kept loop's variable is one tensor rotating
        over that loop's iterations; any other symbolic block index unrolls the loop."""
        layout, first = self.indexed(tracer, index)
        if first and fill and self.lazy_fill is not None:  # its lazy initialization now
            self.fill(tracer, index, layout)
        return layout

    def fill(self, tracer: Tracer, index: tuple[Any, ...], layout: Layout) -> None:
        """Block ``index``'s lazy initialization (``layout``, the block), at its first use: once
        for the block, as "zeroed when first indexed" means.  The kept loops opened since the
        declaration share the block across their iterations, so the fill goes before them; in
        their body it zeroed the block in every iteration (a PSUM accumulation over an inner
        kept loop kept its last matmul alone, and a block reused across a loop hid the carried
        finding: a probe).  A block rotating with a kept loop (a tile of each iteration) is
        filled where it is first used, in that iteration."""
        opened = len(tracer.kept_loops()) - len(self.scope or ())
        tracer.flush()  # (a call made before stays where it was made)
        mark = tracer.kb.mark()
        self.lazy_fill(layout)
        if opened > 0 and _rotation_loop(index) is None and tracer.kb.depth == self.depth + opened:
            tracer.kb.move_since(mark, self.depth)

    def indexed(self, tracer: Tracer, index: tuple[Any, ...]) -> tuple[Layout, bool]:
        """Block ``index`` (:meth:`block`, unfilled) and whether this is its first use."""
        known = len(self.slots)
        layout = self._block(tracer, index)
        return layout, len(self.slots) > known

    def outside(self, index: tuple[Any, ...]) -> str | None:
        """Why block ``index`` is none of the tensor's (an integer index past its blocks), else None."""
        if any(isinstance(b, (int, np.integer)) and not 0 <= b < n for b, n in zip(index, self.spec.blocks)):
            return f"block {tuple(int(b) for b in index)} of {self.name} is outside its blocks {self.spec.blocks}"
        return None

    def _block(self, tracer: Tracer, index: tuple[Any, ...]) -> Layout:
        spec, alloc = self.spec, self.spec.allocator
        if isinstance(alloc, ModAlloc) and len(index) == 1 and isinstance(index[0], SymIndex) \
                and len(alloc.tiles) == 1:
            terms = index[0].index.terms
            if index[0].index.const == 0 and len(terms) == 1 and terms[0][1] == 1:
                loop = terms[0][0]
                if len(self.slots) > len(self.rotating):  # a block by constants (a tuple key)
                    raise NotAffine((loop,), f"blocks of {self.name} by the loop and by constants (one tile each)")
                if loop not in self.slots:
                    # one tensor rotating over the loop (its x-rotate names the loop)
                    self.slots[loop] = _place(tracer, spec, f"{self.name}_rot", 0, rotate=(alloc.tiles[0], loop),
                                              depth=self.depth, scope=self.scope, site=self.site, group=self.name)
                    self.rotating.append(loop)
                return self.slots[loop]
        if self.rotating:  # a block the loop's rotation holds too: unroll it, so every block is its own tensor
            raise NotAffine(tuple(self.rotating), f"blocks of {self.name} by a loop and by constants (one tile each)")
        block = tuple(concrete(b, "a block index of a directly allocated tensor") for b in index)
        why = self.outside(block)
        if why is not None:
            raise fail(why)
        if block not in self.slots:
            if isinstance(alloc, ModAlloc):
                tiles = alloc.tiles + (1,) * (len(block) - len(alloc.tiles))
                slot: Any = 0
                for b, n in zip(block, tiles):
                    slot = slot * n + b % n
            else:
                slot = block
            name = f"{self.name}_b{'_'.join(str(b) for b in block)}" if block else self.name
            if alloc is None:  # a virtual block tensor: each block a virtual tile of its own
                name = tracer.unique(name)
                ref = (tracer.kb.psum if spec.buffer == "psum" else tracer.kb.sbuf)(name, spec.tile_shape, spec.dtype)
                self.slots[block] = Layout.whole(tracer.note_declared(ref.name, self.scope, self.depth,
                                                                      source_extras(self.site, ref.name)))
                self.held.append(tracer.liveness.hold(self.slots[block]))
            else:
                self.slots[block] = _place(tracer, spec, name, slot, depth=self.depth, scope=self.scope,
                                           site=self.site, group=self.name)
        return self.slots[block]


def _call_allocator(fn: Any, idx: Any, pdim_size: int, fdim_size: int) -> Any:
    """An ``ncc.sbuf.alloc(fn)`` / ``psum.alloc(fn)`` callback on one block: by the names the
    direct-allocation guide gives (``idx``, ``pdim_size``, ``fdim_size``) when it takes them,
    else in that order (a callback ``def f(idx, p, f)`` is the same function to Python)."""
    try:
        inspect.signature(fn).bind(idx=idx, pdim_size=pdim_size, fdim_size=fdim_size)
    except (TypeError, ValueError):
        return fn(idx, pdim_size, fdim_size)
    return fn(idx=idx, pdim_size=pdim_size, fdim_size=fdim_size)


def _place(tracer: Tracer, spec: TileSpec, name: str, slot: Any, rotate: tuple[int, str] | None = None,
           depth: int | None = None, scope: list[str] | None = None,
           site: tuple[SourceLine, str, str | None] | None = None, group: str | None = None) -> Layout:
    """Declare one placed block tensor: slot ``slot`` of the allocation (or a rotation); ``group``
    (``x-nki-alloc``) names the kernel tensor whose blocks it is."""
    kb, alloc = tracer.kb, spec.allocator
    name = tracer.unique(name)
    shape = spec.tile_shape
    tile_bytes = prod(shape[1:]) * itemsize(spec.dtype)
    slots, loop = rotate if rotate else (1, None)
    if isinstance(alloc, FnAlloc):
        placed = _call_allocator(alloc.fn, slot, shape[0], prod(shape[1:]))
        if alloc.memory == "psum":
            bank, partition, offset = (int(v) for v in placed)
        else:
            (partition, offset), bank = (int(v) for v in placed), None
    elif alloc.memory == "psum":
        bank, partition, offset = alloc.base + slot, alloc.base_partition, 0
    else:
        bank, partition, offset = None, alloc.base_partition, alloc.base + slot * tile_bytes
    if spec.buffer == "psum":
        if tile_bytes > PSUM_BANK_BYTES:
            raise fail(f"PSUM tile {name} holds {tile_bytes} bytes per partition, more than a 2 KiB bank")
        ref = kb.psum(name, shape, spec.dtype, partition=partition, bank=bank + core_base(tracer, "psum"),
                      offset=offset, slots=slots, loop=loop)
    else:
        ref = kb.sbuf(name, shape, spec.dtype, partition=partition, offset=offset + core_base(tracer, "sbuf"),
                      slots=slots, loop=loop, stride=tile_bytes if rotate else None)
    extras = source_extras(site, ref.name, {ALLOC_GROUP_KEY: group} if group else {})
    return Layout.whole(tracer.note_declared(ref.name, scope, depth, extras))


def source_extras(site: tuple[SourceLine, str, str | None] | None, name: str,
                  extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """``extra`` and, from ``site``, the declaration as ``x-source`` (file, line, call, the
    kernel's variable): whole-program errors about the tensor (allocation, placement) name
    that line."""
    extras = dict(extra or {})
    if site is not None:
        line, call, variable = site
        extras["x-source"] = {"file": line.file, "line": line.line, "call": call, "variable": variable or name}
    return extras


def _too_wide(tracer: Tracer, spec: TileSpec, tile_bytes: int, name: str) -> None:
    """Refuse an on-chip tile no allocation can place: wider than an SBUF partition or, in
    PSUM, than a bank (its accumulation lives in one bank)."""
    if spec.buffer == "psum":
        limit, what = PSUM_BANK_BYTES, "a 2 KiB PSUM bank"
        if tracer.generation != "legacy":
            # the current API's PSUM tensors may span banks (NKI 0.4 on: tile_size.psum_bank_fmax
            # is per bank, psum_fmax deprecated "despite the name"); the legacy API's tile is one bank
            banks = resolve_machine(tracer.machine).psum_banks
            limit, what = banks * PSUM_BANK_BYTES, f"the {banks} PSUM banks"
    else:
        limit, what = resolve_machine(tracer.machine).sbuf_partition_bytes, "an SBUF partition"
    if tile_bytes > limit:
        raise fail(f"{name}: a tile of {spec.tile_shape} {spec.dtype} holds {tile_bytes} bytes a partition, more "
                   f"than the {limit} of {what}")


def declare_tile(tracer: Tracer, spec: TileSpec, hint: str | None = None,
                 site: tuple[SourceLine, str] | None = None) -> Layout | Blocked:
    """Declare a tensor for ``spec`` named after ``hint``, else the kernel line's variable
    (``site``: the kernel line and NKI call, by default the current ones); see :func:`declare`."""
    line, call = site or tracer.where()
    return declare(tracer, spec, tracer.tensor_name(hint, line, call), (line, call, hint or assigned_name(line)))


def declare(tracer: Tracer, spec: TileSpec, name: str,
            site: tuple[SourceLine, str, str | None] | None = None) -> Layout | Blocked:
    """Declare the tensor of ``spec`` under ``name``: its whole :class:`Layout` (or a
    :class:`Blocked` for a directly allocated tensor with blocks, and for a virtual one with
    blocks that together exceed an SBUF partition or a PSUM bank: each block a tile of its own,
    allocated while it is live, as the compiler does with ``(B, par_dim(P), F)`` tensors).
    ``site`` (kernel line, call, variable) becomes each on-chip tensor's ``x-source``."""
    kb = tracer.kb
    if spec.buffer in HBM_KINDS:  # x-source too: a DRAM tensor too large names its line
        dram = kb.dram(name, spec.shape, spec.dtype, address=_next_dram(kb, spec))
        return Layout.whole(tracer.kb.amend_extras(dram.name, source_extras(site, dram.name)) if site else dram.tensor)
    tile_bytes = prod(spec.tile_shape[1:]) * itemsize(spec.dtype)
    if spec.allocator is None and spec.address is None:
        _too_wide(tracer, spec, tile_bytes, name if site is None or site[2] is None else site[2])
    if spec.allocator is not None or (spec.blocks and spec.address is None and _split_blocks(tracer, spec, tile_bytes)):
        if spec.blocks:
            tracer.reserved.add(name)  # its blocks are the tensors: a second declaration here is name_1
        blocked = Blocked(spec, name, {}, kb.depth, tracer.kept_loops(), site)
        return blocked.block(tracer, (0,) * len(spec.blocks)) if not spec.blocks else blocked
    ir_shape = (spec.shape[spec.par_axis], *spec.blocks, *spec.shape[spec.par_axis + 1:])
    if spec.address is not None:
        partition, byte = spec.address
        if spec.buffer == "psum":
            kb.psum(name, ir_shape, spec.dtype, partition=partition,
                    bank=byte // PSUM_BANK_BYTES + core_base(tracer, "psum"), offset=byte % PSUM_BANK_BYTES)
        else:
            kb.sbuf(name, ir_shape, spec.dtype, partition=partition, offset=byte + core_base(tracer, "sbuf"))
    elif spec.buffer == "psum":
        kb.psum(name, ir_shape, spec.dtype)
    else:
        kb.sbuf(name, ir_shape, spec.dtype)
    return Layout.whole(tracer.note_declared(name, extras=source_extras(site, name)), par_axis=spec.par_axis)


def core_base(tracer: Tracer, memory: str) -> int:
    """Where a core's own SBUF bytes (or PSUM banks) start in a two-core kernel's program: the
    two cores' memories side by side, core 1's after core 0's (machine/nki/cores.py; a launch on
    ranks likewise, rank ``r``'s after ``r - 1``'s), so a tile the kernel placed itself lands in
    its own memory; 0 otherwise."""
    if tracer.cores is None or tracer.cores.rank() == 0:
        return 0
    spec = resolve_machine(tracer.machine)
    return tracer.cores.rank() * (spec.psum_banks if memory == "psum" else spec.sbuf_partition_bytes)


def _split_blocks(tracer: Tracer, spec: TileSpec, tile_bytes: int) -> bool:
    """Whether a virtual tensor with blocks is a tile per block (else one tensor).

    Declared outside any loop: a tile per block.  neuronx-cc allocates the tiles of a traced
    kernel itself, each with its own live range, where one tensor would hold every block's
    bytes for the whole kernel: a kernel it prints declares a dozen arrays of 128 KiB a
    partition, of which a few blocks are live at a time, and as whole tensors they were spilled
    where the hardware spills nothing (NKIBench's ``rmsnorm_matmul``: 127 MB of spills
    simulated, none measured; docs/timing.md).  Declared in a loop, the array lives an
    iteration: one tensor while its blocks fit an SBUF partition (PSUM: a bank), so that a kept
    loop indexing it stays a loop."""
    if not tracer.loops:
        return True
    limit = PSUM_BANK_BYTES if spec.buffer == "psum" else resolve_machine(tracer.machine).sbuf_partition_bytes
    return prod(spec.blocks) * tile_bytes > limit


def _next_dram(kb: Any, spec: TileSpec) -> int:
    """A fresh DRAM address (kernel tensors in HBM are placed by the runtime, as arguments are)."""
    return kb.next_dram_address(prod(spec.shape) * itemsize(spec.dtype))
