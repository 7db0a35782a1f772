"""A trace that reads device values runs the program traced so far at every read; a tile the
kernel can no longer reach gives its bytes to the tiles declared after it
(machine/nki/liveness.py), so that memory follows what the kernel holds at once, not every
tile it ever declared (probe_p: nki-library's find_nonzero_indices at its test's largest row
held 25 MB an SBUF partition, 9.1 GB in all).  A node that reaches a retired tile after all
pins it, and the read runs from the start without that reuse: slower, never wrong."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import neuronsim.verify.nki  # noqa: F401  (registers the device-value reader)
from neuronsim.machine.build.builder import KernelBuilder
from neuronsim.machine.ir.program import MemoryKind, Program, Tensor
from neuronsim.machine.nki.liveness import Retired, TileLiveness
from neuronsim.verify.nki import probe
from neuronsim.verify.nki.placement import place_apart_after
from neuronsim.verify.nki.run import run_kernel
from neuronsim_tests.nki_kernels import kernel

SBUF, PSUM, DRAM = MemoryKind.SBUF, MemoryKind.PSUM, MemoryKind.DRAM

def test_a_tile_per_step_read_on_the_device_runs_in_the_memory_of_a_few() -> None:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((5, 128, 64)).astype(np.float32)
    which = rng.integers(0, 5, (40, 1)).astype(np.int32)
    outputs, report = run_kernel(kernel("current_control.py::tile_per_step"), x, which, seeds=(None,))
    assert not report.problems()
    np.testing.assert_allclose(np.asarray(outputs), np.exp(x[which[:, 0]]).sum(axis=0), rtol=1e-5, atol=1e-4)
    # the reader's SBUF row after 40 reads: a few steps' tiles (each step's t, e and exp(t) on bytes
    # of their own were 40 x 576 bytes); the last read's memory is what it resumes from
    memory = probe._LAST[0].memory
    assert memory.spaces[0].size // memory.partitions <= 8 * 256


def _tensors() -> list[Tensor]:
    return [
        Tensor("x", DRAM, "float32", (256, 3), role="input"),
        Tensor("a", SBUF, "float32", (128, 64)),
        Tensor("p", PSUM, "float32", (128, 512)),
        Tensor("b", SBUF, "float32", (128, 64)),
        Tensor("q", PSUM, "float32", (128, 512)),
        Tensor("c", SBUF, "float32", (128, 16)),
        Tensor("d", SBUF, "float32", (128, 64)),
        Tensor("y", DRAM, "float32", (256, 3), role="output"),
    ]


#: a went before b was declared; p before q; b before d (c, declared before b went, keeps its own)
RETIRED = {"a": Retired(declared=3, at=2), "p": Retired(declared=4, at=3), "b": Retired(declared=6, at=4)}


def _program(tensors: list[Tensor]) -> Program:
    return Program({t.name: t for t in tensors})


def test_a_tile_declared_after_another_went_takes_its_bytes() -> None:
    placed = place_apart_after(_program(_tensors()), None, RETIRED).program.tensors
    assert placed["b"].offset == placed["a"].offset and placed["q"].bank == placed["p"].bank
    assert placed["d"].offset == placed["b"].offset  # b went in its turn
    assert placed["c"].offset not in (placed["a"].offset, placed["b"].offset)
    apart = place_apart_after(_program(_tensors()), None).program.tensors  # no retirements: all apart
    assert len({apart[n].offset for n in "abcd"}) == 4 and apart["p"].bank != apart["q"].bank


@pytest.mark.parametrize("cut", range(9))
def test_resumed_or_from_scratch_the_same_retirements_give_the_same_bytes(cut: int) -> None:
    tensors = _tensors()
    known = {name: gone for name, gone in RETIRED.items() if gone.declared <= cut}  # what a read at the cut knew
    before = place_apart_after(_program(tensors[:cut]), None, known)
    after = place_apart_after(_program(tensors), before, RETIRED)
    whole = place_apart_after(_program(tensors), None, RETIRED)
    assert after.resumed and dict(after.program.tensors) == dict(whole.program.tensors)


def _reaching_program() -> Program:
    """x -> a; b = 7; a -> probe: a is read after a retirement that gave its bytes to b."""
    kb = KernelBuilder("reach")
    x = kb.dram_input("x", (128, 16), "float32")
    a = kb.sbuf("a", (128, 16), "float32")
    b = kb.sbuf("b", (128, 16), "float32")
    out = kb.dram_output("probe", (128, 16), "float32")
    kb.dma_copy(a, x)
    kb.memset(b, 7.0)
    kb.dma_copy(out, a)
    return kb.draft()


def test_a_node_reaching_a_retired_tile_pins_it_and_reads_right() -> None:
    program = _reaching_program()
    x = np.arange(128 * 16, dtype=np.float32).reshape(128, 16)
    liveness = TileLiveness()
    liveness.retired["a"] = Retired(declared=2, at=1)  # as if a went after its load, before b was declared
    probe._LAST.clear()
    got = probe.read_tensor(program, {"x": x}, "probe", liveness)
    assert np.array_equal(got, x)  # on b's bytes, a would read b's 7s
    assert "a" in liveness.pinned and "a" not in liveness.retired and liveness.version == 1


def test_a_tensor_is_retired_at_the_next_read_after_its_last_object_goes() -> None:
    liveness = TileLiveness()
    tile = SimpleNamespace(tensor=Tensor("t", SBUF, "float32", (128, 4)))
    token = liveness.hold(tile)
    assert liveness.hold(tile) is token  # one token a tensor, shared by its views
    assert liveness.hold(SimpleNamespace(tensor=Tensor("x", DRAM, "float32", (4,)))) is None
    assert liveness.hold(SimpleNamespace(tensor=Tensor("g", SBUF, "float32", (128, 4), partition=0, offset=0))) is None
    liveness.retire(declared=1, at=0)
    assert not liveness.retired  # still held
    del token
    assert not liveness.retired  # gone, retired only at a read (a held-back call may still use it)
    liveness.retire(declared=3, at=5)
    assert liveness.retired == {"t": Retired(declared=3, at=5)}
    again = liveness.hold(tile)  # a new object for it: kept from now on
    assert again is not None and "t" in liveness.pinned and not liveness.retired and liveness.version == 1
