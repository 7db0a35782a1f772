"""Values computed on the device: ``nisa.scalar_load`` / ``NkiScalar`` (NKI 0.7) and the
virtual registers of NKI 0.3-0.6 (``nisa.register_alloc`` / ``register_move`` /
``register_load`` / ``register_store``), and ``.ap(scalar_offset=...)`` addressing.

NKI's compiler emits these as instructions whose value is known only when the kernel runs.
neuronsim traces the kernel with its inputs, so it can know them: a value read from a tile is
the tile's contents after the instructions traced so far, run in program order on the given
inputs (the *reader*, which needs a placement pass and so is registered by
:mod:`neuronsim.verify.nki.probe`).  The trace is then exact for those inputs only; every place
the program's shape followed such a value (a trip count, a branch, an address) is recorded as
a *decision* in the program's ``extras["x-nki-decisions"]`` with its kernel line.

A read inside a loop kept as a program loop (one body for every iteration) cannot have one
value: it restarts the trace with that loop unrolled (:class:`~neuronsim.machine.nki.errors.NotAffine`).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from neuronsim.machine.nki.device_values import (DECISIONS_KEY, FLOAT_BITS, no_kept_loop, record_decision,
                                                 set_value_reader, tile_values)
from neuronsim.machine.nki import indexing, operand_rules, ops
from neuronsim.machine.nki.alloc import declare_tile, spec_of
from neuronsim.machine.nki.errors import fail
from neuronsim.machine.nki.tiles import NkiTensor, register_operators
from neuronsim.machine.nki.tracer import api, current

__all__ = ["NkiScalar", "VirtualRegister", "ds", "scalar_load", "scalar_store", "scalar_alu", "register_alloc",
           "register_move", "register_load", "register_store", "set_value_reader", "value_of", "tile_values",
           "record_decision", "isa_names", "DECISIONS_KEY"]


def _divided(a: int, b: int) -> int:
    """The device's integer division: rounded toward zero (the ``scalar_alu`` page: -17 / 4 is -4)."""
    if b == 0:
        raise fail("a device scalar divided by zero (nisa.scalar_alu divide / fmod, or // and %)")
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


def _remainder(a: int, b: int) -> int:
    """The remainder of :func:`_divided`, with the sign of the dividend (nl.fmod: -17 fmod 4 is -1)."""
    return a - _divided(a, b) * b


#: ``nisa.scalar_alu``'s operations (the page's list), by ISA ALU name; comparisons give 1 / 0.
_ARITHMETIC = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul, "divide": _divided,
               "fmod": _remainder, "max": max, "min": min}
_COMPARISONS = {"less": operator.lt, "less_equal": operator.le, "greater": operator.gt,
                "greater_equal": operator.ge, "equal": operator.eq, "not_equal": operator.ne}
#: Every operation of a scalar by its ISA ALU name: ``scalar_alu``'s, and the Python operators'
#: shifts and bitwise and / or.
_OPERATIONS = {**_ARITHMETIC, **_COMPARISONS, "left_shift": operator.lshift, "right_shift": operator.rshift,
               "bitwise_and": operator.and_, "bitwise_or": operator.or_}
#: What a 64-bit scalar supports (the NkiScalar page: add, subtract, multiply; its comparisons are
#: rejected at compile time).
_INT64_OPS = frozenset({"add", "subtract", "multiply"})


