"""Hypothesis strategy for loop kernels over virtual tiles: what the allocator sees in real code.

:func:`neuronsim.verify.strategies.programs` draws crowded programs over a small pool of tensors that
every instruction may touch; their tensors live across the whole program, so an allocator has
nothing to reuse.  Real NKI kernels (``docs/kernel-patterns.md`` sections 2, 3, 7) are
loops whose bodies declare tiles: a DMA load into a fresh tile, compute on ACT / DVE / POOL,
PE matmuls into a PSUM tile (a group-start matmul, then accumulating ones) evicted to SBUF,
and a DMA store of each iteration's result.  :func:`tile_kernels` draws such programs, valid
by construction, with every SBUF / PSUM tile and every DRAM tensor virtual (placed by
``alloc``), and with the cases an allocator must tell apart:

* tiles private to an iteration (written, then read), some written in two halves (by free
  elements or by partitions) before a whole read, some updated in place;
* tiles read by a nested loop (private to the outer iteration only);
* accumulators and running maxima, initialised before the loop and updated in it (a value
  crossing iterations), stored after it; a tile read after its loop;
* spills to a DRAM scratch tensor and reloads in the same iteration;
* loops in sequence, so tiles of one loop may reuse the storage of the previous one.

Every byte a tile read covers was written before (no read of uninitialised storage), so the
outputs do not depend on the placement: two valid allocations compute the same outputs.

Examples
--------
>>> from hypothesis import given, settings
>>> from neuronsim.machine.formats.validate import validate_program
>>> @settings(max_examples=5, derandomize=True, database=None)
... @given(tile_kernels())
... def check(program):
...     validate_program(program)
...     assert program.has_virtual_tensors
>>> check()
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from neuronsim.machine.ir.program import Access, Instruction, Loop, MemoryKind, Node, Program, Tensor, frozen_mapping

__all__ = ["tile_kernels", "examples"]

_ALU = ("add", "multiply", "max", "subtract")
_FUNCS = ("identity", "exp", "tanh", "relu", "square")


@dataclass
class _Kernel:
    """Mutable state of one draw: the tensors made so far and the instruction counter."""

    draw: object
    partitions: int
    free: int
    dtype: str
    queues: int
    tensors: dict[str, Tensor] = field(default_factory=dict)
    count: int = 0

    def pick(self, items):
        return self.draw(st.sampled_from(list(items)))

    def flag(self, p: float = 0.5) -> bool:
        return self.draw(st.integers(0, 99)) < int(p * 100)

    def name(self, stem: str) -> str:
        self.count += 1
        return f"{stem}{self.count}"

    def tile(self, memory: MemoryKind = MemoryKind.SBUF) -> str:
        name = self.name("ps" if memory == MemoryKind.PSUM else "t")
        dtype = "float32" if memory == MemoryKind.PSUM else self.dtype
        self.tensors[name] = Tensor(name, memory, dtype, (self.partitions, self.free))
        return name

    def dram(self, role: str, tiles: int) -> str:
        name = self.name({"input": "x", "output": "y"}.get(role, "scratch"))
        size = tiles * self.partitions * self.free
        self.tensors[name] = Tensor(name, MemoryKind.DRAM, self.dtype, (size,), role=role)
        return name

    def instr(self, stem: str, engine: str, opcode: str, reads=(), writes=(), **attrs) -> Instruction:
        queue = f"dma{self.pick(range(self.queues))}" if opcode.startswith("dma") else None
        return Instruction(name=self.name(stem), engine=engine, op=opcode, reads=tuple(reads), writes=tuple(writes),
                           attrs=frozen_mapping(attrs), queue=queue)

    def dram_tile(self, tensor: str, loops: tuple[tuple[str, int], ...]) -> Access:
        """One tile of ``tensor`` per iteration of ``loops`` (row-major over them)."""
        size = self.partitions * self.free
        steps, stride = [], size
        for loop, trip in reversed(loops):
            steps.append((loop, stride))
            stride *= trip
        return Access(tensor, offset=0, pattern=((1, size),), per_iteration=tuple(reversed(steps)))


def _halves(k: _Kernel, tile: str) -> list[Access]:
    """Two accesses covering ``tile``: by free elements, or by partitions (where the
    partition-start rule allows a half)."""
    half = k.partitions // 2
    if k.partitions >= 64 and k.flag():
        return [Access(tile, partitions=(0, half, 1)), Access(tile, partitions=(half, half, 1))]
    cut = k.free // 2
    return [Access(tile, offset=0, pattern=((1, cut),)), Access(tile, offset=cut, pattern=((1, k.free - cut),))]


def _stage(k: _Kernel, ready: list[str], loops, body: list[Node], outputs: list[str]) -> None:
    """Append one stage to ``body``; ``ready`` lists the SBUF tiles holding values."""
    kind = k.pick(("load", "load", "compute", "compute", "matmul", "split", "spill", "store"))
    if kind == "load" or not ready:
        source = k.dram("input", _tiles(loops))
        tile = k.tile()
        body.append(k.instr("load", k.pick(("sp", "act", "pool")), "dma_copy", [k.dram_tile(source, loops)],
                            [Access(tile)]))
        ready.append(tile)
    elif kind == "compute":
        a, b = k.pick(ready), k.pick(ready)
        out = a if k.flag(0.25) else k.tile()  # in place a quarter of the time
        op = k.pick(("activation", "tensor_copy", "tensor_tensor", "tensor_scalar"))
        if op == "activation":
            body.append(k.instr("act", "act", op, [Access(a)], [Access(out)], func=k.pick(_FUNCS)))
        elif op == "tensor_copy":
            body.append(k.instr("copy", k.pick(("dve", "act", "pool")), op, [Access(a)], [Access(out)]))
        elif op == "tensor_tensor":
            body.append(k.instr("tt", k.pick(("dve", "pool")), op, [Access(a), Access(b)], [Access(out)],
                                op=k.pick(_ALU)))
        else:
            body.append(k.instr("ts", k.pick(("dve", "act", "pool")), op, [Access(a)], [Access(out)], op0=k.pick(_ALU),
                                operand0=1.5))
        if out not in ready:
            ready.append(out)
    elif kind == "matmul":
        psum = k.tile(MemoryKind.PSUM)
        body.append(k.instr("mm", "pe", "matmul", [Access(k.pick(ready)), Access(k.pick(ready))], [Access(psum)],
                            accumulate=False))
        for _ in range(k.pick((0, 1, 2))):
            body.append(k.instr("mm", "pe", "matmul", [Access(k.pick(ready)), Access(k.pick(ready)), Access(psum)],
                                [Access(psum)], accumulate=True))
        out = k.tile()
        body.append(k.instr("evict", k.pick(("dve", "act")), "tensor_copy", [Access(psum)], [Access(out)]))
        ready.append(out)
    elif kind == "split":
        source, out = k.pick(ready), k.tile()
        for part in _halves(k, out):
            body.append(k.instr("half", k.pick(("dve", "act", "pool")), "tensor_copy", [Access(source)], [part]))
        ready.append(out)
    elif kind == "spill":
        scratch, out = k.dram("internal", 1), k.tile()
        body.append(k.instr("spill", k.pick(("sp", "act")), "dma_copy", [Access(k.pick(ready))], [Access(scratch)]))
        body.append(k.instr("reload", k.pick(("sp", "pool")), "dma_copy", [Access(scratch)], [Access(out)]))
        ready.append(out)
    else:
        _store(k, k.pick(ready), loops, body, outputs)


def _tiles(loops) -> int:
    count = 1
    for _, trip in loops:
        count *= trip
    return count


def _store(k: _Kernel, tile: str, loops, body: list[Node], outputs: list[str]) -> None:
    target = k.dram("output", _tiles(loops))
    body.append(k.instr("store", k.pick(("sp", "act", "dve", "pool")), "dma_copy", [Access(tile)],
                        [k.dram_tile(target, loops)]))
    outputs.append(target)


def _block(k: _Kernel, ready: list[str], loops, depth_left: int, stages: int, trips: int,
           outputs: list[str]) -> list[Node]:
    """A body: stages, maybe a nested loop, maybe accumulators around it; ends with a store."""
    body: list[Node] = []
    for _ in range(k.draw(st.integers(1, stages))):
        _stage(k, ready, loops, body, outputs)
    if depth_left and k.flag(0.4):
        body.extend(_loop(k, list(ready), loops, depth_left - 1, stages, trips, outputs, ready))
    _store(k, ready[-1], loops, body, outputs)
    return body


def _loop(k: _Kernel, ready: list[str], loops, depth_left: int, stages: int, trips: int, outputs: list[str],
          after: list[str]) -> list[Node]:
    """A loop (with its accumulator's initialisation before it and its use after it)."""
    name = k.name("L")
    trip = k.draw(st.integers(1, trips))
    before: list[Node] = []
    accumulators = []
    for _ in range(k.pick((0, 0, 1, 2))):
        acc = k.tile()
        before.append(k.instr("init", k.pick(("dve", "pool")), "memset", [], [Access(acc)], value=0.0))
        accumulators.append(acc)
    inner_ready = [*ready, *accumulators]
    inner = _block(k, inner_ready, (*loops, (name, trip)), depth_left, stages, trips, outputs)
    for acc in accumulators:  # the update: reads last iteration's value (carried)
        inner.append(k.instr("update", k.pick(("dve", "pool")), "tensor_tensor", [Access(acc), Access(inner_ready[-1])],
                             [Access(acc)], op=k.pick(("add", "max"))))
    after.extend(accumulators)
    made = [t for t in inner_ready if t not in ready]
    if made and k.flag(0.2):  # a tile of the loop read after it: its last value crosses the loop's end
        after.append(k.pick(made))
    return [*before, Loop(name, trip, tuple(inner))]


@st.composite
def _kernels(draw, loops: int, depth: int, stages: int, trips: int, machine: str) -> Program:
    k = _Kernel(draw, draw(st.sampled_from((32, 64, 128))), draw(st.sampled_from((4, 8, 16))),
                draw(st.sampled_from(("float32", "bfloat16"))), 3)
    outputs: list[str] = []
    ready: list[str] = []
    body: list[Node] = []
    for _ in range(draw(st.integers(1, loops))):
        if k.flag(0.3):  # flat tiles between loops
            for _ in range(draw(st.integers(1, 2))):
                _stage(k, ready, (), body, outputs)
        after: list[str] = []
        body.extend(_loop(k, list(ready), (), depth - 1, stages, trips, outputs, after))
        ready.extend(after)
    if ready:
        _store(k, ready[-1], (), body, outputs)
    return Program(frozen_mapping(k.tensors), tuple(body), machine)


def tile_kernels(*, max_loops: int = 2, max_depth: int = 2, max_stages: int = 4, max_trip: int = 4,
                 machine: str = "trn1") -> st.SearchStrategy[Program]:
    """Loop kernels over virtual tiles (see the module documentation).

    ``max_loops`` top-level loops in sequence, each nesting at most ``max_depth`` deep, with
    ``1..max_stages`` stages per body and trip counts ``1..max_trip``; deps none.
    """
    for key, value, low in (("max_loops", max_loops, 1), ("max_depth", max_depth, 1), ("max_stages", max_stages, 1),
                            ("max_trip", max_trip, 1)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise InvalidArgument(f"{key}={value!r} must be an integer >= {low}")
    return _kernels(max_loops, max_depth, max_stages, max_trip, machine)


def examples(strategy: st.SearchStrategy, count: int) -> list:
    """``count`` values drawn from ``strategy`` deterministically (derandomized Hypothesis,
    generation phase only): the same list on every run, for measurements and benchmarks."""
    from hypothesis import HealthCheck, Phase, given, settings

    out: list = []

    @settings(max_examples=count, derandomize=True, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(value) -> None:
        out.append(value)

    collect()
    return out[:count]
