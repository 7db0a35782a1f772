"""Tile and tensor proxies: what an NKI kernel holds while it is traced.

An :class:`NkiTensor` stands for an HBM tensor, an on-chip tile or a view of one.  Slicing gives views
(:class:`~neuronsim.machine.nki.layout.Layout`); assignment, ``+=`` and Python operators become instructions through
the NKI calls :mod:`neuronsim.machine.nki.language` registers in :data:`OPERATORS` when it is imported (as torch.fx's
``Proxy`` hands its operators to its tracer: the proxies sit below the calls they stand for).  A result not yet
emitted (:func:`result_tile`) has a ``_spec`` but no ``_layout`` until it is used."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from math import prod
from typing import Any

from neuronsim.machine.ir.dtypes import itemsize
from neuronsim.machine.nki.alloc import BUFFERS, Blocked, Buffer, TileSpec, check_partitions, declare_tile
from neuronsim.machine.nki.dtypes import NkiDtype, to_dtype
from neuronsim.machine.nki.errors import IndexOutside, NoSuchTensorAttribute, Refused, fail
from neuronsim.machine.nki.indexing import ArangeExpr, SymIndex
from neuronsim.machine.nki.indirect import dimension, vector_offset_view
from neuronsim.machine.nki import frames, keywords, masked_access, tensor_views as views
from neuronsim.machine.nki.layout import P, Layout
from neuronsim.machine.nki.reinterpret import bitcast_ap, index_read_as, other_size, reinterpret
from neuronsim.machine.nki.tracer import current, tracing

#: How each API branches on a tile's contents, by the tracer's ``generation``: the nki package
#: reads a value into a scalar and branches on it; ``neuronxcc.nki`` has no such branch, only the
#: element-wise choice (``nl.where``).
_BRANCH_ON_CONTENTS = {
    "current": "read it with nisa.scalar_load and branch with nl.if_else",
    "legacy": "compute both outcomes and choose element by element with nl.where (neuronxcc.nki has no branch "
              "on a tile's contents; the nki package's nl.if_else branches on an nisa.scalar_load)",
}

#: NkiTensor methods of the API reference module that neuronsim does not model.
_VIEW_METHODS = frozenset(("indirect",))

__all__ = ["NkiTensor", "is_tile", "result_tile", "OPERATORS", "register_operators"]

#: What a tile's Python syntax does, by name: ``assign`` (``t[...] = v``), ``accumulate``
#: (``t += v``, with the ALU op's name), ``broadcast_partitions``, ``transpose`` (``t.T``) and
#: the NKI calls of the arithmetic operators (``add`` ... ``greater_equal``).
OPERATORS: dict[str, Callable[..., Any]] = {}


def register_operators(**handlers: Callable[..., Any]) -> None:
    """Make ``handlers`` what tiles' operators call (neuronsim.machine.nki.language does so on import)."""
    OPERATORS.update(handlers)


def _operator(name: str) -> Callable[..., Any]:
    handler = OPERATORS.get(name)
    if handler is None:
        raise fail(f"a tile's {name!r} operator used before neuronsim.machine.nki.language was imported")
    return handler


def result_tile(shape: tuple[int, ...], dtype: Any, buffer: str, emit: Callable[..., None], mask: Any = None,
                sources: tuple[Any, ...] = ()) -> NkiTensor:
    """The tile an NKI call returns: pending until used (:meth:`~neuronsim.machine.nki.tracer.Tracer.result`),
    ``emit(dst)`` then writes it; used before it is assigned, it gets a fresh tile of ``shape`` / ``dtype``."""
    tracer = current()
    if buffer != "hbm":  # at the call, not where the tile is first used; one of elements (nl.add(t[0, 0], 3)): [1, 1]
        shape = tuple(shape) or (1, 1)
        check_partitions(int(shape[0]))
    spec = TileSpec(tuple(int(n) for n in shape), to_dtype(dtype), buffer)
    return tracer.result(NkiTensor(spec=spec), emit, lambda site: declare_tile(tracer, spec, None, site), mask,
                         sources)


