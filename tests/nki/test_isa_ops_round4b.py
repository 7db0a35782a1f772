"""ISA forms the public corpus uses (issue 28): ``nisa.dma_copy(dst_rmw_op=np.add)`` (the
destination read and written: ``dma_accumulate``), ``nisa.local_gather`` (eight GpSimd cores of
16 partitions, each with its own indices), ``nisa.dma_transpose`` of a 4-D on-chip access
pattern and of rows gathered by a tile of indices from HBM or from an SBUF tile.  References
are written from the API pages' text."""

from __future__ import annotations

import numpy as np
import pytest

import neuronsim.verify.nki  # noqa: F401  (registers the device-value reader)
from neuronsim.machine.nki import NkiError, trace
from neuronsim.verify.nki.placement import identity_placement
from neuronsim.verify.racecheck import check_program
from neuronsim_tests.nki_kernels import f32, kernel, run

LEGACY = "isa_round4b_legacy.py"
CURRENT = "isa_round4b_current.py"


def _ops(traced, op: str) -> list:
    return [inst for inst, _ in traced.program.instructions() if inst.op == op]


def _rows(*values: int, dtype=np.int32) -> np.ndarray:
    return np.array(values, dtype).reshape(-1, 1)


def test_scatter_add_adds_onto_the_indexed_rows_only():
    src, base = f32(6, 16), f32(20, 16, seed=1)
    rows = _rows(19, 0, 7, 9, 11, 2)  # runs: 19 / 0 / 7 9 11 / 2
    out = run(kernel(f"{LEGACY}::scatter_add_rows"), src, rows, base)["return0"]
    expected = base.copy()
    expected[rows[:, 0]] += src
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    adds = _ops(trace(kernel(f"{LEGACY}::scatter_add_rows"), src, rows, base), "dma_accumulate")
    assert len(adds) == 4 and {(a.engine, a.queue, a.attrs["dge"], a.attrs["op"]) for a in adds} == {
        ("pool", "dma2", "swdge", "add")}


def test_read_modify_write_reads_its_destination():
    """The accumulate's reads hold the destination access itself: what wrote it first is a flow
    dependence (not a write the next write may kill), and the sum needs it."""
    src, base = f32(32, 8), f32(32, 8, seed=2)
    out = run(kernel(f"{LEGACY}::add_in_place"), src, base)["return0"]
    np.testing.assert_allclose(out, base + src, rtol=1e-6)
    (add,) = _ops(trace(kernel(f"{LEGACY}::add_in_place"), src, base), "dma_accumulate")
    assert add.reads[1] == add.writes[0] and add.writes[0].tensor == "return0"


def test_read_modify_write_unordered_after_a_store_is_a_race():
    """Without deps the store of ``base`` and the accumulate onto it race (the checker sees the
    accumulate's bytes); the compiled program orders them."""
    traced = trace(kernel(f"{LEGACY}::add_in_place"), f32(32, 8), f32(32, 8, seed=2))
    program = identity_placement(traced.program)
    ops = {inst.name: inst.op for inst, _ in program.instructions()}
    racing = {(ops[r.first], ops[r.second]) for r in check_program(program).races if r.memory == "dram"}
    assert ("dma_copy", "dma_accumulate") in racing or ("dma_accumulate", "dma_copy") in racing


def _local_gather(data: np.ndarray, index: np.ndarray, k: int, valid: int) -> np.ndarray:
    """The local_gather page: per 16 partitions, the index elements partition first are element
    offsets into each partition's own row, ``k`` elements from each."""
    rows = data.reshape(data.shape[0], -1)
    out = np.empty((rows.shape[0], valid * k), rows.dtype)
    for first in range(0, rows.shape[0], 16):
        offsets = index[first:first + 16].T.ravel()[:valid].astype(np.int64)
        out[first:first + 16] = rows[first:first + 16][:, (offsets[:, None] + np.arange(k)).ravel()]
    return out


