"""``nisa.dma_transpose`` in all its forms: a DRAM source read in permuted order (a transposing
``dma_copy``), an on-chip source permuted by the DMA engines (the ``dma_transpose`` op, with
the source's ``shape`` and the permutation ``axes`` beyond 2-D), and rows gathered by a tile of
indices, then permuted (the API page's indirect transpose: ``gathered = src[indices]``,
``dst = transpose(gathered)``).

The permutations are the API page's: ``(1, 0)`` for a 2-D source, ``(2, 1, 0)`` for 3-D and
``(3, 1, 2, 0)`` for 4-D; ``axes=`` may name only the one of its rank.  A gather reads its
indices on the traced inputs as any indirect DMA does (:mod:`~neuronsim.machine.nki.indirect`:
one ``dge_indices`` on POOL, then one software-DGE transfer per run of evenly stepping rows,
the indices recorded as a decision); each transfer permutes its run of rows into the
destination positions the run stands for.
"""

from __future__ import annotations

from typing import Any

from neuronsim.machine.ir.dtypes import itemsize
from neuronsim.machine.nki import operand_rules, ops, reinterpret
from neuronsim.machine.nki.errors import fail
from neuronsim.machine.nki.layout import Layout
from neuronsim.machine.nki.tracer import current

__all__ = ["DMA_TRANSPOSE_AXES", "dma_transpose", "permutation", "transposed_shape", "page_rules"]

#: The permutations the dma_transpose API page lists, by the source's rank (the i-th axis of
#: the result is axis ``perm[i]`` of the source); the only ones ``axes=`` may name.
DMA_TRANSPOSE_AXES = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}


def permutation(rank: int, axes: Any = None) -> tuple[int, ...]:
    """The page's permutation of a ``rank``-D source; ``axes`` must be it when given."""
    perm = DMA_TRANSPOSE_AXES.get(rank)
    if perm is None or (axes is not None and tuple(int(a) for a in axes) != perm):
        raise current().refuse(f"nisa.dma_transpose of a {rank}-D source with axes {axes}",
                               "the API page's (1, 0), (2, 1, 0) and (3, 1, 2, 0)")
    return perm


def transposed_shape(shape: tuple[int, ...], axes: Any = None) -> tuple[int, ...]:
    """The result shape of ``dma_transpose`` of a source of ``shape``.

    >>> transposed_shape((5, 1, 3, 128)), transposed_shape((32, 4, 128))
    ((128, 1, 3, 5), (128, 4, 32))
    """
    perm = DMA_TRANSPOSE_AXES.get(len(shape)) if axes is None else tuple(int(a) for a in axes)
    return tuple(shape[a] for a in perm) if perm else tuple(shape[::-1])


def page_rules(dst: Layout, src: Layout, dge_mode: Any) -> None:
    """The current API page's rules on a ``dma_transpose``: ``src.dtype == dst.dtype``; a direct
    transpose takes ``dge_mode`` unknown or ``hwdge``, an indirect one unknown or ``swdge``; a
    hardware-DGE transpose ("only supported for NeuronCore-v3 or newer": a warning, as
    :func:`~neuronsim.machine.nki.operand_rules.from_generation` says why) of a 2-byte dtype, a
    2-D source of 16 rows or a 3-D / 4-D one of 1, 2, 4, 8 or 16 with ``src.shape[0] *
    src.shape[-2]`` a multiple of 16, and at most 128 elements in the last axis.  (Each ran,
    a float32 hwdge transpose of 128 rows among them: probes of kernel mistakes.)"""
    if not (src.bitcast or dst.bitcast) and src.element_dtype != dst.element_dtype:
        raise fail(f"nisa.dma_transpose of a {src.element_dtype} source into a {dst.element_dtype} dst: its page asks "
                   "src.dtype == dst.dtype (a DMA transpose casts nothing)")
    mode = getattr(dge_mode, "name", dge_mode)
    if not isinstance(mode, str) or mode == "unknown":
        return
    indirect = src.indirect is not None
    valid = "swdge" if indirect else "hwdge"
    if mode != valid:
        raise fail(f"nisa.dma_transpose(dge_mode={mode}) of {'an indirect' if indirect else 'a direct'} source: its "
                   f"page: the only valid dge_modes are unknown and {valid}")
    if mode != "hwdge":
        return
    operand_rules.from_generation("nisa.dma_transpose(dge_mode=hwdge)", 3)
    shape = tuple(src.shape)
    rows = shape[0] == 16 if len(shape) == 2 else shape[0] in (1, 2, 4, 8, 16) and shape[0] * shape[-2] % 16 == 0
    if not rows or shape[-1] > 128 or itemsize(src.element_dtype) != 2:
        raise fail(f"nisa.dma_transpose(dge_mode=hwdge) of a {shape} {src.element_dtype} source: its page asks a "
                   "2-byte dtype, src.shape[-1] <= 128 and src.shape[0] == 16 for a 2-D source (for 3-D / 4-D, "
                   "src.shape[0] in {1, 2, 4, 8, 16} and src.shape[0] * src.shape[-2] a multiple of 16)")