class _Scalar:
    """An integer the device computes; ``value`` is what it is on the traced inputs."""

    __slots__ = ("value", "dtype")

    def __init__(self, value: int, dtype: str = "int32") -> None:
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or dtype not in _BITS:
            raise fail(f"a device scalar holds an int of dtype {' or '.join(_BITS)}, not {value!r} of {dtype!r}")
        self.value = _wrap(int(value), dtype)
        self.dtype = dtype

    def _make(self, value: int, dtype: str | None = None) -> NkiScalar:
        return NkiScalar(value, dtype or self.dtype)

    def _op(self, other: Any, name: str, reverse: bool = False) -> NkiScalar:
        """The operation ``name`` (:data:`_OPERATIONS`) of this scalar and ``other`` (a scalar of
        its dtype or an int it can hold), ``other`` first when ``reverse``."""
        if isinstance(other, _Scalar):
            if other.dtype != self.dtype:
                raise fail(f"scalar arithmetic of an {self.dtype} and an {other.dtype} scalar: NKI's scalars must "
                           "have the same width and signedness")
            other = other.value
        elif not isinstance(other, (int, np.integer)):
            return NotImplemented
        elif not _fits(int(other), self.dtype):  # the page: an int operand takes the scalar's dtype
            raise fail(f"the int {int(other)} does not fit an {self.dtype} scalar it is combined with")
        if self.dtype == "int64" and name not in _INT64_OPS:
            raise fail(f"{name} of an int64 scalar: a 64-bit NkiScalar supports add, subtract and multiply only "
                       "(the NkiScalar page)")
        a, b = (int(other), self.value) if reverse else (self.value, int(other))
        if name in ("left_shift", "right_shift") and b < 0:
            raise fail(f"a device scalar shifted by {b}: a shift count is not negative")
        if name in _COMPARISONS:  # an int32 scalar holding 1 or 0 (the scalar_alu page)
            return self._make(int(_COMPARISONS[name](a, b)), "int32")
        return self._make(_OPERATIONS[name](a, b))

    def __add__(self, o): return self._op(o, "add")
    def __radd__(self, o): return self._op(o, "add", True)
    def __sub__(self, o): return self._op(o, "subtract")
    def __rsub__(self, o): return self._op(o, "subtract", True)
    def __mul__(self, o): return self._op(o, "multiply")
    def __rmul__(self, o): return self._op(o, "multiply", True)
    # the operators are scalar_alu's operations (its page), so // and % are its divide and fmod:
    # rounded toward zero, the remainder with the dividend's sign (not Python's floor)
    def __floordiv__(self, o): return self._op(o, "divide")
    def __rfloordiv__(self, o): return self._op(o, "divide", True)
    def __mod__(self, o): return self._op(o, "fmod")
    def __rmod__(self, o): return self._op(o, "fmod", True)
    def __lshift__(self, o): return self._op(o, "left_shift")
    def __rshift__(self, o): return self._op(o, "right_shift")
    def __and__(self, o): return self._op(o, "bitwise_and")
    def __or__(self, o): return self._op(o, "bitwise_or")
    def __neg__(self): return self._make(-self.value)
    def __lt__(self, o): return self._op(o, "less")
    def __le__(self, o): return self._op(o, "less_equal")
    def __gt__(self, o): return self._op(o, "greater")
    def __ge__(self, o): return self._op(o, "greater_equal")
    def __eq__(self, o): return self._op(o, "equal")  # type: ignore[override]
    def __ne__(self, o): return self._op(o, "not_equal")  # type: ignore[override]
    __hash__ = object.__hash__

    def device_index(self) -> int:
        """Indexing a tensor (an index, a slice bound: ``t[:, n:n + 4]``, as ``nl.ds(n, 4)``):
        the trace takes its value on these inputs, and says so (a decision)."""
        record_decision(f"{type(self).__name__} as an index", self.value)
        return self.value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value}, {self.dtype})"


class NkiScalar(_Scalar):
    """NKI 0.7's scalar: immutable, arithmetic makes a new one (32-bit values wrap)."""

    __slots__ = ()

    def __bool__(self) -> bool:
        # NKI's tracer raises TypeError here: the value exists only on the device
        raise fail("an NkiScalar's value is known only on the device: Python if / while cannot test it "
                   "(use nl.if_else or nl.while_loop)")

    def __index__(self) -> int:
        # int(s), range(s), a Python list's index: likewise (the scalar page: its arithmetic "is traced,
        # not evaluated"; a fori_loop's index is "passed by value" to read as a scalar_offset)
        raise fail("an NkiScalar's value is known only on the device: it is no Python number (int(), range(), "
                   "a list's index); index a tensor with it, or loop with nl.fori_loop")

    __int__ = __index__


class VirtualRegister(_Scalar):
    """A register of NKI 0.3-0.6 (``nisa.register_alloc``): mutable through ``register_move`` /
    ``register_load``.  ``while reg:`` (the parser frontend's loop) tests its value on the traced
    inputs, recorded as a decision."""

    __slots__ = ()

    def __bool__(self) -> bool:
        record_decision("while / if on a register", self.value)
        return self.value != 0

    def __index__(self) -> int:
        # range(reg) / int(reg): NKI's own tracer raises TypeError; the device loop is dynamic_range
        raise fail("a register's value is known only on the device: loop over it with nl.dynamic_range or "
                   "nl.fori_loop, not range()")

    __int__ = __index__


#: The widths of the scalars' dtypes (registers are 32 bits, the register_load page).
_BITS = {"int32": 32, "uint32": 32, "int64": 64}


def _wrap(value: int, dtype: str) -> int:
    bits = _BITS[dtype]
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) and dtype != "uint32" else value


