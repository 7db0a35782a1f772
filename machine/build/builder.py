"""A small NKI-like builder that emits ``neuronsim.program/1`` programs from Python.

Scenario authors write kernels the way NKI kernels read (``docs/kernel-patterns.md``): declare DRAM
arguments and on-chip tiles, slice them, open loops, and call ``nki.isa``-style ops whose operands follow
:mod:`neuronsim.machine.model.optable` exactly.  The builder records instructions in program order and
:meth:`KernelBuilder.program` returns a validated :class:`~neuronsim.machine.ir.program.Program`.

* **Tensors.**  ``dram_input`` / ``dram_output`` are kernel arguments: the runtime places
  them, so they get addresses (a bump allocator, :data:`DRAM_ALIGN`-aligned) unless given an
  ``address`` or an ``alias``.  ``sbuf`` / ``psum`` tiles are *virtual* unless placed
  explicitly (``partition=`` / ``offset=`` / ``bank=``): the allocation pass places them, and
  multi-buffers those through which no value crosses iterations.
* **Rotating placements** (docs/kernel-patterns.md 1.4, NKI ``ncc.sbuf.mod_alloc`` / ``psum.mod_alloc``).
  A placed tile declared with ``slots=n, loop=L`` has ``n`` slots, iteration ``i`` of loop
  ``L`` using slot ``i mod n``: ``stride`` bytes apart, by default the tile's size in SBUF
  (double buffering) and one bank in PSUM (bank rotation).  It is written as the tensor's
  ``x-rotate``, the tile's views are unchanged, and every access to it must sit inside
  ``L``.  :class:`~neuronsim.machine.build.arena.SbufArena` lays tiles out one after the other,
  as such kernels do.
* **Immediates** (``memset`` values, ``scale`` / ``bias`` / operand numbers, ``iota``)
  are Python numbers; numpy scalars are converted, and ``-math.inf`` (or the string
  ``"-inf"``) is written ``"-inf"`` in the program's JSON (the format's non-finite numbers).
* **Views** (:mod:`neuronsim.machine.build.views`).  ``t[p0:p1, f0:f1]`` slices a tensor; on SBUF / PSUM
  the first index is the partition dimension (constant, optionally stepped), the others are
  free dimensions.  Slice bounds may be affine expressions of loop variables
  (``t[:, k * 128:(k + 1) * 128]``), which become the access's ``per_iteration`` shift;
  ``t.tile(k, 128, dim=1)`` is the same thing.  An integer index selects one element and
  drops the dimension.  A view is written as the spec's ``partitions`` / ``offset`` /
  ``pattern`` in elements, adjacent dimensions merged; ``t.strided(...)`` gives those
  directly for what slicing cannot say (a transposing store).
* **Ops** take the destination first, as ``nki.isa`` does, check operand shapes strictly
  (the simulator's semantics are total and would silently resize a wrong operand), and
  return the instruction's name.  Names are unique; without ``name=`` they are the op and a
  per-op counter (``matmul0``, ``matmul1``...).
* **Deps.**  Programs are emitted without deps: dependence construction is the compiler's
  job (``neuronsim compile``).  ``deps=`` adds explicit ones where a scenario wants them.

Examples
--------
>>> kb = KernelBuilder("double")
>>> x = kb.dram_input("x", (256, 64), "float32")
>>> y = kb.dram_output("y", (256, 64), "float32")
>>> t = kb.sbuf("t", (128, 64), "float32")
>>> with kb.loop("i", 2) as i:
...     _ = kb.dma_copy(t, x[i * 128:(i + 1) * 128, :], name="load")
...     _ = kb.tensor_scalar(t, t, op0="multiply", operand0=2.0, name="double")
...     _ = kb.dma_copy(y.tile(i, 128), t, engine="act", queue="dma1", name="store")
>>> program = kb.program()
>>> load = program.instruction_map()["load"]
>>> load.reads[0].offset, load.reads[0].pattern, dict(load.reads[0].per_iteration)
(None, ((1, 8192),), {'i': 8192})
>>> program.tensors["t"].is_virtual, program.tensors["y"].address
(True, 65536)

Double buffering by hand: two slots of ``buf`` at bytes 0 and 256 of every partition, and
PSUM bank rotation over banks 2 and 3:

>>> kb = KernelBuilder("rotating")
>>> x = kb.dram_input("x", (256, 64), "float32")
>>> y = kb.dram_output("y", (64, 256), "float32")
>>> buf = kb.sbuf("buf", (128, 64), "float32", partition=0, offset=0, slots=2, loop="i")
>>> ps = kb.psum("ps", (64, 128), bank=2, partition=0, slots=2, loop="i")
>>> out = kb.sbuf("out", (64, 128), "float32")
>>> with kb.loop("i", 2) as i:
...     _ = kb.dma_copy(buf, x.tile(i, 128))
...     _ = kb.transpose(ps, buf)
...     _ = kb.tensor_copy(out, ps, engine="act")
...     _ = kb.dma_copy(y[:, i * 128:(i + 1) * 128], out, engine="act", queue="dma1")
>>> program = kb.program()
>>> program.tensors["buf"].rotate, program.tensors["ps"].rotate
(Rotation(loop='i', slots=2, stride=256), Rotation(loop='i', slots=2, stride=2048))
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from math import prod
from types import MappingProxyType
from typing import Any

from neuronsim.machine.ir.dtypes import itemsize
from neuronsim.machine.ir.edges import kind_from_name
from neuronsim.machine.ir.extensions import NON_FINITE
from neuronsim.machine.ir.program import (PSUM_BANK_BYTES, Access, Dep, Instruction, Loop, MemoryKind, Node, Program,
                                          Rotation, Tensor, frozen_mapping)
from neuronsim.machine.formats.validate import validate_program
from neuronsim.machine.build.views import Index, Operand, TensorRef, View, as_view, is_int

__all__ = ["KernelBuilder", "TensorRef", "View", "Index", "DRAM_ALIGN"]

#: Alignment of the addresses the builder gives DRAM arguments.
DRAM_ALIGN = 4096


def _as_dep(dep: Any) -> Dep:
    """A :class:`Dep` from a Dep, an instruction name, or ``(name, kind[, loop_carried])``."""
    if isinstance(dep, Dep):
        return dep
    if isinstance(dep, str):
        return Dep(dep)
    on, kind, *rest = dep
    return Dep(on, kind_from_name(kind), bool(rest and rest[0]))


def _loop_name(loop: str | Index, tensor: str) -> str:
    """The loop a rotation follows: its name, or the bare index variable ``kb.loop`` yielded."""
    if isinstance(loop, str) and loop:
        return loop
    if isinstance(loop, Index) and loop.const == 0 and len(loop.terms) == 1 and loop.terms[0][1] == 1:
        return loop.terms[0][0]
    raise ValueError(f"{tensor}: loop= names the loop whose index picks the slot (its name or its index "
                     f"variable), not {loop!r}")


def _rotation(tensor: str, slots: int, loop: str | Index | None, stride: int | None, default_stride: int,
              placed: bool) -> Rotation | None:
    """The ``x-rotate`` of a tile declared with ``slots`` / ``loop`` / ``stride`` (None: one slot)."""
    if not is_int(slots) or slots < 1:
        raise ValueError(f"{tensor}: slots must be a positive integer, not {slots!r}")
    if slots == 1 and loop is None and stride is None:
        return None
    if loop is None:
        raise ValueError(f"{tensor}: {slots} rotating slots need loop= (the loop whose index picks the slot)")
    if not placed:
        raise ValueError(f"{tensor}: rotating slots are a placement (x-rotate): place the tile, or leave it "
                         "virtual and let alloc multi-buffer it")
    name = _loop_name(loop, tensor)
    stride = default_stride if stride is None else stride
    if not is_int(stride) or stride < 0:
        raise ValueError(f"{tensor}: stride is a non-negative number of bytes, not {stride!r}")
    return Rotation(name, slots, stride) if slots > 1 else None


def _number(value: Any, what: str) -> Any:
    """An immediate as the format writes it: a Python int or float (numpy scalars converted),
    ``"inf"`` / ``"-inf"`` / ``"nan"`` read as floats; None stays None.

    >>> _number("-inf", "memset value"), _number(2, "x")
    (-inf, 2)
    """
    if value is None:
        return None
    if isinstance(value, str):
        if value not in NON_FINITE:
            raise ValueError(f"{what}: expected a number (or \"inf\", \"-inf\", \"nan\"), got {value!r}")
        return NON_FINITE[value]
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{what}: expected a number, got {value!r}")
    return int(value) if isinstance(value, numbers.Integral) else float(value)


class KernelBuilder:
    """Records tensors, loops and instructions; :meth:`program` returns the program."""

    def __init__(self, name: str, machine: Any = "trn1") -> None:
        self.name = name
        self.machine = machine
        self._tensors: dict[str, Tensor] = {}
        self._bodies: list[list[Node]] = [[]]
        self._loops: list[str] = []
        self._names: set[str] = set()
        self._counters: dict[str, int] = {}
        self._written: dict[str, int] = {}  # tensor: instructions writing it so far (writes_tensor)
        self._dram_end = 0
        #: what open trials undo (:meth:`trial`), oldest first: ``("name", name)``, ``("written",
        #: tensor)``, ``("tensor", name, its declaration before or None)``; None outside a trial
        self._undo: list[tuple] | None = None
        #: ``extras`` of the next instruction (a frontend such as :mod:`neuronsim.machine.nki` sets it
        #: to record where the instruction came from, ``x-source``).
        self.next_extras: Mapping[str, Any] | None = None

    # -- tensors ---------------------------------------------------------------------------
    def _declare(self, tensor: Tensor) -> TensorRef:
        if tensor.name in self._tensors:
            raise ValueError(f"tensor {tensor.name!r} declared twice")
        if self._undo is not None:
            self._undo.append(("tensor", tensor.name, None))
        self._tensors[tensor.name] = tensor
        return TensorRef(tensor)

    def next_dram_address(self, nbytes: int) -> int:
        """A fresh :data:`DRAM_ALIGN`-aligned DRAM address for ``nbytes``, reserved (the bump
        allocator kernel arguments are placed by; a frontend places its DRAM tensors by it too)."""
        address = -(-self._dram_end // DRAM_ALIGN) * DRAM_ALIGN
        self._dram_end = address + nbytes
        return address

    def _dram(self, name: str, shape, dtype: str, role: str, address: int | None, alias: str | None) -> TensorRef:
        if address is None and alias is None:
            address = self.next_dram_address(prod(shape) * itemsize(dtype))
        elif address is not None:
            self._dram_end = max(self._dram_end, address + prod(shape) * itemsize(dtype))
        tensor = Tensor(name, MemoryKind.DRAM, dtype, tuple(shape), address=address, alias=alias, role=role)
        return self._declare(tensor)

    def dram_input(self, name: str, shape, dtype: str, *, address: int | None = None,
                   alias: str | None = None) -> TensorRef:
        """A kernel input in DRAM (placed at the next free address unless told)."""
        return self._dram(name, shape, dtype, "input", address, alias)

    def dram_output(self, name: str, shape, dtype: str, *, address: int | None = None,
                    alias: str | None = None) -> TensorRef:
        """A kernel output in DRAM (compared by the simulator against the sequential run)."""
        return self._dram(name, shape, dtype, "output", address, alias)

    def dram(self, name: str, shape, dtype: str, *, address: int | None = None, alias: str | None = None) -> TensorRef:
        """An internal DRAM tensor: virtual unless given an ``address`` or an ``alias``."""
        tensor = Tensor(name, MemoryKind.DRAM, dtype, tuple(shape), address=address, alias=alias)
        return self._declare(tensor)

    def sbuf(self, name: str, shape, dtype: str, *, partition: int | None = None, offset: int | None = None,
             slots: int = 1, loop: str | Index | None = None, stride: int | None = None) -> TensorRef:
        """An SBUF tile ``[partitions, free...]``: virtual unless placed (partition and byte offset).

        ``slots=n, loop=L`` places it as ``ncc.sbuf.mod_alloc(base_addr=offset,
        num_free_tiles=(n,))`` does: inside loop ``L`` iteration ``i`` uses slot ``i mod n``,
        ``stride`` bytes apart (default: the tile's bytes per partition, slots back to back);
        written as the tensor's ``x-rotate``.  Only a placed tile rotates: a virtual one is
        multi-buffered by ``alloc`` when no value crosses iterations.
        """
        if (partition is None) != (offset is None):
            raise ValueError(f"{name}: place an sbuf tensor with both partition= and offset=, or neither")
        tensor = Tensor(name=name, memory=MemoryKind.SBUF, dtype=dtype, shape=tuple(shape), partition=partition,
                        offset=offset)
        rotate = _rotation(name, slots, loop, stride, tensor.bytes_per_partition, partition is not None)
        return self._declare(tensor if rotate is None else replace(tensor, rotate=rotate))

    def psum(self, name: str, shape, dtype: str = "float32", *, partition: int | None = None,
             bank: int | None = None, offset: int | None = None, slots: int = 1,
             loop: str | Index | None = None, stride: int | None = None) -> TensorRef:
        """A PSUM tile (one bank at most): virtual unless placed (partition and bank).

        ``slots=n, loop=L`` is ``psum.mod_alloc(base_bank=bank, num_bank_tiles=(n,))``: PSUM
        bank rotation, iteration ``i`` of loop ``L`` in bank ``bank + (i mod n)`` (``stride``
        defaults to one bank, 2048 bytes; a multiple of it skips banks).
        """
        if (partition is None) != (bank is None) or (offset is not None and bank is None):
            raise ValueError(f"{name}: place a psum tensor with partition= and bank= (offset= optional), or none")
        if bank is not None and offset is None:
            offset = 0
        rotate = _rotation(name, slots, loop, stride, PSUM_BANK_BYTES, bank is not None)
        return self._declare(Tensor(name=name, memory=MemoryKind.PSUM, dtype=dtype, shape=tuple(shape),
                                    partition=partition, offset=offset, bank=bank, rotate=rotate))

    # -- structure -------------------------------------------------------------------------
    def _claim(self, name: str) -> str:
        if name in self._names:
            raise ValueError(f"name {name!r} used twice (instructions and loops share one namespace)")
        self._names.add(name)
        if self._undo is not None:
            self._undo.append(("name", name))
        return name

    @contextmanager
    def loop(self, name: str, trip_count: int, extras: Mapping[str, Any] | None = None) -> Iterator[Index]:
        """A loop (scheduling unit); yields its index variable for slice expressions."""
        if not is_int(trip_count) or trip_count < 1:
            raise ValueError(f"loop {name!r}: trip_count must be a positive integer")
        self._claim(name)
        self._bodies.append([])
        self._loops.append(name)
        try:
            yield Index(0, ((name, 1),))
        finally:  # also when the caller left the body early (a kernel's `return` inside it)
            body = self._bodies.pop()
            self._loops.pop()
            self._bodies[-1].append(Loop(name, trip_count, tuple(body), frozen_mapping(extras)))

    def instruction(self, op: str, engine: str, reads: Iterable[Operand | Access] = (),
                    writes: Iterable[Operand | Access] = (), *,
                    attrs: Mapping[str, Any] | None = None, queue: str | None = None, name: str | None = None,
                    deps: Iterable[Any] = ()) -> str:
        """Emit any instruction (an opaque op too); the typed helpers below call this."""
        if name is None:
            number = self._counters.get(op, 0)
            while f"{op}{number}" in self._names:
                number += 1
            self._counters[op] = number + 1
            name = f"{op}{number}"
        self._claim(name)
        if queue is None and op.startswith("dma"):
            queue = "dma0"
        written = tuple(_access(w) for w in writes)
        for tensor in {access.tensor for access in written}:
            self._written[tensor] = self._written.get(tensor, 0) + 1
            if self._undo is not None:
                self._undo.append(("written", tensor))
        self._bodies[-1].append(Instruction(
            name=name, engine=engine, op=op, reads=tuple(_access(r) for r in reads),
            writes=written,
            attrs=frozen_mapping({k: v for k, v in (attrs or {}).items() if v is not None}),
            deps=tuple(_as_dep(d) for d in deps), queue=queue, extras=frozen_mapping(self.next_extras)))
        return name

    # -- what a frontend reads and amends (the NKI tracer records the source of each node) ------
    @property
    def tensors(self) -> Mapping[str, Tensor]:
        """The tensors declared so far, by name (a read-only view)."""
        return MappingProxyType(self._tensors)

    def amend_extras(self, name: str, extras: Mapping[str, Any]) -> Tensor:
        """Tensor ``name`` with ``extras`` merged into its own (these win), as its declaration
        from now on; returns it."""
        tensor = self._tensors[name]
        if self._undo is not None:
            self._undo.append(("tensor", name, tensor))
        tensor = replace(tensor, extras=frozen_mapping({**tensor.extras, **extras}))
        self._tensors[name] = tensor
        return tensor

    def name_taken(self, name: str) -> bool:
        """True when an instruction or a loop already has ``name`` (they share one namespace)."""
        return name in self._names

    @property
    def emitted(self) -> int:
        """Instructions and loops emitted so far (each claims a name)."""
        return len(self._names)

    @property
    def depth(self) -> int:
        """Bodies open: 1 at the kernel's top level, one more inside each open loop."""
        return len(self._bodies)

    def writes_tensor(self, name: str) -> bool:
        """True when an instruction emitted so far writes tensor ``name``."""
        return name in self._written

    def write_count(self, name: str) -> int:
        """How many instructions emitted so far write tensor ``name``."""
        return self._written.get(name, 0)

    def mark(self) -> int:
        """A position in the open body: what is emitted after it is :meth:`emitted_since` it."""
        return len(self._bodies[-1])

    def emitted_since(self, mark: int) -> list[Node]:
        """The nodes emitted into the open body since ``mark``, in order."""
        return self._bodies[-1][mark:]

    def replace_since(self, mark: int, nodes: Iterable[Node]) -> None:
        """The nodes emitted since ``mark`` replaced by ``nodes`` (the same instructions rewritten:
        their names stay claimed)."""
        self._bodies[-1][mark:] = nodes

    def move_since(self, mark: int, depth: int) -> None:
        """The nodes emitted since ``mark`` moved to the end of the body open at ``depth`` (1: the
        top level), outside the loops opened since: they then run once, not every iteration."""
        if not 1 <= depth <= len(self._bodies):
            raise ValueError(f"no body open at depth {depth} (1 to {len(self._bodies)})")
        body = self._bodies[-1]
        moved = body[mark:]
        del body[mark:]
        self._bodies[depth - 1].extend(moved)

    def draft(self) -> Program:
        """The top level built so far (loops still open left out), not validated: for reading
        what was emitted, or running a probe, mid-build."""
        return Program(dict(self._tensors), tuple(self._bodies[0]), self.machine)

    @contextmanager
    def trial(self) -> Iterator[None]:
        """Whatever is declared or emitted in the block is undone when it ends (tensors, names,
        DRAM addresses, the open body): a probe program built from :meth:`draft`, then dropped.
        Its changes are logged and undone one by one: a trial costs what it emits, not the program
        so far (a trace opens one per device value read: copying every name was quadratic)."""
        outermost = self._undo is None
        if outermost:
            self._undo = []
        depth, mark, logged = len(self._bodies), self.mark(), len(self._undo)
        counters, dram_end = dict(self._counters), self._dram_end  # (one counter per op: small)
        try:
            yield
        finally:
            if len(self._bodies) != depth:
                raise RuntimeError("a trial must close the loops it opens")  # our own misuse, never a user's
            del self._bodies[-1][mark:]
            self._undo_since(logged)
            self._counters, self._dram_end = counters, dram_end
            if outermost:
                self._undo = None

    def _undo_since(self, logged: int) -> None:
        """Undo the logged changes after the first ``logged``, newest first."""
        undo = self._undo
        for entry in reversed(undo[logged:]):
            if entry[0] == "name":
                self._names.discard(entry[1])
            elif entry[0] == "written":
                left = self._written[entry[1]] - 1
                if left:
                    self._written[entry[1]] = left
                else:
                    del self._written[entry[1]]
            elif entry[2] is None:
                del self._tensors[entry[1]]
            else:
                self._tensors[entry[1]] = entry[2]
        del undo[logged:]

    def program(self, *, validate: bool = True) -> Program:
        """The program built so far, validated (:func:`neuronsim.machine.formats.validate.validate_program`;
        ``validate=False``: by a caller that validates what it makes of it)."""
        if self._loops:
            raise ValueError(f"loop {self._loops[-1]!r} is still open")
        program = Program(frozen_mapping(self._tensors), tuple(self._bodies[0]), self.machine)
        loops = {node.name for node, _ in program.walk() if isinstance(node, Loop)}
        for tensor in self._tensors.values():
            if tensor.rotate is not None and tensor.rotate.loop not in loops:
                raise ValueError(f"{tensor.name}: rotates over loop {tensor.rotate.loop!r}, which the kernel never "
                                 "opens")
        if validate:
            validate_program(program)
        return program

    # -- ops (nki.isa style: destination first) --------------------------------------------
    def dma_copy(self, dst: Operand, src: Operand, *, engine: str = "sp", queue: str = "dma0",
                 dge: str | None = None, name: str | None = None, deps: Iterable[Any] = ()) -> str:
        """DMA ``src`` to ``dst`` (element counts agree; dtype cast via fp32)."""
        d, s = as_view(dst), as_view(src)
        _same_count(d, s, "dma_copy")
        return self.instruction("dma_copy", engine, [s], [d], attrs={"dge": dge}, queue=queue, name=name, deps=deps)

    def matmul(self, dst: Operand, stationary: Operand, moving: Operand, *, accumulate: bool = False,
               group: str | int | None = None, name: str | None = None, deps: Iterable[Any] = ()) -> str:
        """``dst[M, N] (+)= stationary[K, M]^T @ moving[K, N]`` on PE into PSUM.

        ``accumulate=False`` starts an accumulation group; ``True`` adds to it, and the PSUM
        tile is listed among the reads too (every touched byte is listed).
        """
        d, st, mv = as_view(dst), as_view(stationary), as_view(moving)
        k, m, n = st.num_partitions, st.free_count, mv.free_count
        if mv.num_partitions != k or (d.num_partitions, d.free_count) != (m, n):
            raise ValueError(f"matmul: stationary {st.shape} [K,M], moving {mv.shape} [K,N] and psum {d.shape} [M,N] "
                             "disagree")
        reads = [st, mv, d] if accumulate else [st, mv]
        return self.instruction("matmul", "pe", reads, [d], attrs={"accumulate": accumulate, "group": group},
                                name=name, deps=deps)

    def transpose(self, dst: Operand, src: Operand, *, engine: str = "pe", name: str | None = None,
                  deps: Iterable[Any] = ()) -> str:
        """``dst[F, P] = src[P, F]`` (PE: SBUF into PSUM, at most 128 x 128)."""
        d, s = as_view(dst), as_view(src)
        if (d.num_partitions, d.free_count) != (s.free_count, s.num_partitions):
            raise ValueError(f"transpose: destination {d.shape} is not the transpose of {s.shape}")
        return self.instruction("transpose", engine, [s], [d], name=name, deps=deps)

    def _operands(self, reads: list[View], attrs: dict[str, Any], like: View, op: str,
                  **operands: float | Operand | None) -> None:
        """Per-partition operands: a tile is appended to ``reads`` and named ``{"read": k}``."""
        for slot, value in operands.items():
            if isinstance(value, (View, TensorRef)):
                reads.append(_per_partition(value, like, f"{op} {slot}"))
                attrs[slot] = {"read": len(reads) - 1}
            else:
                attrs[slot] = _number(value, f"{op} {slot}")

    def activation(self, dst: Operand, src: Operand, *, func: str = "identity", scale: float | Operand | None = None,
                   bias: float | Operand | None = None, reduce_res: Operand | None = None, reduce_op: str = "add",
                   name: str | None = None, deps: Iterable[Any] = ()) -> str:
        """``dst = func(src * scale + bias)`` on ACT; ``scale`` / ``bias`` numbers or ``[P, 1]`` tiles.

        With ``reduce_res`` (a ``[P, 1]`` tile) the instruction also writes the per-partition
        ``reduce_op`` of its result there (NKI ``activation_reduce``).
        """
        d, s = as_view(dst), as_view(src)
        _same_tile(d, s, "activation")
        reads, attrs = [s], {"func": func}
        self._operands(reads, attrs, d, "activation", bias=bias, scale=scale)
        writes = [d]
        if reduce_res is not None:
            writes.append(_per_partition(reduce_res, d, "activation reduce_res"))
            attrs["reduce_op"] = reduce_op
        return self.instruction("activation", "act", reads, writes, attrs=attrs, name=name, deps=deps)

    def tensor_tensor(self, dst: Operand, in0: Operand, in1: Operand, *, op: str = "add", engine: str = "dve",
                      name: str | None = None, deps: Iterable[Any] = ()) -> str:
        """``dst = in0 <op> in1`` elementwise (at most one operand in PSUM)."""
        d, a, b = as_view(dst), as_view(in0), as_view(in1)
        _same_tile(d, a, "tensor_tensor")
        _same_tile(d, b, "tensor_tensor")
        return self.instruction("tensor_tensor", engine, [a, b], [d], attrs={"op": op}, name=name, deps=deps)

    def tensor_scalar(self, dst: Operand, src: Operand, *, op0: str, operand0: float | Operand = 0.0,
                      op1: str | None = None, operand1: float | Operand | None = None, reverse: bool | None = None,
                      reverse0: bool | None = None, reverse1: bool | None = None, engine: str = "dve",
                      name: str | None = None, deps: Iterable[Any] = ()) -> str:
        """``dst = (src <op0> operand0) <op1> operand1``; operands numbers or ``[P, 1]`` tiles."""
        d, s = as_view(dst), as_view(src)
        _same_tile(d, s, "tensor_scalar")
        reads = [s]
        attrs = {"op0": op0, "op1": op1, "reverse": reverse, "reverse0": reverse0, "reverse1": reverse1}
        self._operands(reads, attrs, d, "tensor_scalar", operand0=operand0, operand1=operand1)
        return self.instruction("tensor_scalar", engine, reads, [d], attrs=attrs, name=name, deps=deps)

    def tensor_tensor_scan(self, dst: Operand, data0: Operand, data1: Operand, *, initial: float | Operand = 0.0,
                           op0: str = "multiply", op1: str = "add", reverse0: bool | None = None,
                           reverse1: bool | None = None, name: str | None = None, deps: Iterable[Any] = ()) -> str:
        """``dst[:, i] = (data0[:, i] <op0> dst[:, i-1]) <op1> data1[:, i]`` on DVE, from ``initial``."""
        d, a, b = as_view(dst), as_view(data0), as_view(data1)
        _same_tile(d, a, "tensor_tensor_scan")
        _same_tile(d, b, "tensor_tensor_scan")
        reads = [a, b]
        attrs = {"op0": op0, "op1": op1, "reverse0": reverse0, "reverse1": reverse1}
        self._operands(reads, attrs, d, "tensor_tensor_scan", initial=initial)
        return self.instruction("tensor_tensor_scan", "dve", reads, [d], attrs=attrs, name=name, deps=deps)

    def tensor_reduce(self, dst: Operand, src: Operand, *, op: str = "add", axis: int | list[int] | None = None,
                      negate: bool | None = None, keepdims: bool | None = None, name: str | None = None,
                      deps: Iterable[Any] = ()) -> str:
        """``dst[p, kept] = reduce(src[p, ...])`` on DVE over the free ``axis`` dims (default: all).

        With ``axis`` the read keeps the view's dimensions (so ``axis`` numbers them).
        """
        d, s = as_view(dst), as_view(src)
        if d.num_partitions != s.num_partitions:
            raise ValueError(f"tensor_reduce: {d.shape} and {s.shape} differ in partitions")
        read: View | Access = s
        if axis is not None:
            axes = [axis] if is_int(axis) else list(axis)
            kept = prod(s.shape[1:min(axes)])
            if d.free_count != kept:
                raise ValueError(f"tensor_reduce: reducing axes {axes} of {s.shape} leaves {kept} elements per "
                                 f"partition, not {d.free_count}")
            read = s.access(merge=False)
        return self.instruction("tensor_reduce", "dve", [read], [d],
                                attrs={"op": op, "axis": axis, "negate": negate, "keepdims": keepdims},
                                name=name, deps=deps)

    def bn_stats(self, dst: Operand, src: Operand, *, name: str | None = None, deps: Iterable[Any] = ()) -> str:
        """``dst[p, 0:6]`` = mean / variance statistics of ``src[p, :]`` (at most 512 elements) on DVE."""
        d, s = as_view(dst), as_view(src)
        if d.num_partitions != s.num_partitions or d.free_count != 6 or s.free_count > 512:
            raise ValueError(f"bn_stats: {s.shape} (at most 512 per partition) -> {d.shape} (6 per partition)")
        return self.instruction("bn_stats", "dve", [s], [d], name=name, deps=deps)

    def bn_aggr(self, dst: Operand, src: Operand, *, name: str | None = None, deps: Iterable[Any] = ()) -> str:
        """``dst[p] = (mean, variance)`` from the ``bn_stats`` results in ``src[p, :]`` on DVE."""
        d, s = as_view(dst), as_view(src)
        if d.num_partitions != s.num_partitions or d.free_count != 2 or s.free_count % 3:
            raise ValueError(f"bn_aggr: {s.shape} (triples per partition) -> {d.shape} (2 per partition)")
        return self.instruction("bn_aggr", "dve", [s], [d], name=name, deps=deps)

    def tensor_copy(self, dst: Operand, src: Operand, *, engine: str = "dve", name: str | None = None,
                    deps: Iterable[Any] = (), dynamic: str | None = None) -> str:
        """``dst = cast(src)`` (ACT, DVE may read PSUM, POOL not); ``dynamic``: "src" / "dst" read at run time."""
        d, s = as_view(dst), as_view(src)
        _same_tile(d, s, "tensor_copy")
        attrs = {"dynamic": dynamic} if dynamic else None
        return self.instruction("tensor_copy", engine, [s], [d], attrs=attrs, name=name, deps=deps)

    def memset(self, dst: Operand, value: float | str = 0.0, *, engine: str = "dve", name: str | None = None,
               deps: Iterable[Any] = ()) -> str:
        """``dst = value`` (``-math.inf`` or ``"-inf"`` too: the format writes it ``"-inf"``)."""
        return self.instruction("memset", engine, [], [dst], attrs={"value": _number(value, "memset value")},
                                name=name, deps=deps)

    def iota(self, dst: Operand, *, base: float | None = None, step: float | None = None,
             partition_step: float | None = None, name: str | None = None, deps: Iterable[Any] = ()) -> str:
        """``dst[p, i] = base + p * partition_step + i * step`` on POOL."""
        attrs = {key: _number(value, f"iota {key}")
                 for key, value in (("base", base), ("step", step), ("partition_step", partition_step))}
        return self.instruction("iota", "pool", [], [dst], attrs=attrs, name=name, deps=deps)

    def set_rand_state(self, seed: int, *, engine: str = "pool", name: str | None = None,
                       deps: Iterable[Any] = ()) -> str:
        return self.instruction("set_rand_state", engine, attrs={"seed": seed}, name=name, deps=deps)

    def random(self, dst: Operand, *, low: float | None = None, high: float | None = None, engine: str = "pool",
               name: str | None = None, deps: Iterable[Any] = ()) -> str:
        attrs = {"low": _number(low, "random low"), "high": _number(high, "random high")}
        return self.instruction("random", engine, [], [dst], attrs=attrs, name=name, deps=deps)


def _access(operand: Operand | Access) -> Access:
    return operand if isinstance(operand, Access) else as_view(operand).access()


def _same_count(a: View, b: View, op: str) -> None:
    if a.count != b.count:
        raise ValueError(f"{op}: {a.name} {a.shape} and {b.name} {b.shape} have different element counts")


def _same_tile(a: View, b: View, op: str) -> None:
    for view in (a, b):  # a DRAM side is no tile at all: say that, not the shapes
        if view.memory == MemoryKind.DRAM and op != "dma_copy":
            raise ValueError(f"{op}: {view.name} {view.shape} is in DRAM; compute engines read and write SBUF / "
                             "PSUM tiles (load it first)")
    if (a.num_partitions, a.free_count) != (b.num_partitions, b.free_count):
        raise ValueError(f"{op}: {a.name} {a.shape} and {b.name} {b.shape} are not the same [P, F] tile")


def _per_partition(operand: Operand, like: View, what: str) -> View:
    v = as_view(operand)
    if v.num_partitions != like.num_partitions or v.free_count != 1:
        raise ValueError(f"{what}: {v.name} {v.shape} is not a [{like.num_partitions}, 1] per-partition value")
    return v