def _permuted(layout: Layout, perm: tuple[int, ...]) -> Layout:
    """``layout`` with its axes in the order ``perm`` (the same elements, read permuted)."""
    return Layout(layout.tensor, tuple(layout.axes[a] for a in perm), layout.offset, layout.partitions)


def _inverse(perm: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(perm.index(k) for k in range(len(perm)))


def dma_transpose(dst: Layout, src: Layout, axes: Any = None, engine: str = "sp") -> None:
    """``dst = transpose(src)`` by DMA (see the module doc)."""
    perm = permutation(len(src.axes), axes)
    if src.indirect is not None:
        _gathered(dst, src, perm)
    elif src.on_chip:
        if src.bitcast or dst.bitcast:  # the on-chip permutation moves the tensors' own elements
            raise current().refuse("nisa.dma_transpose on chip of a view read as another dtype",
                                   "an on-chip transpose moves the tensor's own elements")
        on_chip(dst, src, perm, engine)
    elif src.bitcast:  # read as another dtype: whole read elements move (machine/nki/reinterpret.py)
        ops.dma(dst, reinterpret.permuted(src, perm))
    else:  # from DRAM: the transfer reads the source in the permuted order of its access pattern
        ops.dma(dst, _permuted(src, perm))


def on_chip(dst: Layout, src: Layout, perm: tuple[int, ...], engine: str = "sp", dge: str | None = None) -> None:
    """An on-chip source permuted by the DMA engines (one ``dma_transpose`` instruction)."""
    want = tuple(src.shape[a] for a in perm)
    if tuple(dst.shape) != want and [n for n in dst.shape if n != 1] != [n for n in want if n != 1]:
        raise fail(f"nisa.dma_transpose: {tuple(dst.shape)} is not the transpose of the {len(perm)}-D "
                   f"{tuple(src.shape)} ({want} with axes {perm})")
    if "PSUM" in (dst.tensor.memory.name, src.tensor.memory.name):
        raise fail("a DMA cannot read or write PSUM (copy the tile to SBUF first)")
    tracer = current()
    tracer.note_write(dst)
    attrs: dict[str, Any] = {"dge": dge}
    if len(perm) > 2:  # beyond [P, F]: the semantics need the source's shape and the permutation
        attrs.update(shape=[int(n) for n in src.shape], axes=list(perm))
    tracer.kb.instruction("dma_transpose", engine, [src.view()], [dst.view()], attrs=attrs, queue=ops.QUEUES[engine])


def _gathered(dst: Layout, src: Layout, perm: tuple[int, ...]) -> None:
    """Rows of ``src`` picked by its tile of indices, then permuted: the indirect DMA pairs each
    run of rows with the destination positions it fills, seen through ``dst`` with its axes in
    the source's order; each pair is then permuted back into a transposing transfer."""
    from neuronsim.machine.nki.indirect import indirect_dma  # it reads device values: above ops, as ops does

    back = _inverse(perm)
    source_order = _permuted(dst, back)

    def transfer(piece: Layout, part: Layout, engine: str = "pool", dge: str | None = "swdge") -> None:
        if part.on_chip and part.partitions[2] == 0 and part.partitions[1] > 1:  # a row repeated: one each
            axis = src.indirect.axis
            for k in range(part.partitions[1]):
                transfer(piece.restrict_axis(axis, k, k + 1), part.restrict_axis(axis, k, k + 1), engine, dge)
            return
        target = _permuted(piece, perm)
        if part.on_chip:
            on_chip(target, part, perm, engine, dge)
        else:
            ops.dma(target, _permuted(part, perm), engine=engine, dge=dge)

    indirect_dma(source_order, src, transfer, columns=True)
