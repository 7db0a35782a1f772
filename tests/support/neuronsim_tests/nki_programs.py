"""Small programs as the NKI frontend traces them (``x-source`` on every instruction, affine
loops, ``+=``, direct allocation), written by hand so the reports and findings are tested
without the frontend, and a stand-in for ``neuronsim.machine.nki`` that traces named toy kernels."""

from __future__ import annotations

import contextlib
import types
from dataclasses import dataclass, field, replace

import numpy as np

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.ir.program import Access, Instruction, Loop, MemoryKind, Program, Tensor, frozen_mapping

FILE = "toy_kernel.py"


def src(line: int, call: str, **indices) -> dict:
    return {"x-source": {"file": FILE, "line": line, "call": call, "indices": indices}}


def dram(name: str, role: str, shape=(128, 64), dtype="float32") -> Tensor:
    return Tensor(name, MemoryKind.DRAM, dtype, shape, role=role)


def sbuf(name: str, shape=(128, 64), dtype="float32", offset: int | None = None) -> Tensor:
    placed = {} if offset is None else {"partition": 0, "offset": offset}
    return Tensor(name, MemoryKind.SBUF, dtype, shape, **placed)


def inst(name, engine, op, reads=(), writes=(), line=1, call="nl.x", queue=None, attrs=None, extras=None, **indices):
    more = {**src(line, call, **indices), **(extras or {})}
    return Instruction(name, engine, op, tuple(reads), tuple(writes), frozen_mapping(attrs or {}), (), queue,
                       frozen_mapping(more))


def copy_program(dtype: str = "float32") -> Program:
    """out = x, through one SBUF tile: load (line 10), copy (11), store (12)."""
    tensors = {"x": dram("x", "input", dtype=dtype), "out": dram("out", "output", dtype=dtype),
               "t": sbuf("t", dtype=dtype), "u": sbuf("u", dtype=dtype)}
    body = (inst("load_10", "sp", "dma_copy", [Access("x")], [Access("t")], 10, "nl.load", "dma0"),
            inst("copy_11", "act", "tensor_copy", [Access("t")], [Access("u")], 11, "nl.copy"),
            inst("store_12", "sp", "dma_copy", [Access("u")], [Access("out")], 12, "nl.store", "dma1"))
    return Program(tensors, body)


def _tile(tensor: str, loop: str | None = None) -> Access:
    """Columns ``[16 i, 16 i + 16)`` of a ``(128, 64)`` DRAM tensor (the first 16 without a loop)."""
    return Access(tensor, offset=0, pattern=((64, 128), (1, 16)), per_iteration=((loop, 16),) if loop else ())


def loop_program(kind: str = "affine", tile_offset: int | None = 0, accumulate: bool = False,
                 scope: list[str] | None = None, carry: bool = False) -> Program:
    """``for i in affine_range(4)``: load x[:, i] into tile ``t`` (placed at ``tile_offset``,
    or virtual when None, declared in the loops ``scope`` says, ``x-nki-scope``), copy it to
    ``out[:, i]``; with ``accumulate`` the copy is ``acc += t`` into an SBUF tile ``acc`` made
    before the loop.  ``carry``: the copy and store come first, so iteration ``i`` copies the
    tile iteration ``i - 1`` loaded (a value flowing across iterations)."""
    tile = sbuf("t", (128, 16), offset=tile_offset)
    if scope is not None:
        tile = replace(tile, extras=frozen_mapping({"x-nki-scope": scope}))
    tensors = {"x": dram("x", "input"), "out": dram("out", "output"), "t": tile, "u": sbuf("u", (128, 16))}
    body: list = [inst("load_20", "sp", "dma_copy", [_tile("x", "i")], [Access("t")], 20, "nl.load", "dma0", i="i")]
    if accumulate:
        tensors["acc"] = sbuf("acc", (128, 16))
        body.append(inst("add_21", "dve", "tensor_tensor", [Access("acc"), Access("t")], [Access("acc")], 21,
                         "nl.add", attrs={"op": "add"}, extras={"x-nki-accumulate": True}, i="i"))
        head = [inst("zero_18", "pool", "memset", [], [Access("acc")], 18, "nl.zeros", attrs={"value": 0})]
        tail = [inst("store_24", "sp", "dma_copy", [Access("acc")], [_tile("out")], 24, "nl.store", "dma1")]
    else:
        use = [inst("copy_21", "act", "tensor_copy", [Access("t")], [Access("u")], 21, "nl.copy", i="i"),
               inst("store_22", "sp", "dma_copy", [Access("u")], [_tile("out", "i")], 22, "nl.store", "dma1", i="i")]
        body = use + body if carry else body + use
        head, tail = [], []
    loop = Loop("i", 4, tuple(body), frozen_mapping({"x-nki-range": kind}))
    return Program(tensors, (*head, loop, *tail))