def test_local_gather_legacy_with_valid_count_and_elements_per_index():
    data = f32(128, 64)
    index = np.random.default_rng(4).integers(0, 63, (128, 4)).astype(np.uint16)
    out = run(kernel(f"{LEGACY}::local_gather_legacy"), data, index)["return0"]
    np.testing.assert_array_equal(out, _local_gather(data, index, 2, 48))
    (gather,) = _ops(trace(kernel(f"{LEGACY}::local_gather_legacy"), data, index), "local_gather")
    assert gather.engine == "pool" and dict(gather.attrs) == {"elements": 2, "valid": 48}


def test_local_gather_current_api_defaults():
    data = f32(32, 40)
    index = np.random.default_rng(5).integers(0, 40, (32, 2)).astype(np.uint16)
    out = run(kernel(f"{CURRENT}::local_gather_current"), data, index)["return0"]
    np.testing.assert_array_equal(out, _local_gather(data, index, 1, 32))


def test_local_gather_refuses_a_partition_count_not_a_multiple_of_16():
    with pytest.raises(NkiError, match="a multiple of 16"):
        trace(kernel(f"{CURRENT}::local_gather_current"), f32(24, 8), np.zeros((24, 1), np.uint16))


def test_dma_transpose_of_a_4d_on_chip_pattern():
    x = f32(6, 1, 3, 16)
    out = run(kernel(f"{CURRENT}::transpose_4d_on_chip"), x)["return0"]
    np.testing.assert_array_equal(out, np.transpose(x, (3, 1, 2, 0)))
    (flip,) = _ops(trace(kernel(f"{CURRENT}::transpose_4d_on_chip"), x), "dma_transpose")
    assert list(flip.attrs["axes"]) == [3, 1, 2, 0] and list(flip.attrs["shape"]) == [6, 1, 3, 16]


@pytest.mark.parametrize("func", ["gather_transpose_hbm", "gather_transpose_sbuf"])
def test_gathered_rows_transposed_equal_numpy(func):
    src = np.random.default_rng(6).integers(0, 1000, (48, 3, 32)).astype(np.uint16)
    rows = _rows(5, 7, 9, 40, 40, 2, 0, 47, 13, 14, 15, 16, 30, 31, 1, 3, dtype=np.uint32)
    out = run(kernel(f"{LEGACY}::{func}"), src, rows)["return0"]
    np.testing.assert_array_equal(out, np.transpose(src[rows[:, 0]], (2, 1, 0)))
    traced = trace(kernel(f"{LEGACY}::{func}"), src, rows)
    assert len(_ops(traced, "dge_indices")) == 1 and traced.program.extras["x-nki-decisions"]


def test_gathered_partitions_read_only_the_picked_rows():
    """An SBUF gather transpose reads the partitions its indices name (16 .. 31: one run, one
    transfer), not the whole tile."""
    src = np.zeros((48, 3, 32), np.uint16)
    traced = trace(kernel(f"{LEGACY}::gather_transpose_sbuf"), src, _rows(*range(16, 32), dtype=np.uint32))
    flips = _ops(traced, "dma_transpose")
    assert len(flips) == 1 and flips[0].reads[0].partitions == (16, 16, 1)


def test_device_value_reads_resume_from_the_last_and_agree_with_a_full_run(monkeypatch):
    """Each read runs only what was traced since the last (verify/nki/probe.py); the values it
    sees are those of running the whole prefix again."""
    from neuronsim.verify.nki import probe

    data, rows = f32(16, 8), _rows(0, 3, 5, 2)
    extends, resumes = probe._extends, []
    monkeypatch.setattr(probe, "_extends", lambda *a: resumes.append(extends(*a)) or resumes[-1])
    resumed = trace(kernel(f"{LEGACY}::shifting_gathers"), data, rows).program.extras["x-nki-decisions"]
    assert resumes.count(True) == 3  # the first read of the trace runs from the start
    monkeypatch.setattr(probe, "_extends", lambda *_a: False)
    full = trace(kernel(f"{LEGACY}::shifting_gathers"), data, rows).program.extras["x-nki-decisions"]
    assert [d["value"] for d in resumed] == [d["value"] for d in full] == [
        [1 + k + r for r in (0, 3, 5, 2)] for k in range(4)]
    out = run(kernel(f"{LEGACY}::shifting_gathers"), data, rows)["return0"]
    np.testing.assert_array_equal(out, np.stack([data[rows[:, 0] + 1 + k] for k in range(4)]))