def _fits(value: int, dtype: str) -> bool:
    """Whether ``value`` is a number of ``dtype`` (an unsigned one's negatives, or an int32's
    2**31, do not fit; a wider int is not narrowed silently)."""
    bits = _BITS[dtype]
    low, high = (0, 1 << bits) if dtype == "uint32" else (-(1 << (bits - 1)), 1 << (bits - 1))
    return low <= value < high


def _as_int(value: Any) -> int:
    return value.value if isinstance(value, _Scalar) else int(value)


# -- reading device values ----------------------------------------------------------------------
def value_of(tile: NkiTensor, call: str) -> int:
    """The integer tile ``tile`` (one element) holds at this point of the trace, on the traced
    inputs; an instruction on SP reads it (the register load), so what writes it is ordered
    before and what overwrites it after."""
    tracer = current()
    layout = tile.layout
    if int(np.prod(layout.shape)) != 1:
        raise fail(f"{call}: the source must hold one element, not shape {tuple(layout.shape)}")
    no_kept_loop(tracer, call)
    if not layout.on_chip:  # scalar_load's page: "A 1x1 tensor in SBUF or HBM" (HBM was refused: a probe)
        layout = _staged(layout, to_sbuf=True)
    tracer.emit(lambda: tracer.kb.instruction("register_load", "sp", reads=[layout.view()]))
    value = np.asarray(tile_values(layout, call)).reshape(-1)[:1]
    if value.dtype.kind not in "iub":
        # a register holds up to 32 bits (the register_load page): a float element is read as
        # its bit pattern, not converted (3.0 is 1077936128 as a DMA offset, as on the device)
        bits = value.view({1: np.uint8, 2: np.uint16, 4: np.int32, 8: np.int64}[value.dtype.itemsize])
        record_decision(f"{FLOAT_BITS} ({float(value[0])!r})", int(bits[0]), 2)
        value = bits
    return int(value[0])


def scalar_offset(value: Any) -> int:
    """The number a ``scalar_offset=`` stands for: a scalar, a register, or a one-element tile
    read at this point (an int passes through)."""
    if isinstance(value, NkiTensor):
        found = value_of(value, "scalar_offset")
        record_decision("scalar_offset read from a tile", found, 3)
        return found
    if isinstance(value, _Scalar):
        record_decision("scalar_offset", value.value, 3)
        return value.value
    return value


def device_index(tile: NkiTensor) -> int:
    """A one-element integer tile as an index (``cache[tab[j, 0], :, h, :]``, ``t.select(1, i)``):
    one coordinate, as an integer is (its dimension dropped), read here on the traced inputs."""
    found = value_of(tile, "an index read from a tile")
    record_decision("an index read from a one-element tile", found, 3)
    return found


register_operators(scalar_offset=scalar_offset, device_index=device_index)


# -- nki.isa ----------------------------------------------------------------------------------
@api("nisa.scalar_load")
def scalar_load(src: NkiTensor, name: Any = None, **_kw: Any) -> NkiScalar:
    if not isinstance(src, NkiTensor):
        raise fail(f"nisa.scalar_load: the source is a 1x1 int32 or int64 tile, not {src!r}")
    dtype = src.dtype if src.dtype in ("int32", "int64") else None
    if dtype is None:
        raise fail(f"nisa.scalar_load: the source must be int32 or int64, not {src.dtype}")
    return NkiScalar(value_of(src, "nisa.scalar_load"), dtype)


def ds(start: Any, size: int) -> slice:
    """``nl.ds(start, size)``: the slice ``start:start + size``; ``start`` may be a runtime index
    (the current ``nl.ds`` page): an ``NkiScalar``, or a one-element integer tile, read here as
    ``nisa.scalar_load`` reads it."""
    start = scalar_load(start) if isinstance(start, NkiTensor) else start
    return indexing.ds(start.device_index() if isinstance(start, _Scalar) else start, size)


@api("nisa.scalar_alu")
def scalar_alu(data1: Any, data2: Any, op: Any, name: Any = None, **_kw: Any) -> Any:
    """``nisa.scalar_alu``: a binary integer operation of two scalars (an NkiScalar or an int
    each).  Two ints are computed now and give an int (a bool for a comparison), as the page
    says; otherwise a new NkiScalar (a comparison's is int32, 1 or 0)."""
    from neuronsim.machine.nki.arith import alu_name  # (arith's tile ops load after this module)

    what = alu_name(op)
    if what not in _ARITHMETIC and what not in _COMPARISONS:
        raise fail(f"nisa.scalar_alu: op {what!r} is not one of its operations ({', '.join(_ARITHMETIC)}, "
                   f"{', '.join(_COMPARISONS)})")
    for operand in (data1, data2):
        if not isinstance(operand, (_Scalar, int, np.integer)) or isinstance(operand, bool):
            raise fail(f"nisa.scalar_alu: an operand is an NkiScalar or an int, not {operand!r}")
    if isinstance(data1, _Scalar):
        return data1._op(data2, what)
    if isinstance(data2, _Scalar):
        return data2._op(data1, what, True)
    value = _OPERATIONS[what](int(data1), int(data2))
    return bool(value) if what in _COMPARISONS else int(value)


