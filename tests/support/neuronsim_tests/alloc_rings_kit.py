"""Shared helpers of the tests, moved from tests/unit/test_alloc_rings.py."""

from __future__ import annotations
from neuronsim.machine.ir.program import Access, MemoryKind, Tensor
from neuronsim_tests.passes_kit import ins, loop, prog


TILE = 128 * 16  # elements of a [128, 16] tile


def V(name, parts=128, free=16, memory=MemoryKind.SBUF):
    return Tensor(name, memory, "float32", (parts, free))


def dram(name, role, tiles=4, address=None):
    return Tensor(name, MemoryKind.DRAM, "float32", (tiles * TILE,), address=address, role=role)


def tile(name, loops=("i",)):
    """One [128, 16] tile of a DRAM tensor per iteration of ``loops`` (innermost fastest)."""
    return Access(name, offset=0, pattern=((1, TILE),), per_iteration=tuple((lp, TILE) for lp in loops))


def _pipeline(trip=4, *extra_tensors, body_tail=()):
    """load x[i] -> a; exp a -> b; store b -> y[i], in a loop of ``trip``."""
    tensors = [dram("x", "input", trip), dram("y", "output", trip), V("a"), V("b"), *extra_tensors]
    body = [ins("ld", "sp", "dma_copy", reads=[tile("x")], writes=["a"]),
            ins("exp", "act", "activation", reads=["a"], writes=["b"], func="exp"),
            ins("st", "act", "dma_copy", reads=["b"], writes=[tile("y")], queue="dma1"), *body_tail]
    return prog(tensors, loop("i", trip, *body))

