"""The API pages' rules on an ISA call's operands that neuronsim checks at the call, each
refused at the kernel line with the page's words (a probe of generated kernel mistakes found
them running: an internal error, an operand read out of shape, an engine swapped silently).

* :func:`pattern_pairs`: an ``iota`` / ``affine_select`` ``pattern`` of ``[step, count]``
  pairs covering ``dst``'s elements a partition;
* :func:`same_shape`: an operand of ``dst``'s shape (``affine_select``'s ``on_true_tile``);
* :func:`pool_off_psum`: GpSimd named for an operand in PSUM;
* :func:`transposable_into`: an ``nc_transpose`` no engine can do into an SBUF ``dst``.
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from neuronsim.machine.nki import ops
from neuronsim.machine.nki.errors import fail
from neuronsim.machine.nki.layout import Layout
from neuronsim.machine.nki.tiles import is_tile

__all__ = ["pattern_pairs", "same_shape", "pool_off_psum", "transposable_into"]


def pattern_pairs(pattern: Any, dst: Layout, call: str) -> list[list[int]]:
    """An ``iota`` / ``affine_select`` ``pattern``: ``[step, count]`` pairs of integers whose
    counts multiply to ``dst``'s elements a partition (the iota page: "as long as the number of
    elements per partition in dst matches the product"; affine_select's is "similar to
    nisa.iota").  A flat ``[1, 512]`` was an internal error, a short count ignored."""
    try:
        pairs = [(step, count) for step, count in pattern]
    except (TypeError, ValueError):
        raise fail(f"{call}: pattern is a list of [step, count] pairs (such as [[1, 512]]), not {pattern!r}") from None
    if not pairs or any(not isinstance(v, (int, np.integer)) or isinstance(v, bool) for pair in pairs for v in pair) \
            or any(count < 1 for _step, count in pairs):
        raise fail(f"{call}: pattern {pattern!r}: each [step, count] pair holds two integers, the count at least 1")
    covered, holds = prod(int(count) for _step, count in pairs), dst.view().free_count
    if covered != holds:
        raise fail(f"{call}: pattern {pattern!r} covers {covered} elements a partition, and dst {dst.tensor.name} "
                   f"{dst.shape} holds {holds} (its page: the counts' product is dst's elements per partition)")
    return [[int(step), int(count)] for step, count in pairs]


def pool_off_psum(engine: str | None, call: str, *operands: Any) -> None:
    """Refuse GpSimd (``engine``, as the kernel named it) asked for an operand in PSUM (the
    tensor_copy page: "GpSimd cannot access PSUM"; it ran on the Vector Engine instead, without
    a word, where tensor_scalar is refused)."""
    if engine == "pool":
        for value in operands:
            layout = value if isinstance(value, Layout) else ops.lay(value) if is_tile(value) else None
            if layout is not None and layout.tensor.memory.name == "PSUM":
                raise fail(f"{call}(engine=nisa.gpsimd_engine) of {layout.tensor.name} in PSUM: GpSimd cannot "
                           "access PSUM (its page): name the vector or scalar engine, or none")


def transposable_into(dst: Layout, source: Layout) -> None:
    """An ``nc_transpose`` into ``dst`` with no engine named: into SBUF only the Vector Engine
    writes, and it transposes (32, 32) or smaller (the page; the Tensor Engine's (128, 128) go
    to PSUM); a 128 x 128 tile into SBUF ran on the Vector Engine without a word."""
    view = source.view()
    if dst.tensor.memory.name == "SBUF" and (view.num_partitions > 32 or view.free_count > 32):
        raise fail(f"nisa.nc_transpose of a {view.shape} tile into {dst.tensor.name} in SBUF: the Vector Engine, "
                   "the one that writes SBUF, transposes (32, 32) or smaller, and the Tensor Engine writes PSUM "
                   "only (its page): transpose into a PSUM tile")


def same_shape(value: Any, dst: Layout, call: str, name: str) -> None:
    """Refuse an operand tile of another shape than ``dst`` (affine_select's page: on_true_tile and
    the output "must have the same shape"; it read the wrong elements)."""
    layout = value if isinstance(value, Layout) else ops.lay(value) if is_tile(value) else None
    shape = tuple(layout.shape) if layout is not None else None
    if shape is not None and shape != tuple(dst.shape):
        raise fail(f"{call}: {name} is {shape}, and dst {dst.tensor.name} is {tuple(dst.shape)}: its page asks "
                   "for the same shape")
