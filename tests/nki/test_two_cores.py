"""Two-core kernels (machine/nki/cores.py): the grid's two instances traced as the two cores of an
LNC=2 logical core, met at ``nisa.sendrecv`` / ``nisa.core_barrier`` (kernels:
tests/nki/kernels/two_cores.py).  Expectations are numpy; the failures are one line at the
kernel's line, never a hang."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, trace
from neuronsim_tests.nki_kernels import KERNELS, kernel, run
from neuronsim_tests.nki_kit import line_of

SOURCE = Path(KERNELS) / "two_cores.py"
RNG = np.random.default_rng(2)


def _at(message: str, needle: str) -> str:
    """What ``message`` says after its ``file:line: ``, checked to be the kernel line holding ``needle``."""
    where, _, what = message.partition(": ")
    assert where.endswith(f"two_cores.py:{line_of(SOURCE, needle)}"), message
    return what


def _two(name: str):
    return kernel(f"two_cores.py::{name}")[2]


def test_sendrecv_swaps_the_cores_tiles():
    x = RNG.normal(size=(128, 64)).astype(np.float32)
    out = run(_two("swapped_sum"), x, seeds=(None, 0, 1))["return0"]
    total = x[:, :32] + x[:, 32:]
    np.testing.assert_allclose(out, np.concatenate([total, total], axis=1), rtol=1e-6)


def test_a_two_core_program_written_to_a_file_reads_back():
    """probe_aa: ``neuronsim nki -o`` of a two-core kernel wrote ``x-nki-core.ranks``, which the
    program reader refused (``unknown key``), so every program command failed on the file."""
    from neuronsim.machine.formats.program_json import dumps_program, loads_program

    x = RNG.normal(size=(128, 64)).astype(np.float32)
    program = trace(_two("swapped_sum"), x).program
    cores = {inst.extras["x-nki-core"]["ranks"] for inst, _ in program.instructions()}
    assert cores == {False}
    assert loads_program(dumps_program(program)) == program


def test_the_barrier_orders_one_cores_writes_before_the_others_reads():
    x = RNG.normal(size=(128, 64)).astype(np.float32)
    out = run(_two("halves_crossed"), x, seeds=(None, 0, 1))["return0"]
    np.testing.assert_allclose(out, 2 * np.concatenate([x[:, 32:], x[:, :32]], axis=1), rtol=1e-6)


def test_both_cores_instructions_before_a_meeting_come_first_in_program_order():
    x = RNG.normal(size=(128, 64)).astype(np.float32)
    traced = trace(_two("halves_crossed"), x)
    barrier = line_of(SOURCE, "nisa.core_barrier(scratch")
    lines = [inst.extras["x-source"]["line"] for inst, _ in traced.program.instructions()]
    after = [k for k, line in enumerate(lines) if line > barrier]
    before = [k for k, line in enumerate(lines) if line < barrier]
    assert len(before) == 6 and len(after) == 4, lines  # three per core on each side
    assert max(before) < min(after)


def test_a_sendrecv_inside_an_affine_loop_meets_in_every_step():
    x = RNG.normal(size=(3, 128, 16)).astype(np.float32)
    out = run(_two("swapped_per_block"), x)["return0"]
    np.testing.assert_allclose(out, x + 1.0, rtol=1e-6)  # core 0 writes what core 1 sent


def test_cores_that_disagree_are_one_line_at_the_later_call():
    x = RNG.normal(size=(128, 8)).astype(np.float32)
    with pytest.raises(NkiError) as info:
        trace(_two("calls_disagree"), x)
    assert _at(str(info.value), "nisa.sendrecv(src=tile, dst=tile").startswith(
        "nisa.sendrecv meets nisa.core_barrier of core 0 (")


def test_a_core_that_ends_without_meeting_is_one_line_at_the_waiting_call():
    x = RNG.normal(size=(128, 8)).astype(np.float32)
    with pytest.raises(NkiError) as info:
        trace(_two("one_core_waits"), x)
    assert _at(str(info.value), "nisa.core_barrier(out") == (
        "nisa.core_barrier: core 0 waits here for core 1, which ended without meeting it")


def test_an_error_on_one_core_ends_the_trace_at_its_line_and_leaves_no_thread():
    x = RNG.normal(size=(128, 8)).astype(np.float32)
    before = threading.active_count()
    with pytest.raises(NkiError) as info:
        trace(_two("core_one_fails"), x)
    assert _at(str(info.value), "nl.expp(x)").startswith("nl.expp: no such name")
    assert threading.active_count() == before


def test_a_meeting_on_a_grid_of_one_is_refused_as_beyond_one_core():
    x = RNG.normal(size=(128, 64)).astype(np.float32)
    with pytest.raises(NkiError) as info:
        trace(kernel("two_cores.py::swapped_sum"), x)
    message = _at(str(info.value), "nisa.sendrecv(src=mine, dst=theirs")
    assert "neuronsim models one NeuronCore" in message and "this launch has 1" in message


def test_a_tile_each_core_places_itself_lands_in_that_cores_own_sbuf():
    x = RNG.normal(size=(128, 8)).astype(np.float32)
    traced = trace(_two("direct_on_two_cores"), x)
    tensors = traced.program.tensors.values()
    placed = sorted(t.offset for t in tensors if t.offset is not None and t.memory.name == "SBUF")
    assert placed == [0, 192 * 1024]  # trn1: core 1's SBUF after core 0's 192 KiB
    assert traced.program.machine == {"base": "trn1", "sbuf_partition_bytes": 2 * 192 * 1024, "psum_banks": 16}
    np.testing.assert_array_equal(run(_two("direct_on_two_cores"), x)["return0"], 2 * x)
    assert [f for f in _findings("direct_on_two_cores", x)] == []


def _findings(name: str, x):
    from neuronsim.verify.nki.findings import nki_findings

    return nki_findings(trace(_two(name), x).program)


def test_a_read_of_the_other_cores_write_before_the_barrier_is_a_finding_at_both_lines():
    x = RNG.normal(size=(128, 64)).astype(np.float32)
    found = [f for f in _findings("halves_crossed_early", x) if f.kind == "cores"]
    write = line_of(SOURCE, "nisa.dma_copy(dst=scratch[:, rank * half:(rank + 1) * half], src=tile)\n".strip())
    read = line_of(SOURCE, "# before the barrier")
    assert found and all(f.is_error for f in found)
    lines = {(f.first.split(" [")[0].rsplit(":", 1)[-1], f.second.split(" [")[0].rsplit(":", 1)[-1]) for f in found}
    assert lines == {(str(write), str(read)), (str(read), str(write))}, [f.describe() for f in found]
    assert "no meeting between them" in found[0].describe() and found[0].tensors[0].startswith("scratch")
    assert "an order the cores may take changes return0 (core 1 first)" in found[0].describe()


def test_the_same_zeros_written_by_both_cores_is_a_warning_that_says_so():
    x = RNG.normal(size=(128, 64)).astype(np.float32)
    found = [f for f in _findings("both_zero_the_output", x) if f.kind == "cores"]
    assert len(found) == 1 and found[0].severity == "warning" and found[0].dependence == "WAW"
    assert "none of the 2 orders run changes the outputs on these inputs" in found[0].describe()
    assert "(the same values written)" not in found[0].describe()  # (said of any equal outputs: a probe)
    np.testing.assert_array_equal(run(_two("both_zero_the_output"), x)["return0"], x)


@pytest.mark.parametrize("name", ["scratch_zeroed_under_the_other", "scratch_zeroed_after_harmless_blocks"])
def test_a_zeroing_between_the_other_cores_write_and_read_is_an_error_naming_that_order(name):
    x = RNG.normal(size=(128, 64)).astype(np.float32)
    found = [f for f in _findings(name, x) if f.kind == "cores"]
    lines = {line_of(SOURCE, "# zeroes all of it"), line_of(SOURCE, "# its half"), line_of(SOURCE, "# reads it back")}
    assert found and all(f.is_error for f in found), [f.describe() for f in found]
    order = re.search(r"two_cores\.py:(\d+) on core (\d) right before nisa\.dma_copy at tests/nki/kernels/"
                      r"two_cores\.py:(\d+) on core (\d)\)", found[0].describe())
    assert order and {int(order[1]), int(order[3])} <= lines and order[2] != order[4], found[0].describe()


def test_the_same_accesses_across_the_barrier_and_disjoint_halves_are_no_finding():
    x = RNG.normal(size=(128, 64)).astype(np.float32)
    assert [f for f in _findings("halves_crossed", x) if f.kind == "cores"] == []
    assert [f for f in _findings("swapped_sum", x) if f.kind == "cores"] == []


def test_private_hbm_is_each_cores_own():
    x = RNG.normal(size=(128, 16)).astype(np.float32)
    assert [f for f in _findings("private_scratch", x) if f.kind == "cores"] == []
    out = run(_two("private_scratch"), x)["return0"]
    np.testing.assert_allclose(out, np.stack([x, x + 1]), rtol=1e-6)


def test_an_interrupt_while_tracing_two_cores_ends_the_trace_at_once():
    x = RNG.normal(size=(128, 8)).astype(np.float32)
    with pytest.raises(KeyboardInterrupt):
        trace(_two("interrupted_on_core_one"), x)


def test_nxds_pre_release_sendrecv_swaps_the_cores_tiles_of_a_legacy_kernel():
    """NxD's released LNC=2 kernels (indexed_flatten, the MX expert MLPs) import sendrecv from
    ``neuronxcc.nki._private.private_api``; it was refused as a name neuronsim does not model."""
    x = RNG.normal(size=(128, 64)).astype(np.float32)
    out = run(kernel("two_cores_legacy.py::max_of_both_halves")[2], x, seeds=(None, 0))["return0"]
    both = np.maximum(x[:, :32], x[:, 32:])
    np.testing.assert_array_equal(out, np.concatenate([both, both], axis=1))


MISUSE = '''
import nki
import nki.isa as nisa
import nki.language as nl


def _swap(x, src_of, dst_buffer=nl.sbuf, to=None):
    out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
    core = nl.program_id(0)
    mine = nl.ndarray((128, 32), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=mine, src=x[:, nl.ds(core * 32, 32)])
    theirs = nl.ndarray((128, 32), dtype=x.dtype, buffer=dst_buffer)
    partner = 1 - core if to is None else to
    nisa.sendrecv(src=src_of(x, mine, core), dst=theirs, send_to_rank=partner, recv_from_rank=partner)  # mistake
    nisa.dma_copy(dst=out[:, nl.ds(core * 32, 32)], src=mine)
    return out


@nki.jit
def to_a_third_core(x):
    return _swap(x, lambda x, mine, core: mine, to=2)


@nki.jit
def from_hbm(x):
    return _swap(x, lambda x, mine, core: x[:, nl.ds(core * 32, 32)])


@nki.jit
def into_hbm(x):
    return _swap(x, lambda x, mine, core: mine, dst_buffer=nl.shared_hbm)


def _barrier(x, data_of):
    out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
    core = nl.program_id(0)
    t = nl.ndarray((128, 32), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[:, nl.ds(core * 32, 32)])
    nisa.core_barrier(data_of(t), (0, 1))  # mistake
    nisa.dma_copy(dst=out[:, nl.ds(core * 32, 32)], src=t)
    return out


@nki.jit
def barrier_on_a_tile(x):
    return _barrier(x, lambda t: t)


@nki.jit
def barrier_on_private_hbm(x):
    return _barrier(x, lambda t: nl.ndarray((128, 32), dtype=t.dtype, buffer=nl.private_hbm))
'''

MISUSES = {
    "to_a_third_core": "nisa.sendrecv: send_to_rank=2; its page: \"send_to_rank and recv_from_rank must be either 0 "
                       "or 1\"",
    "from_hbm": "nisa.sendrecv: src is x in DRAM; its page: \"Both src and dst tiles must be in SBUF\"",
    "into_hbm": "nisa.sendrecv: dst is theirs",
    "barrier_on_private_hbm": "nisa.core_barrier: data is each core's own HBM; its page: \"The data parameter ... must "
                              "be data in shared HBM that multiple cores are accessing\"",
}


@pytest.mark.parametrize("func", sorted(MISUSES))
def test_sendrecv_and_barrier_misuse_is_one_line_at_the_call(tmp_path, func):
    """A probe of multi-core mistakes: a rank beyond the two cores was an internal error; an HBM
    operand of sendrecv ("Both src and dst tiles must be in SBUF") and a barrier on each core's own
    HBM ("data in shared HBM that multiple cores are accessing") ran.  A barrier on a tile is not
    refused: nki-library's router_topk passes one in SBUF (test below)."""
    from neuronsim.machine.nki import load_kernel

    (tmp_path / "m.py").write_text(MISUSE)
    lines = MISUSE.splitlines()
    call = "nisa.core_barrier(" if func.startswith("barrier") else "nisa.sendrecv("
    line = next(k for k, text in enumerate(lines, 1) if call in text and "# mistake" in text)
    with pytest.raises(NkiError) as caught:
        trace(load_kernel(f"{tmp_path / 'm.py'}::{func}")[2], RNG.normal(size=(128, 64)).astype(np.float32),
              machine="trn2")
    text = str(caught.value)
    assert text.startswith(f"m.py:{line}: ") and MISUSES[func] in text and "\n" not in text, text


