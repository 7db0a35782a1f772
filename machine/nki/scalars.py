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
from collections.abc import Callable
from typing import Any

import numpy as np

from neuronsim.machine.nki.device_values import (DECISIONS_KEY, FLOAT_BITS, no_kept_loop, record_decision,
                                                 set_value_reader, tile_values)
from neuronsim.machine.nki import indexing
from neuronsim.machine.nki.errors import NkiError, fail, user_line
from neuronsim.machine.nki.tiles import NkiTensor, register_operators
from neuronsim.machine.nki.tracer import api, current

__all__ = ["NkiScalar", "VirtualRegister", "ds", "scalar_load", "scalar_store", "register_alloc", "register_move",
           "register_load", "register_store", "set_value_reader", "value_of", "tile_values", "record_decision",
           "isa_names",
           "DECISIONS_KEY"]


class _Scalar:
    """An integer the device computes; ``value`` is what it is on the traced inputs."""

    __slots__ = ("value", "dtype")

    def __init__(self, value: int, dtype: str = "int32") -> None:
        self.value = _wrap(int(value), dtype)
        self.dtype = dtype

    def _make(self, value: int) -> NkiScalar:
        return NkiScalar(value, self.dtype)

    def _op(self, other: Any, fn: Callable[[int, int], int], reverse: bool = False) -> NkiScalar:
        if isinstance(other, _Scalar):
            other = other.value
        elif not isinstance(other, (int, np.integer)):
            return NotImplemented
        a, b = (int(other), self.value) if reverse else (self.value, int(other))
        return self._make(fn(a, b))

    def __add__(self, o): return self._op(o, operator.add)
    def __radd__(self, o): return self._op(o, operator.add, True)
    def __sub__(self, o): return self._op(o, operator.sub)
    def __rsub__(self, o): return self._op(o, operator.sub, True)
    def __mul__(self, o): return self._op(o, operator.mul)
    def __rmul__(self, o): return self._op(o, operator.mul, True)
    def __floordiv__(self, o): return self._op(o, operator.floordiv)
    def __mod__(self, o): return self._op(o, operator.mod)
    def __lshift__(self, o): return self._op(o, operator.lshift)
    def __rshift__(self, o): return self._op(o, operator.rshift)
    def __and__(self, o): return self._op(o, operator.and_)
    def __or__(self, o): return self._op(o, operator.or_)
    def __neg__(self): return self._make(-self.value)
    def __lt__(self, o): return self._op(o, lambda a, b: int(a < b))
    def __le__(self, o): return self._op(o, lambda a, b: int(a <= b))
    def __gt__(self, o): return self._op(o, lambda a, b: int(a > b))
    def __ge__(self, o): return self._op(o, lambda a, b: int(a >= b))
    def __eq__(self, o): return self._op(o, lambda a, b: int(a == b))  # type: ignore[override]
    def __ne__(self, o): return self._op(o, lambda a, b: int(a != b))  # type: ignore[override]
    __hash__ = object.__hash__

    def __index__(self) -> int:
        """Used as a static number (an index, a slice bound): the trace takes its value on
        these inputs, and says so."""
        record_decision(f"{type(self).__name__} used as a number", self.value)
        return self.value

    __int__ = __index__

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value}, {self.dtype})"


class NkiScalar(_Scalar):
    """NKI 0.7's scalar: immutable, arithmetic makes a new one (32-bit values wrap)."""

    __slots__ = ()

    def __bool__(self) -> bool:
        # NKI's tracer raises TypeError here: the value exists only on the device
        raise fail("an NkiScalar's value is known only on the device: Python if / while cannot test it "
                   "(use nl.if_else or nl.while_loop)")


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


def _wrap(value: int, dtype: str) -> int:
    bits = 64 if dtype == "int64" else 32
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


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
    dtype = src.dtype if src.dtype in ("int32", "int64") else None
    if dtype is None:
        raise fail(f"nisa.scalar_load: the source must be int32 or int64, not {src.dtype}")
    return NkiScalar(value_of(src, "nisa.scalar_load"), dtype)


def ds(start: Any, size: int) -> slice:
    """``nl.ds(start, size)``: the slice ``start:start + size``; ``start`` may be a runtime index
    (the current ``nl.ds`` page): an ``NkiScalar``, or a one-element integer tile, read here as
    ``nisa.scalar_load`` reads it."""
    return indexing.ds(scalar_load(start) if isinstance(start, NkiTensor) else start, size)


@api("nisa.scalar_store")
def scalar_store(dst: NkiTensor, src: Any, name: Any = None, **_kw: Any) -> None:
    _store(dst, src)


@api("nisa.register_alloc")
def register_alloc(x: Any = None, **_kw: Any) -> VirtualRegister:
    if isinstance(x, NkiTensor):  # an SBUF element as the initial value
        return VirtualRegister(value_of(x, "nisa.register_alloc"))
    return VirtualRegister(0 if x is None else _as_int(x))


@api("nisa.register_move")
def register_move(dst: VirtualRegister, src: Any = None, imm: Any = None, **_kw: Any) -> None:
    dst.value = _as_int(src if src is not None else imm)


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
    if layout.on_chip:
        tracer.note_write(layout)
        tracer.emit(lambda: tracer.kb.memset(layout.view(), float(value), engine="dve"))
        return
    raise NkiError(user_line(3), "storing a register to DRAM is not supported (store it to SBUF, then copy)")


def isa_names() -> dict[str, Any]:
    """The ``nki.isa`` names of this module (both generations)."""
    return {"scalar_load": scalar_load, "scalar_store": scalar_store, "NkiScalar": NkiScalar,
            "VirtualRegister": VirtualRegister, "register_alloc": register_alloc, "register_move": register_move,
            "register_load": register_load, "register_store": register_store}
