"""``nisa.quantize_mx`` (Vector engine) and ``nisa.nc_matmul_mx`` (Tensor engine): OCP
microscaling (MX) on NeuronCore-v4.

The tiles are ``_x4`` packed tiles (four fp8 / fp4 lanes an element, see
:mod:`neuronsim.machine.ir.dtypes`) and their E8M0 scale tiles; the numerics and the scale
layout (each 32-partition quadrant keeps the scales of its groups in its first rows) are in
:mod:`neuronsim.machine.model.semantics_mx`.  Every rule the NKI reference states for the
operands is checked here and a break is one line at the kernel's call.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from neuronsim.machine.ir.dtypes import PACKED
from neuronsim.machine.nki import operand_rules, ops
from neuronsim.machine.nki.errors import fail
from neuronsim.machine.nki.layout import P, Layout
from neuronsim.machine.nki.tiles import is_tile
from neuronsim.machine.nki.tracer import api, current

__all__ = ["isa_names", "MX_OPS"]

#: The ``nki.isa`` names this module implements.
MX_OPS = ("quantize_mx", "nc_matmul_mx")
_SCALE_DTYPES = ("uint8", "float8_e8m0fnu")
_FP8_X4 = ("float8_e4m3fn_x4", "float8_e5m2_x4")


def _sbuf_tile(value: Any, what: str) -> Layout:
    if not (isinstance(value, Layout) or is_tile(value)):
        raise fail(f"{what} must be a tile, got {type(value).__name__}")
    layout = value if isinstance(value, Layout) else ops.lay(value)
    if layout.tensor.memory.name != "SBUF":
        raise fail(f"{what} must be in SBUF, {layout.tensor.name} is in {layout.tensor.memory.name}")
    return layout


def _dtype(layout: Layout, allowed: tuple[str, ...], what: str) -> str:
    dtype = layout.element_dtype  # a reinterpreting view (.view / .ap(dtype=)) names its own
    if dtype not in allowed:
        raise fail(f"{what} {layout.tensor.name} is {dtype}; expected one of {', '.join(allowed)}")
    return dtype


def _quadrant_rows(data: Layout, scale: Layout, what: str, shift: int = 0) -> None:
    """The data's partitions (a multiple of 32, at most 128) and room for their scale rows."""
    partitions = data.view().num_partitions
    if partitions % 32 or partitions > 128:
        raise fail(f"{what}: {data.tensor.name} spans {partitions} partitions; MX needs a multiple of 32, "
                   "at most 128")
    needed = 32 * (partitions // 32 - 1) + 4 + shift  # the last quadrant's 4 scale rows
    if scale.view().num_partitions < needed:
        raise fail(f"{what}: the scale tile {scale.tensor.name} has {scale.view().num_partitions} partitions; "
                   f"{partitions} data partitions keep their scales in the first 4 rows of each quadrant "
                   f"(needs {needed})")
    if scale.view().free_count < data.view().free_count:
        raise fail(f"{what}: the scale tile {scale.tensor.name} {scale.shape} has fewer elements a partition than "
                   f"the data {data.tensor.name} {data.shape}")


def _from_quadrant(scale: Layout, what: str) -> tuple[Layout, int]:
    """The scale access widened down to its quadrant's first partition, and the row it
    started on there: the engines address MX scales by quadrant plus a start row (NKI's
    profiler names it ``start_scale_partition``), so a scale view may start on any row, as
    the deep dive packs two tiles' scales into rows 0-3 and 4-7 of each quadrant."""
    start, count, step = scale.partitions or (0, scale.tensor.shape[0], 1)
    if step != 1 and count > 1:
        raise fail(f"{what}: the scale tile {scale.tensor.name} must cover consecutive partitions")
    shift = start % 32
    if shift == 0:
        return scale, 0
    axes = tuple((kind, stride, n + shift) if kind == P else (kind, stride, n) for kind, stride, n in scale.axes)
    return replace(scale, axes=axes, partitions=(start - shift, count + shift, 1), tags=None, limits=None), shift


def _instr(op: str, engine: str, reads: list[Layout], writes: list[Layout], attrs: dict) -> None:
    tracer = current()
    for layout in writes:
        tracer.note_write(layout)
    tracer.kb.instruction(op, engine, [r.view() for r in reads], [w.view() for w in writes], attrs=attrs)


def quantize(dst: Layout, src: Any, dst_scale: Any) -> None:
    what = "nisa.quantize_mx"
    source = _sbuf_tile(src, f"{what} src")
    scale = _sbuf_tile(dst_scale, f"{what} dst_scale")
    _sbuf_tile(dst, f"{what} dst")
    _dtype(source, ("bfloat16", "float16"), f"{what}: src")
    dtype = _dtype(dst, _FP8_X4, f"{what}: dst")
    _dtype(scale, _SCALE_DTYPES, f"{what}: dst_scale")
    if dst.view().num_partitions != source.view().num_partitions:
        raise fail(f"{what}: dst {dst.shape} and src {source.shape} have different partition counts")
    if source.view().free_count != 4 * dst.view().free_count:
        raise fail(f"{what}: src {source.shape} must hold 4 elements a partition for each packed element of dst "
                   f"{dst.shape}")
    scale, shift = _from_quadrant(scale, what)
    _quadrant_rows(dst, scale, what, shift)
    _instr("quantize_mx", "dve", [source], [dst, scale], {"dtype": dtype, "scale_start": shift})


def matmul(dst: Layout, stationary: Any, moving: Any, stationary_scale: Any, moving_scale: Any,
           accumulate: bool) -> None:
    what = "nisa.nc_matmul_mx"
    st, mv = _sbuf_tile(stationary, f"{what} stationary"), _sbuf_tile(moving, f"{what} moving")
    st_scale = _sbuf_tile(stationary_scale, f"{what} stationary_scale")
    mv_scale = _sbuf_tile(moving_scale, f"{what} moving_scale")
    if dst.tensor.memory.name != "PSUM":
        raise fail(f"{what}: dst must be in PSUM, {dst.tensor.name} is in {dst.tensor.memory.name}")
    st_dtype = _dtype(st, tuple(PACKED), f"{what}: stationary")
    mv_dtype = _dtype(mv, tuple(PACKED), f"{what}: moving")
    _dtype(st_scale, _SCALE_DTYPES, f"{what}: stationary_scale")
    _dtype(mv_scale, _SCALE_DTYPES, f"{what}: moving_scale")
    _dtype(dst, ("float32", "bfloat16"), f"{what}: dst")
    k, m, n = st.view().num_partitions, st.view().free_count, mv.view().free_count
    if mv.view().num_partitions != k or (dst.view().num_partitions, dst.view().free_count) != (m, n):
        raise fail(f"{what}: stationary {st.shape} [K, M], moving {mv.shape} [K, N] and dst {dst.shape} [M, N] "
                   "disagree")
    if m > 128:
        raise fail(f"{what}: stationary {st.shape} has {m} columns; the Tensor engine takes at most 128")
    (st_scale, st_shift), (mv_scale, mv_shift) = _from_quadrant(st_scale, what), _from_quadrant(mv_scale, what)
    _quadrant_rows(st, st_scale, what, st_shift)
    _quadrant_rows(mv, mv_scale, what, mv_shift)
    reads = [st, mv, st_scale, mv_scale] + ([dst] if accumulate else [])
    _instr("matmul_mx", "pe", reads, [dst], {"accumulate": accumulate, "stationary_dtype": st_dtype,
                                             "moving_dtype": mv_dtype, "stationary_scale_start": st_shift,
                                             "moving_scale_start": mv_shift})


def isa_names() -> dict[str, Any]:
    """``nisa.quantize_mx`` and ``nisa.nc_matmul_mx`` (the current API: ``dst`` first)."""
    from neuronsim.machine.nki.handles import emit_call as _emit
    from neuronsim.machine.nki.handles import written as _dst

    @api("nisa.quantize_mx")
    def quantize_mx(dst, src, dst_scale, name=None, **_kw):
        operand_rules.from_generation("nisa.quantize_mx", 4)
        return _emit(lambda: quantize(_dst(dst), src, dst_scale), name)

    @api("nisa.nc_matmul_mx")
    def nc_matmul_mx(dst, stationary, moving, stationary_scale, moving_scale, tile_position=None, tile_size=None,
                     accumulate=None, name=None, **_kw):
        operand_rules.from_generation("nisa.nc_matmul_mx", 4)
        tracer = current()
        if accumulate is None:  # as nc_matmul: add to an open accumulation group
            tracer.flush()
            accumulate = tracer.accumulates_into(ops.lay(dst))
        return _emit(lambda: matmul(_dst(dst), stationary, moving, stationary_scale, moving_scale,
                                    bool(accumulate)), name)

    return {"quantize_mx": quantize_mx, "nc_matmul_mx": nc_matmul_mx}