def _is_number(value: Any) -> bool:
    """A Python int or float (not a bool), or a numpy scalar."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)) or (
        type(value).__module__ == "numpy" and getattr(value, "ndim", 1) == 0)


def _one_tuple(dims: tuple[Any, ...]) -> tuple[Any, ...]:
    """``permute((0, 2, 1))`` and ``permute(0, 2, 1)`` alike."""
    return tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims


def is_tile(value: Any) -> bool:
    return isinstance(value, NkiTensor)


class NkiTensor:
    """A tensor, tile or view in a traced kernel (``shape``, ``dtype``, ``buffer``, slicing)."""

    __slots__ = ("_layout", "_spec", "_blocked", "_held", "__weakref__")

    def __init__(self, layout: Layout | None = None, spec: TileSpec | None = None,
                 blocked: Blocked | None = None) -> None:
        self._layout = layout
        self._spec = spec
        self._blocked = blocked
        self._held = current().liveness.hold(layout) if layout is not None and tracing() else None

    def settle(self, layout: Layout) -> Layout:
        """Give a result tile without storage yet (a held-back call's) its ``layout``."""
        self._layout = layout
        self._held = current().liveness.hold(layout)
        return layout

    # -- what the tile is --------------------------------------------------------------------
    @property
    def layout(self) -> Layout:
        if self._blocked is not None:
            raise fail(f"{self._blocked.name} is directly allocated in blocks: index a block first")
        if self._layout is None:
            current().flush()
        return self._layout

    @property
    def shape(self) -> tuple[int, ...]:
        if self._blocked is not None:
            return self._blocked.shape
        if self._layout is None:
            return self._spec.shape
        if self._layout.bitcast:  # counted in elements of the dtype it is read as
            *outer, last = self._layout.shape
            return (*outer, last * self._layout.tensor.itemsize // NkiDtype(self._layout.dtype).itemsize)
        return self._layout.shape

    @property
    def dtype(self) -> NkiDtype:
        if self._blocked is not None:
            return NkiDtype(self._blocked.spec.dtype)
        if self._layout is None:
            return NkiDtype(self._spec.dtype)
        return NkiDtype(self._layout.element_dtype)

    @property
    def data(self) -> NkiTensor:
        """The tensor itself: a grid's ``.data`` is its operand, and the ``NkiTileGrid`` page's own
        example passes ``tile.data`` of a plain ``nl.ndarray`` tile to ``dma_copy`` (the
        NkiTensor page's attribute list is not complete: it names neither shape nor dtype)."""
        return self

    @property
    def buffer(self) -> Buffer:
        """``nl.sbuf`` / ``nl.psum`` / ``nl.hbm`` (equal to its name too: ``== "sbuf"``)."""
        if self._blocked is not None:
            kind = self._blocked.spec.buffer
        elif self._layout is None:
            kind = self._spec.buffer
        else:
            memory = self._layout.tensor.memory.name.lower()
            kind = "hbm" if memory == "dram" else memory
        return BUFFERS["hbm" if kind in ("shared_hbm", "private_hbm") else kind]

    @property
    def name(self) -> str:
        return self.layout.tensor.name

    @property
    def base_tensor(self) -> NkiTensor:
        """The whole tensor a view is of (the tensor itself when it is no view).  Not on the NkiTensor reference
        page of SDK 2.32 / 2.33, but nki-library's Trn3 kernels read it of kernel-argument tensors as of its own
        ``TensorView`` (``weight.base_tensor``), so the NKI they are tested with has it."""
        if self._blocked is not None or self._layout is None:
            return self
        return NkiTensor(Layout.whole(self._layout.tensor))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return prod(self.shape)

    # -- the legacy nki.tensor methods (its reference page: astype, assert_shape, expand_dims, itemsize)
    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    # -- access-pattern introspection (the NKI 0.7 language guide: "All attributes are
    # available at specialization time"; a fresh (128, 64) SBUF tile has strides (64, 1), offset 0)
    @property
    def strides(self) -> tuple[int, ...]:
        """Elements between neighbours along each axis; on chip the partition axis counts the tensor's elements
        a partition (its row), as ``.ap`` patterns do."""
        lay = self.layout
        row = prod(lay.tensor.shape[1:]) if lay.on_chip else 0
        return tuple(lay.partitions[2] * row if kind == P else stride for kind, stride, _n in lay.axes)

    @property
    def offset(self) -> Any:
        """The view's first element within its tensor (in a partition's elements, on chip); a kept loop's
        variable in it makes the loop unroll where the kernel compares it."""
        index = self.layout.offset
        return index.const if not index.terms else SymIndex(index)

    def get_pattern(self) -> list[list[int]]:
        """``[[step, count], ...]``: the view's access pattern, as ``.ap(pattern=)`` takes it."""
        return [[step, n] for step, n in zip(self.strides, self.shape)]

    def is_indirect(self) -> bool:
        """True for a view driven by a tile of indices (``.ap(vector_offset=)``)."""
        return self.layout.indirect is not None

    def is_contiguous(self) -> bool:
        """True when the view's elements follow one another in row-major order; on chip over the free dimensions
        of a partition only (the NkiTensor page: "the partition dim (dim 0) is skipped")."""
        expected = 1
        free = [(step, n) for (kind, _s, _n), step, n in zip(self.layout.axes, self.strides, self.shape)
                if not (self.layout.on_chip and kind == P)]
        for step, n in reversed(free):
            if n != 1 and step != expected:
                return False
            expected *= n
        return True

    def astype(self, dtype: Any) -> NkiTensor:
        """A copy cast to ``dtype`` (``nl.copy(x, dtype=)``)."""
        return _operator("copy")(self, dtype=dtype)

    def assert_shape(self, shape: Any) -> NkiTensor:
        if tuple(self.shape) != tuple(int(n) for n in shape):
            raise fail(f"assert_shape: the tile's shape is {tuple(self.shape)}, not {tuple(shape)}")
        return self

    def expand_dims(self, axis: Any) -> NkiTensor:
        return _operator("expand_dims")(self, axis)

    def __getattr__(self, attr: str) -> Any:
        """The NkiTensor methods neuronsim does not model: refused when used."""
        if attr in _VIEW_METHODS:
            return Refused(f"NkiTensor.{attr}", "access-pattern introspection, einops patterns and indirect views")
        if attr.startswith("_"):  # Python's own probes (copy, pickle) and private names
            raise AttributeError(attr)
        raise NoSuchTensorAttribute(
            f"an NKI tensor has no attribute {attr!r} (the NkiTensor reference lists buffer, dtype, name, ndim, "
            f"offset, shape, size, strides and the view methods, the legacy nki.tensor page astype, assert_shape, "
            f"expand_dims and itemsize; neuronsim adds base_tensor and data)")

    def __len__(self) -> int:
        return self.shape[0]

    def __iter__(self) -> Iterator[NkiTensor]:  # (Python's fallback reads t[k] until an IndexError: an index
        return (self[k] for k in range(len(self)))  # past the end is no error before an access, outside.py)

    def __repr__(self) -> str:
        return f"NkiTensor(shape={self.shape}, dtype={self.dtype}, buffer={self.buffer})"

    # -- views -------------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> NkiTensor:
        if masked_access.is_condition(key) and current().generation == "legacy":  # t[...][cond]: neuronx-cc's
            return masked_access.masked(self, key, current())  # printed mask (NKI 0.7 has none: refused as an index)
        if self._blocked is not None:
            parts = key if isinstance(key, tuple) else (key,)
            if len(parts) < len(self._blocked.spec.blocks) and not any(isinstance(k, slice) or k is Ellipsis
                                                                       for k in parts):
                return views.BlockPrefix(self, parts)  # t[0][j][...]: the blocks picked one at a time
            block, rest = self._block_of(key)
            if (why := self._blocked.outside(block)) is not None:  # refused when accessed: a mask may keep none
                return _operator("outside")(why)
            layout = self._blocked.block(current(), block)
            return NkiTensor(layout.index(rest) if rest else layout)
        # NKI 0.7 (its language guide): an integer on an on-chip tile's partition axis keeps the
        # axis at size 1, and a view keeps at least [P, F] (t[0, :, :] is (1, 64, 32), t[:, 0, 10] (128, 1))
        keep, layout = current().generation == "current", self.layout
        if layout.indirect is not None:  # a vector_select's rows: their other dimensions indexed
            return NkiTensor(views.index_rows(layout, self._device_indices(key), keep))
        if layout.bitcast and other_size(layout, layout.dtype):  # t.view(nl.uint8)[:, :4]
            return NkiTensor(index_read_as(layout, key, keep))
        key = self._device_indices(key)
        try:
            return NkiTensor(layout.index(key, keep_partition=keep))
        except IndexOutside as err:  # refused when accessed, as a block past the last is (machine/nki/outside.py)
            return _operator("outside")(err.message, layout, key, keep)

    def _device_indices(self, key: Any) -> Any:
        """``key`` with a one-element tile beside slices (indexing an HBM tensor, or a free dimension of an
        on-chip one) read as the integer it holds: one coordinate (the tiled-grid guide's ``(1, 1)`` runtime
        value), its dimension dropped as an integer's is (vLLM's paged attention loads ``key_cache[block_tables[k,
        j], :, head, :]`` into a 2-D tile).  A tile of several indices, or index vectors beside it, stays an
        indirect DMA."""
        parts = key if isinstance(key, tuple) else (key,)
        # (an on-chip tile's partition picked by a tile stays a partition gather)
        picks = [d for d, k in enumerate(parts) if isinstance(k, NkiTensor) and prod(k.shape) == 1
                 and (d > 0 or not self.layout.on_chip)]
        if not picks or any(isinstance(k, ArangeExpr) for k in parts):
            return key
        out = tuple(_operator("device_index")(k) if d in picks else k for d, k in enumerate(parts))
        return out if isinstance(key, tuple) else out[0]

    def _block_of(self, key: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """``key`` of a blocked tensor as (block index, index within the block)."""
        key = key if isinstance(key, tuple) else (key,)
        nblocks = len(self._blocked.spec.blocks)
        if len(key) < nblocks:
            raise fail(f"{self._blocked.name}: index all {nblocks} block dimensions")
        return key[:nblocks], key[nblocks:]

    def __setitem__(self, key: Any, value: Any) -> None:
        blocked = self._blocked
        if blocked is None or blocked.lazy_fill is None:
            _operator("assign")(self[key], value)
            return
        tracer = current()
        block, rest = self._block_of(key)
        if (why := blocked.outside(block)) is not None:  # refused when accessed: a mask may keep none
            return _operator("assign")(_operator("outside")(why), value)
        layout, first = blocked.indexed(tracer, block)
        target = NkiTensor(layout.index(rest) if rest else layout)
        if first and not _overwrites(target, value):  # first use, partly written: filled first
            # the fill goes before the call whose result is being assigned (a call made before
            # the block existed cannot read it), so that result still writes the block itself
            pending, tracer.pending = tracer.pending, None
            blocked.fill(tracer, block, layout)
            tracer.pending = pending
        _operator("assign")(target, value)

    def ap(self, pattern: Any = None, offset: Any = None, scalar_offset: Any = None, indirect_dim: int = 0,
           vector_offset: Any = None, dtype: Any = None, **_kw: Any) -> NkiTensor:
        """``t.ap(pattern=[[step, count], ...], offset=...)``: a physical access pattern; ``offset`` counts from
        the view's own first element (the page: "added to the view's base storage offset", None keeping it; a
        whole tensor's is 0); ``scalar_offset`` (a device value, its value on the traced inputs) indexes
        dimension ``indirect_dim`` of the tensor; ``vector_offset`` (a tile, one row per partition) makes it an
        indirect DMA's gather or scatter (:mod:`~neuronsim.machine.nki.indirect`)."""
        lay = self.layout
        base = lay.offset.const if not lay.offset.terms else SymIndex(lay.offset)
        if lay.on_chip:  # the first partition's row, then the free offset
            base = base + lay.partitions[0] * prod(lay.tensor.shape[1:])
        if dtype is not None and vector_offset is None and scalar_offset is None and other_size(lay, dtype):
            if not isinstance(base, int) or (base * itemsize(str(lay.tensor.dtype))) % itemsize(str(to_dtype(dtype))):
                raise fail(f".ap(dtype={to_dtype(dtype)}) of a view of {lay.tensor.name} that starts inside an "
                           "element of that size: take .ap of the whole tensor with the offset")
            base = base * itemsize(str(lay.tensor.dtype)) // itemsize(str(to_dtype(dtype)))
            return NkiTensor(bitcast_ap(lay, pattern, base + (offset or 0), dtype))  # the same bytes, read as dtype
        offset = base + (0 if offset is None else offset)
        if vector_offset is not None:
            layout = vector_offset_view(self.layout, pattern, offset, vector_offset.layout, indirect_dim)
        else:
            if scalar_offset is not None:
                stride = (prod(self.layout.tensor.shape[int(indirect_dim) + 1:]) if self.layout.on_chip
                          else dimension(self.layout, int(indirect_dim), "scalar_offset=")[0])  # a reshape's rows
                offset = offset + _operator("scalar_offset")(scalar_offset) * stride
            layout = self.layout.ap(pattern, offset)
        # the pattern counts elements of the tensor's own type; ``dtype`` names how they are read
        return NkiTensor(reinterpret(layout, self.dtype if dtype is None else dtype, ".ap(dtype=)"))

    def reshape(self, *shape: Any, **named: Any) -> NkiTensor:
        shape = (named.pop("shape"),) if "shape" in named and not shape else shape  # reshape(shape=...)
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        if self.layout.indirect is not None:
            return NkiTensor(views.reshape_rows(self.layout, tuple(shape)))
        return NkiTensor(self.layout.reshape(tuple(shape)))

    def broadcast_to(self, shape: Any) -> NkiTensor:
        shape = tuple(int(n) for n in shape)
        layout = self.layout
        while (layout.on_chip and len(shape) > len(layout.shape) and all(n == 1 for n in layout.shape)
               and current().generation == "legacy"):  # numpy's rank promotion (the legacy page), of one element
            layout = views.expand_dim(layout, len(layout.shape))
        if layout.on_chip and layout.partitions[1] == 1 and shape and shape[0] > 1 and len(shape) == len(layout.shape):
            return _operator("broadcast_partitions")(self, shape)
        return NkiTensor(layout.broadcast_to(shape))

    # -- the current API's shape views (machine/nki/tensor_views.py) -----------------------------
    def permute(self, *dims: Any, **named: Any) -> NkiTensor:  # (dims=[...]: nki-library's newer calls)
        if named.keys() - {"dims"} or bool(dims) == ("dims" in named):
            raise fail(".permute(): the new order of the dimensions once, as permute(0, 2, 1) or dims=[0, 2, 1]")
        return NkiTensor(views.permute(self.layout, _one_tuple(dims) if dims else tuple(named["dims"])))

    def broadcast(self, dim: int, size: int) -> NkiTensor:
        return NkiTensor(views.broadcast(self.layout, dim, size))

    def expand_dim(self, dim: int) -> NkiTensor:
        return NkiTensor(views.expand_dim(self.layout, dim))

    def squeeze_dim(self, dim: int) -> NkiTensor:
        return NkiTensor(views.squeeze_dim(self.layout, dim))

    def reshape_dim(self, dim: int, shape: Any) -> NkiTensor:
        return NkiTensor(views.reshape_dim(self.layout, dim, tuple(shape)))

    def flatten_dims(self, start_dim: int, end_dim: int) -> NkiTensor:
        return NkiTensor(views.flatten_dims(self.layout, start_dim, end_dim))

    def rearrange(self, src: Any, dst: Any, sizes: Any = None, **named: int) -> NkiTensor:
        """``t.rearrange(('b', ('h', 'w')), ('b', 'w', 'h'), {'h': 4})``: einops' named
        dimensions (:func:`~neuronsim.machine.nki.tensor_views.rearrange`)."""
        if sizes is not None and not isinstance(sizes, dict):
            raise fail(f"NkiTensor.rearrange: the sizes are a dict of names to lengths, not {sizes!r}")
        return NkiTensor(views.rearrange(self.layout, src, dst, {**(sizes or {}), **named}))

    def slice(self, dim: int, start: int, end: int, step: int = 1) -> NkiTensor:
        """``t[:, start:end:step]`` for ``dim=1``."""
        return self[(slice(None),) * self._axis(dim, "slice") + (slice(int(start), int(end), int(step)),)]

    def select(self, dim: int, index: Any) -> NkiTensor:
        """``t[:, index]`` for ``dim=1``: the dimension removed (a one-element tile: the
        coordinate it holds at run time; a tile of indices: the indirect view ``t[:, tile]``)."""
        return self[(slice(None),) * self._axis(dim, "select") + (index,)]

    def _axis(self, dim: Any, what: str) -> int:
        """``dim`` as a position among the view's dimensions, a negative one counted from the
        end as the other view methods count it (``squeeze_dim(-1)``); ``(slice(None),) * -1``
        is empty, so ``select(-1, 2)`` took dimension 0 without a word."""
        dim, rank = int(dim), len(self.shape)
        if not -rank <= dim < rank:
            raise fail(f"NkiTensor.{what}({dim}, ...): the view has {rank} dimensions")
        return dim % rank

    def vector_select(self, dim: int, vector_offset: Any) -> NkiTensor:
        """``hbm_t.vector_select(0, offsets)``: partition ``p`` reads row ``offsets[p]`` of
        dimension 0 (the indirect view ``hbm_t[offsets]``, for a DMA; the reference's
        constraints: dimension 0 of an HBM tensor)."""
        if int(dim) != 0 or self.layout.on_chip:
            raise fail(f"NkiTensor.vector_select(dim={dim}) of {self.layout.tensor.name}: dimension 0 of an HBM "
                       "tensor only (the NkiTensor reference)")
        if not isinstance(vector_offset, NkiTensor):
            raise fail("NkiTensor.vector_select: the offsets are an SBUF tile of shape (partitions, 1)")
        return NkiTensor(self.layout.index((vector_offset,)))

    def view(self, dtype: Any) -> NkiTensor:  # (of a tensor of blocks: each block read so, once indexed)
        if self._blocked is not None:
            return views.BlocksReadAs(self, dtype)
        return NkiTensor(reinterpret(self.layout, dtype, ".view(dtype)"))

    reinterpret_cast = view  # (the NKI 0.7 reference lists it beside view, "C++ reinterpret_cast")

    # -- arithmetic (nl.* calls) ---------------------------------------------------------------
    def _binary(self, name: str, other: Any, reverse: bool = False) -> Any:
        fn = _operator(name)
        return fn(other, self) if reverse else fn(self, other)

    def __add__(self, other):
        return self._binary("add", other)

    def __radd__(self, other):
        return self._binary("add", other, True)

    def __sub__(self, other):
        return self._binary("subtract", other)

    def __rsub__(self, other):
        return self._binary("subtract", other, True)

    def __mul__(self, other):
        return self._binary("multiply", other)

    def __rmul__(self, other):
        return self._binary("multiply", other, True)

    def __truediv__(self, other):
        return self._binary("divide", other)

    def __rtruediv__(self, other):
        return self._binary("divide", other, True)

    def __neg__(self):
        return self._binary("multiply", -1.0)

    def __invert__(self):
        """``~t``: NKI's boolean negation (the error page on a tile's truth value: "use ~
        instead of not"), ``nl.logical_not``; an integer tile's bits flip, as Python's ``~``."""
        return _operator("invert")(self)

    def __and__(self, other):
        """``a & b``: of masks (comparisons' tiles) ``nl.logical_and``, of integer tiles
        ``nl.bitwise_and`` (the ``nl.invert`` page: ``~`` is the Python operator; ``&``, ``|``, ``^``
        likewise name numpy's bitwise ufuncs); ``|`` and ``^`` the same way."""
        return self._binary("bitwise_and", other)

    def __rand__(self, other):
        return self._binary("bitwise_and", other, True)

    def __or__(self, other):
        return self._binary("bitwise_or", other)

    def __ror__(self, other):
        return self._binary("bitwise_or", other, True)

    def __xor__(self, other):
        return self._binary("bitwise_xor", other)

    def __rxor__(self, other):
        return self._binary("bitwise_xor", other, True)

    def __lt__(self, other):
        return self._binary("less", other)

    def __le__(self, other):
        return self._binary("less_equal", other)

    def __gt__(self, other):
        return self._binary("greater", other)

    def __ge__(self, other):
        return self._binary("greater_equal", other)

    # ``a == b`` of a tile and a tile or number is nl.equal, as ``<`` is nl.less (a benchmark's
    # cross-entropy kernel builds its target mask ``iota == targets``); anything else compares
    # as objects do (identity: dicts and ``is`` never call these, their hash is the object's)
    def __eq__(self, other):
        if isinstance(other, NkiTensor) or _is_number(other):
            return self._binary("equal", other)
        return NotImplemented

    def __ne__(self, other):
        if isinstance(other, NkiTensor) or _is_number(other):
            return self._binary("not_equal", other)
        return NotImplemented

    def __bool__(self):
        # A tensor is a reference the kernel was handed or declared: NKI's tracer holds no value
        # for it, and nki-library tests one for presence (``if params.expert_index:``,
        # mlp_tkg_constants.py, an HBM tensor in moe_tkg, an SBUF tile in moe_block_tkg) in
        # kernels that run, so it is true as any object is.  The result of a call used at once
        # as a condition (``if nl.greater(t, 0):``, ``if t > 0:``) is a tile's contents, which
        # exist only on the device: NKI reads them into Python only through nisa.scalar_load /
        # registers (nl.if_else, nl.while_loop), so that stays refused at its line.
        # The legacy API's errors page refuses the truth of any tensor, a parameter's too
        # (``err_ambiguous_tensor_truth_value``: ``if b:`` of an ``nt.Optional[nt.tensor]``
        # parameter; the fix is ``if b is not None:``).
        tracer = current()
        if tracer.generation == "legacy" and (self.buffer.kind == "hbm" or tracer.pending is None
                                              or tracer.pending.proxy is not self):
            raise fail("the truth value of a tensor is ambiguous (err_ambiguous_tensor_truth_value): test it "
                       f"with `is not None`, or {_BRANCH_ON_CONTENTS['legacy']}")
        if self.buffer.kind == "hbm" or tracer.pending is None or tracer.pending.proxy is not self:
            return True
        raise tracer.refuse("a tile's value used in Python control flow",
                            f"data-dependent control flow: {_BRANCH_ON_CONTENTS[tracer.generation]}")

    __hash__ = object.__hash__

    # numpy: with a numpy scalar on the left of an operator (``np.float32(0.5) * t``) numpy asks
    # the tile, which defines __array_ufunc__, and the tile computes it as ``0.5 * t``; any other
    # numpy function of a tile is refused at the kernel line (a tile holds no values while the
    # kernel is traced), where numpy would take it apart element by element
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        name = _NUMPY_OPERATORS.get(getattr(ufunc, "__name__", ""))
        if method == "__call__" and name is not None and not kwargs and len(inputs) == 2:
            first, second = (value.item() if hasattr(value, "item") and not isinstance(value, NkiTensor) and
                             getattr(value, "ndim", 1) == 0 else value for value in inputs)
            return _operator(name)(first, second)
        call = "" if method == "__call__" else f".{method}"
        raise _no_values(f"numpy's {getattr(ufunc, '__name__', ufunc)}{call}", self)

    def __array__(self, *_args: Any, **_kwargs: Any) -> Any:
        raise _no_values("a numpy array", self)

    # a Python copy of an NKI tensor (copy.copy, or copy.deepcopy of a config holding one) names
    # the same memory, as a copied reference does: the tensor itself (its values are copied by
    # nl.copy / nisa.tensor_copy); a copy made field by field would have no layout
    def __copy__(self) -> NkiTensor:
        return self

    def __deepcopy__(self, _memo: Any) -> NkiTensor:
        return self

    def __iadd__(self, other):
        _operator("accumulate")(self, other, "add")
        return self

    def __isub__(self, other):
        _operator("accumulate")(self, other, "subtract")
        return self

    def __imul__(self, other):
        _operator("accumulate")(self, other, "multiply")
        return self

    @property
    def T(self) -> Any:
        return _operator("transpose")(self)


#: numpy's operator ufuncs and the NKI operators a tile computes them with
_NUMPY_OPERATORS = {"add": "add", "subtract": "subtract", "multiply": "multiply", "divide": "divide",
                    "true_divide": "divide", "less": "less", "less_equal": "less_equal", "greater": "greater",
                    "greater_equal": "greater_equal", "equal": "equal", "not_equal": "not_equal",
                    "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor"}


def _no_values(what: str, tensor: NkiTensor) -> Exception:
    return fail(f"{what} of {tensor.name}: an NKI tensor holds no values while the kernel is traced (they exist "
                "only on the device); compute with nl.* / nisa.*")


def _overwrites(target: NkiTensor, value: Any) -> bool:
    """Does assigning ``value`` write every element of ``target``'s block (a lazily initialized block first used
    so needs no fill)?  A number or a tile of as many elements, not masked."""
    block, pending = target.layout, current().pending
    if prod(block.shape) != prod(block.tensor.shape):
        return False
    return pending is None or pending.proxy is not value or pending.mask is None


frames.TILE_TYPES.append(NkiTensor)  # (an unrolled legacy loop's iterations start from its tiles too)
for _method in ("__getitem__", "__setitem__", "ap", "reshape", "broadcast_to", "permute", "broadcast", "expand_dim",
                "squeeze_dim", "reshape_dim", "flatten_dims", "rearrange", "slice", "select", "vector_select", "view",
                "reinterpret_cast", "expand_dims", "astype", "assert_shape"):  # an odd argument: the kernel's line
    setattr(NkiTensor, _method, keywords.kernel_arguments(getattr(NkiTensor, _method),
                                                          "indexing a tile" if _method.startswith("__") else None))