@api("nisa.scalar_store")
def scalar_store(dst: NkiTensor, value: Any = None, name: Any = None, *, src: Any = None, **_kw: Any) -> None:
    value = src if value is None else value  # (its page names it value)
    if not isinstance(value, _Scalar):  # (a Python int ran, storing it: a probe)
        raise fail(f"nisa.scalar_store of {value!r}; its page: \"value must be an NkiScalar. A Python int is not "
                   f"accepted\" (nisa.memset writes a compile-time constant into a tile)")
    operand_rules.dtype_among("nisa.scalar_store", ("int32", "int64"), "dst - A 1x1 tensor in SBUF or HBM with dtype "
                              "nl.int32 or nl.int64", dst=dst)
    _store(dst, value)


@api("nisa.register_alloc")
def register_alloc(x: Any = None, **_kw: Any) -> VirtualRegister:
    if isinstance(x, NkiTensor):  # an SBUF element as the initial value
        return VirtualRegister(value_of(x, "nisa.register_alloc"))
    return VirtualRegister(0 if x is None else _as_int(x))


@api("nisa.register_move")
def register_move(dst: VirtualRegister, src: Any = None, imm: Any = None, **_kw: Any) -> None:
    if not isinstance(dst, VirtualRegister):  # (a tile was an internal error)
        raise fail(f"nisa.register_move: the destination is a register (nisa.register_alloc), not {dst!r}")
    value = src if src is not None else imm
    if isinstance(value, (bool, float, np.floating)) or value is None:  # (1.5 stored 1: a probe)
        raise fail(f"nisa.register_move: the value is {value!r}; its page: \"imm - a compile-time constant integer "
                   "value\" (or a register)")
    dst.value = _as_int(value)


@api("nisa.register_load")
def register_load(dst: VirtualRegister, src: NkiTensor, **_kw: Any) -> None:
    if not isinstance(dst, VirtualRegister):
        raise fail(f"nisa.register_load: the destination is a register (nisa.register_alloc), not {dst!r}")
    dst.value = value_of(src, "nisa.register_load")


@api("nisa.register_store")
def register_store(dst: NkiTensor, src: Any, **_kw: Any) -> None:
    _store(dst, src)


def _store(dst: NkiTensor, src: Any) -> None:
    """A register written to a one-element tile: a memset of its value (exact on these inputs)."""
    tracer = current()
    layout = dst.layout
    if int(np.prod(layout.shape)) != 1:
        raise fail(f"the destination must hold one element, not shape {tuple(layout.shape)}")
    value = _as_int(src)
    if str(layout.element_dtype) in _BITS and not _fits(value, str(layout.element_dtype)):
        raise fail(f"storing {value} to a {layout.element_dtype} tile: the value does not fit it")
    staged = layout if layout.on_chip else _staged(layout, to_sbuf=False)
    tracer.note_write(staged)
    tracer.emit(lambda: tracer.kb.memset(staged.view(), float(value), engine="dve"))
    if staged is not layout:  # into HBM (register_store's and scalar_store's pages: "HBM/SBUF"; it was refused)
        tracer.note_write(layout)
        tracer.emit(lambda: ops.dma(layout, staged))


def _staged(hbm: Any, to_sbuf: bool) -> Any:
    """A one-element SBUF tile a DMA moves an HBM element through (into it first, ``to_sbuf``,
    or out of it after): the register reads and writes on-chip bytes, as the compiler stages them."""
    tracer = current()
    tile = declare_tile(tracer, spec_of((1, 1), hbm.element_dtype, "sbuf"))
    if to_sbuf:
        tracer.note_write(tile)
        tracer.emit(lambda: ops.dma(tile, hbm))
    return tile


def isa_names() -> dict[str, Any]:
    """The ``nki.isa`` names of this module (both generations)."""
    return {"scalar_load": scalar_load, "scalar_store": scalar_store, "scalar_alu": scalar_alu, "NkiScalar": NkiScalar,
            "VirtualRegister": VirtualRegister, "register_alloc": register_alloc, "register_move": register_move,
            "register_load": register_load, "register_store": register_store}