def test_double_row_matmul_contracts_both_rows_at_half_the_cycles():
    """matmul_perf_mode.double_row: [K, 2, M] x [K, 2, N] into one [M, N] bank (2 KiB of fp32
    a partition for N = 512), at the cost of one pass of N columns (two rows a pass)."""
    from neuronsim.machine.model.cost import instruction_cost
    from neuronsim.machine.model.presets import resolve_machine

    rng = np.random.default_rng(7)
    a, b = rng.integers(0, 4, (128, 2, 64)).astype(np.float32), rng.integers(0, 4, (128, 2, 512)).astype(np.float32)
    out = run(kernel(f"{CURRENT}::double_row_matmul"), a, b, machine="trn2")["return0"]
    np.testing.assert_array_equal(out, np.einsum("klm,kln->mn", a, b))
    traced = trace(kernel(f"{CURRENT}::double_row_matmul"), a, b, machine="trn2")
    (mm,) = _ops(traced, "matmul")
    assert mm.attrs["double_row"] is True
    cost = instruction_cost(mm, traced.program.tensors, resolve_machine("trn2"))
    assert cost.cycles == 512  # max(min(64, M), N) of the halves, where the two rows apart cost 1024


def test_a_number_into_one_partition_off_a_quadrant_boundary_is_a_window_select():
    """No partition base lets a compute access start at partition 5: the write covers the
    quadrant's 32 partitions (an affine_select on POOL keeping the others), and allocates."""
    x = f32(40, 8)
    out = run(kernel(f"{LEGACY}::set_single_partitions"), x)["return0"]
    expected = x.copy()
    expected[5, 3], expected[37, 0:4] = 7.0, -1.0
    np.testing.assert_array_equal(out, expected)
    selects = _ops(trace(kernel(f"{LEGACY}::set_single_partitions"), x), "affine_select")
    assert [s.writes[0].partitions for s in selects] == [(0, 32, 1), (32, 8, 1)]
    assert [s.attrs["offset"] for s in selects] == [-5, -5] and all(s.engine == "pool" for s in selects)


def test_read_modify_write_with_oob_skip_is_an_error_at_its_line():
    with pytest.raises(NkiError, match=r"isa_round4b_legacy\.py:\d+: .*dst_rmw_op allows only oob_mode"):
        trace(kernel(f"{LEGACY}::scatter_add_skip"), f32(4, 8), _rows(0, 1, 2, 3), f32(8, 8))


def test_gather_transpose_by_vector_offset_current_api():
    """The page's indirect transpose written with .ap(vector_offset=, indirect_dim=0)."""
    src = np.random.default_rng(8).integers(0, 999, (40, 16)).astype(np.float16)
    rows = _rows(3, 5, 7, 9, 0, 39, 20, 21, 22, 23, 1, 1, 2, 30, 31, 8, dtype=np.uint32)
    out = run(kernel(f"{CURRENT}::gather_transpose_vector_offset"), src, rows)["return0"]
    np.testing.assert_array_equal(out, src[rows[:, 0]].T)


def test_gather_transpose_reads_a_tile_of_index_columns_column_after_column():
    """The page's 2-D indices (its flat_indices = indices.T.flatten()[:src.shape[0]]); they were
    refused, and a plain gather still refuses them, at its line."""
    src = np.random.default_rng(9).integers(0, 999, (40, 16)).astype(np.float16)
    rows = np.random.default_rng(10).integers(0, 40, (16, 3)).astype(np.uint32)
    out = run(kernel(f"{CURRENT}::gather_transpose_columns"), src, rows)["return0"]
    np.testing.assert_array_equal(out, src[rows.T.reshape(-1)[:45]].T)
    with pytest.raises(NkiError, match=r"isa_round4b_current\.py:\d+: .*shape \(16, 3\) in a gather or scatter"):
        trace(kernel(f"{CURRENT}::gather_columns_by_copy"), src, rows)