LNC = '''
import nki
import nki.isa as nisa
import nki.language as nl
import nki.lnc as lnc


@nki.jit
def swapped_through_lnc(x):
    """The two-core calls where NKI 0.7's pages put them (nki.lnc: sendrecv with dma_engine fifth and
    no pipe_id), each core keeping the larger of its half and the other's."""
    out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
    core = nl.program_id(0)
    mine = nl.ndarray((128, 32), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=mine, src=x[:, nl.ds(core * 32, 32)])
    theirs = nl.ndarray((128, 32), dtype=x.dtype, buffer=nl.sbuf)
    lnc.sendrecv(mine, theirs, 1 - core, 1 - core)
    nisa.tensor_tensor(dst=mine, data1=mine, data2=theirs, op=nl.maximum)
    nisa.dma_copy(dst=out[:, nl.ds(core * 32, 32)], src=mine)
    lnc.core_barrier(out, (0, 1))
    return out
'''


def test_the_two_core_calls_of_nki_lnc(tmp_path):
    """nki.lnc.sendrecv and nki.lnc.core_barrier (the nki.isa ones are "deprecated compatibility
    wrappers" on the page) were refused as not modelled."""
    from neuronsim.machine.nki import load_kernel

    (tmp_path / "l.py").write_text(LNC)
    x = RNG.normal(size=(128, 64)).astype(np.float32)
    out = run(load_kernel(f"{tmp_path / 'l.py'}::swapped_through_lnc")[2], x, machine="trn2")["return0"]
    both = np.maximum(x[:, :32], x[:, 32:])
    np.testing.assert_array_equal(out, np.concatenate([both, both], axis=1))


