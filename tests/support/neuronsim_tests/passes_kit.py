"""Small builders for hand-written programs in the pass tests, and a precision oracle."""

from __future__ import annotations

from itertools import product

from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.ir.program import Access, Instruction, Loop, MemoryKind, Program, Tensor, frozen_mapping
from neuronsim.machine.order.unroll import unroll
from neuronsim.machine.formats.validate import validate_program
from neuronsim.passes import PassContext, run_pipeline
from neuronsim_tests.oracles import conflicts


def sb(name: str, parts: int = 128, free: int = 64, *, partition: int | None = 0, offset: int | None = 0,
       dtype: str = "float32") -> Tensor:
    return Tensor(name, MemoryKind.SBUF, dtype, (parts, free), partition=partition, offset=offset)


def ps(name: str, bank: int | None = 0, parts: int = 128, free: int = 64, offset: int = 0) -> Tensor:
    if bank is None:
        return Tensor(name, MemoryKind.PSUM, "float32", (parts, free))
    return Tensor(name, MemoryKind.PSUM, "float32", (parts, free), partition=0, bank=bank, offset=offset)


def dr(name: str, address: int | None = 0, n: int = 1024, *, alias: str | None = None,
       role: str = "internal") -> Tensor:
    return Tensor(name, MemoryKind.DRAM, "float32", (n,), address=address, alias=alias, role=role)


def acc(tensor: str, **kw) -> Access:
    if "pattern" in kw:
        kw["pattern"] = tuple(tuple(p) for p in kw["pattern"])
    if "per_iteration" in kw:
        kw["per_iteration"] = tuple(kw["per_iteration"].items())
    if "partitions" in kw and len(kw["partitions"]) == 2:
        kw["partitions"] = (*kw["partitions"], 1)
    return Access(tensor, **kw)


def ins(name: str, engine: str, operation: str, reads=(), writes=(), *, queue: str | None = None,
        **attrs) -> Instruction:
    def norm(xs):
        return tuple(a if isinstance(a, Access) else Access(a) for a in xs)

    if operation.startswith("dma") and queue is None:
        queue = "dma0"
    return Instruction(name, engine, operation, norm(reads), norm(writes), frozen_mapping(attrs), (), queue)


def loop(name: str, trip: int, *body) -> Loop:
    return Loop(name, trip, tuple(body))


def prog(tensors, *body, extras=None) -> Program:
    program = Program(frozen_mapping({t.name: t for t in tensors}), tuple(body), "trn1", frozen_mapping(extras or {}))
    validate_program(program)
    return program


def compiled(program: Program, spec: str, **ctx_options):
    ctx = PassContext(**ctx_options)
    return run_pipeline(program, spec, ctx), ctx


def dep_set(program: Program) -> set[tuple[str, str, str, bool]]:
    """``{(waiter, on, kind, loop_carried)}`` of every dep."""
    return {(i.name, d.on, d.kind.name.lower(), d.loop_carried) for i, _ in program.instructions() for d in i.deps}


def deps_of(program: Program, name: str) -> set[tuple[str, str, bool]]:
    return {(on, kind, lc) for waiter, on, kind, lc in dep_set(program) if waiter == name}


def edge_joins_conflict(program: Program, waiter: str, former: str, loop_carried: bool) -> bool:
    """Brute force: some instance of ``former`` and a later instance of ``waiter`` conflict,
    with the relation the dep expresses (same indices on the common loops, or, loop-carried,
    an earlier iteration of them)."""
    unrolled = unroll(program)
    lw, lf = unrolled.loops_of(waiter), unrolled.loops_of(former)
    common = 0
    while common < len(lw) and common < len(lf) and lw[common] is lf[common]:
        common += 1
    cache: dict = {}
    for b in unrolled.ids_of(waiter):
        ib = unrolled[b].index[:common]
        for a in unrolled.ids_of(former):
            if a >= b:
                continue
            ia = unrolled[a].index[:common]
            if (ia < ib) if loop_carried else (ia == ib):
                if conflicts(program, unrolled[a], unrolled[b], cache):
                    return True
    return False


def brute_label(program: Program, waiter: str, dep) -> str:
    """The kind a dep's footprints give over every instance pair it orders (RAW flow, WAW
    output, WAR anti, none ordered), by explicit byte sets."""
    unrolled = unroll(program)
    rank = {0: "flow", 1: "output", 2: "anti"}
    best = 3
    cache: dict = {}
    for b in unrolled.ids_of(waiter):
        for a in unrolled.wait_targets(unrolled[b], dep):
            found = conflicts(program, unrolled[a], unrolled[b], cache)
            if found:
                best = min(best, min(kind for kind, _ in found))
    return rank.get(best, "ordered")


__all__ = ["brute_label", "sb", "ps", "dr", "acc", "ins", "loop", "prog", "compiled", "dep_set", "deps_of",
           "edge_joins_conflict", "EdgeKind", "product"]