def alloc_program(apart: bool, interleaved: bool = True) -> Program:
    """Two directly allocated tiles ``a`` (loaded at line 30) and ``b`` (line 32), on the same
    bytes unless ``apart``, each copied out (34, 35) and stored.  ``interleaved``: both loads
    come first, so ``b`` overwrites ``a`` while it is live (a clobber, in program order); else
    ``a`` is loaded and copied before ``b`` is loaded, on another queue: nothing in the data
    orders the load after the copy, the compiler's deps on addresses do (no finding)."""
    tensors = {"x": dram("x", "input"), "y": dram("y", "input"), "o1": dram("o1", "output"),
               "o2": dram("o2", "output"), "a": sbuf("a", offset=0), "b": sbuf("b", offset=256 if apart else 0),
               "ua": sbuf("ua"), "ub": sbuf("ub")}
    load_a = inst("load_30", "sp", "dma_copy", [Access("x")], [Access("a")], 30, "nl.load", "dma0")
    load_b = inst("load_32", "pool", "dma_copy", [Access("y")], [Access("b")], 32, "nl.load", "dma1")
    copy_a = inst("copy_34", "act", "tensor_copy", [Access("a")], [Access("ua")], 34, "nl.copy")
    copy_b = inst("copy_35", "dve", "tensor_copy", [Access("b")], [Access("ub")], 35, "nl.copy")
    stores = (inst("store_36", "sp", "dma_copy", [Access("ua")], [Access("o1")], 36, "nl.store", "dma2"),
              inst("store_37", "sp", "dma_copy", [Access("ub")], [Access("o2")], 37, "nl.store", "dma2"))
    order = (load_a, load_b, copy_a, copy_b) if interleaved else (load_a, copy_a, load_b, copy_b)
    return Program(tensors, (*order, *stores))


@dataclass(frozen=True)
class Traced:
    program: Program
    inputs: dict
    outputs: tuple
    initial: dict = field(default_factory=dict)  # the frontend's TracedKernel: no written parameter here
    call_warnings: tuple = ()  # nor a warning of a call

    @property
    def run_inputs(self) -> dict:
        return {**self.inputs, **self.initial}


class NkiError(ProgramError):
    pass


def fake_frontend() -> types.ModuleType:
    """A stand-in ``neuronsim.machine.nki``: kernels ``copy`` (the dtype of its input), ``affine``
    (a carried dependence), ``alloc_clobber`` and ``sendrecv`` (unsupported: NkiError)."""
    module = types.ModuleType("neuronsim.machine.nki")
    module.NkiError = NkiError

    def load_kernel(spec: str):
        path, _, func = spec.partition("::")
        if func == "sendrecv":
            raise NkiError(f"{path}:7", "nisa.sendrecv is not supported (two-core kernels)")
        return func

    def trace(kernel, *arrays, grid=None, name=None, **kwargs):
        named = dict(zip(("x", "y"), arrays)) | {k: v for k, v in kwargs.items() if isinstance(v, np.ndarray)}
        if kernel == "copy":
            dtype = named["x"].dtype.name if "x" in named else "float32"
            dtype = {"float8_e4m3fn": "float8_e4m3"}.get(dtype, dtype)
            return Traced(copy_program(dtype), {"x": named["x"]}, ("out",))
        if kernel == "affine":
            return Traced(loop_program(carry=True), {"x": named["x"]}, ("out",))
        if kernel == "alloc_clobber":
            return Traced(alloc_program(apart=False), {"x": named["x"], "y": named["y"]}, ("o1", "o2"))
        raise NkiError(f"{kernel}.py:1", f"unknown toy kernel {kernel!r}")

    module.load_kernel, module.trace = load_kernel, trace
    module.standins = contextlib.nullcontext  # the toy kernels import nothing
    module.importing = lambda path: contextlib.nullcontext()
    return module