def test_a_barrier_on_a_tile_runs_as_nki_library_writes_it(tmp_path):
    from neuronsim.machine.nki import load_kernel

    (tmp_path / "m.py").write_text(MISUSE)
    x = RNG.normal(size=(128, 64)).astype(np.float32)
    out = run(load_kernel(f"{tmp_path / 'm.py'}::barrier_on_a_tile")[2], x, machine="trn2")["return0"]
    np.testing.assert_array_equal(out, x)


def test_each_core_keeps_its_own_load_of_the_same_bytes():
    """probe_as: ``load-elim`` took core 1's load of the bytes core 0 had loaded as a twin and
    dropped it, so core 1 read core 0's SBUF tile (each core has its own) and the run moved a
    quarter fewer DMA bytes."""
    from neuronsim.passes import run_pipeline
    from neuronsim.passes.load_elim import load_count

    x = RNG.normal(size=(128, 512)).astype(np.float32)
    program = trace(_two("both_load_the_same"), x).program
    assert load_count(program) == 2
    kept = run_pipeline(program, "load-elim")
    assert load_count(kept) == 2
    readers = {inst.extras["x-nki-core"]["rank"]: inst.reads[0].tensor
               for inst, _ in kept.instructions() if inst.op == "activation"}
    loaders = {inst.extras["x-nki-core"]["rank"]: inst.writes[0].tensor
               for inst, _ in kept.instructions() if inst.is_dma and inst.reads[0].tensor == "x"}
    assert readers == loaders and readers[0] != readers[1], (readers, loaders)
    out = run(_two("both_load_the_same"), x)["return0"]
    np.testing.assert_allclose(out, np.stack([np.exp(x), np.exp(x)]), rtol=1e-5)
