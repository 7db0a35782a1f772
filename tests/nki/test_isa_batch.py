"""The search, shuffle, cumulative, predicated, partition-reduce, transposing-DMA and random
``nki.isa`` ops (both API generations), traced, compiled, simulated and compared with numpy
references written here from the API reference's descriptions.

Random ops cannot be compared element by element with any reference: their checks are the
range, the dtype, statistics of 65,536 draws (a mean within 0.01 of the distribution's, a
dropped fraction within 0.01 of the rate: several standard deviations) and determinism (the
same seed gives the same numbers; another seed, others).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, trace
from neuronsim_tests.nki_kernels import KERNELS, f32, kernel, run
from neuronsim_tests.nki_kit import line_of

NOT_FOUND = 2**32 - 1
FP32_MIN = np.finfo(np.float32).min


def _first_untaken(row: np.ndarray, vals: np.ndarray, order) -> list[int]:
    """For each slot of ``order`` in turn, the first position of its value in ``row`` that no
    earlier slot took (``NOT_FOUND`` if none)."""
    taken: set[int] = set()
    out = [NOT_FOUND] * len(vals)
    for j in order:
        pos = next((k for k, v in enumerate(row) if v == vals[j] and k not in taken), None)
        if pos is not None:
            out[j] = pos
            taken.add(pos)
    return out


def test_top8_values_indices_and_replacement_match_numpy():
    x = np.random.default_rng(0).integers(0, 20, (128, 40)).astype(np.float32)  # many ties
    out = run(kernel("isa_batch_search.py::top8"), x)
    expected_vals = -np.sort(-x, axis=1)[:, :8]
    np.testing.assert_array_equal(out["vals_out"], expected_vals)
    found = np.array([_first_untaken(r, v, range(8)) for r, v in zip(x, expected_vals)])
    matched = np.array([_first_untaken(r, v, range(7, -1, -1)) for r, v in zip(x, expected_vals)])
    np.testing.assert_array_equal(out["index_out"], found)
    np.testing.assert_array_equal(out["matched_out"], matched)
    assert out["index_out"].dtype == np.uint32
    replaced = x.copy()
    np.put_along_axis(replaced, matched.astype(np.int64), -1.0, axis=1)
    np.testing.assert_array_equal(out["replaced_out"], replaced)
    assert (np.sort(out["index_out"], 1) == np.sort(out["matched_out"], 1)).all()  # same places, paired apart


def test_duplicate_values_pair_as_the_api_reference_says():
    """The reference's own example: data [1, 2, 3, 4, 8 x7], vals [3, 8 x7]: match_replace8
    pairs the duplicates in descending order, find_index8 in ascending order."""
    data = np.array([[1, 2, 3, 4, 8, 8, 8, 8, 8, 8, 8]], np.float32)
    vals = np.array([[3, 8, 8, 8, 8, 8, 8, 8]], np.float32)
    out = run(kernel("isa_batch_search.py::given_values"), data, vals)
    assert out["matched_out"].tolist() == [[2, 10, 9, 8, 7, 6, 5, 4]]
    assert out["found_out"].tolist() == [[2, 4, 5, 6, 7, 8, 9, 10]]


def test_a_value_not_in_the_row_gets_all_ones():
    data = np.arange(16, dtype=np.float32)[None, :].repeat(4, 0)
    vals = np.array([[3, 99, 5, 3, 0, 1, 2, 4]] * 4, np.float32)
    out = run(kernel("isa_batch_search.py::given_values"), data, vals)
    assert out["found_out"][0].tolist() == [3, NOT_FOUND, 5, NOT_FOUND, 0, 1, 2, 4]


def test_stream_shuffle_moves_partitions_within_each_quadrant():
    x = f32(128, 8)
    mask = [(i + 3) % 32 for i in range(31)] + [255]
    out = run(kernel("isa_batch_search.py::shuffle"), x, mask)["out"]
    expected = np.full_like(x, -7.0)
    for dst in range(128):
        quadrant, lane = divmod(dst, 32)
        if mask[lane] != 255:
            expected[dst] = x[quadrant * 32 + mask[lane]]
    np.testing.assert_array_equal(out, expected)


def test_partition_reduce_and_on_chip_dma_transpose():
    x = f32(64, 32, seed=1)
    traced = trace(kernel("isa_batch_search.py::across_partitions"), x)
    ops = {(i.op, i.engine) for i, _ in traced.program.instructions()}
    assert {("tensor_partition_reduce", "pool"), ("dma_transpose", "sp")} <= ops
    out = run(kernel("isa_batch_search.py::across_partitions"), x)
    np.testing.assert_allclose(out["sums_out"], x.sum(0, keepdims=True), atol=1e-5)
    np.testing.assert_array_equal(out["maxima_out"], x.max(0, keepdims=True))
    np.testing.assert_array_equal(out["flipped_out"], x.T)


def test_one_partition_float_tiles_broadcast_along_partitions_on_pe():
    x, row, one, column = f32(96, 24, seed=10), f32(1, 24, seed=11), f32(1, 1, seed=12), f32(96, 1, seed=13)
    spec = "isa_batch_search.py::partition_broadcast"
    instrs = [i for i, _ in trace(kernel(spec), x, row, one, column).program.instructions()]
    broadcasts = [i for i in instrs if i.op == "matmul"]
    ones = {i.writes[0].tensor for i in instrs if i.op == "memset" and i.engine == "pool"}
    # three rows spread (``row`` twice, ``one`` once): each a ones row on PE, none by shuffles
    assert len(broadcasts) == 3 and {i.reads[0].tensor for i in broadcasts} == ones and len(ones) == 3
    assert not [i for i in instrs if i.op == "nc_stream_shuffle"]
    out = run(kernel(spec), x, row, one, column)
    np.testing.assert_array_equal(out["summed_out"], x + row)
    np.testing.assert_array_equal(out["scaled_out"], x * one)
    np.testing.assert_array_equal(out["outer_out"], column - row)


def test_a_wide_row_is_broadcast_one_psum_bank_at_a_time():
    x, row = f32(128, 1200, seed=15), f32(1, 1200, seed=16)
    spec = "isa_batch_search.py::partition_broadcast"
    one, column = f32(1, 1, seed=17), f32(128, 1, seed=18)
    program = trace(kernel(spec), x, row, one, column).program
    matmuls = [i for i, _ in program.instructions() if i.op == "matmul"]
    widths = sorted(program.tensors[i.writes[0].tensor].shape[-1] for i in matmuls)
    assert widths == [1, 176, 176, 512, 512, 512, 512]  # 1200 columns: 512 + 512 + 176, twice; ``one``'s column
    out = run(kernel(spec), x, row, one, column)
    np.testing.assert_array_equal(out["summed_out"], x + row)
    np.testing.assert_array_equal(out["outer_out"], column - row)


def test_integer_rows_broadcast_by_quadrant_shuffles():
    rng = np.random.default_rng(19)
    x, row = rng.integers(-2**20, 2**20, (96, 16), dtype=np.int32), rng.integers(-2**20, 2**20, (1, 16), dtype=np.int32)
    spec = "isa_batch_search.py::integer_partition_broadcast"
    shuffles = [i for i, _ in trace(kernel(spec), x, row).program.instructions() if i.op == "nc_stream_shuffle"]
    # 96 partitions: 3 quadrants
    assert len(shuffles) == 3 and {i.attrs["mask"] == [0] * 32 for i in shuffles} == {True}
    np.testing.assert_array_equal(run(kernel(spec), x, row)["return0"], x + row)


def test_a_row_in_psum_broadcasts_by_quadrant_shuffles():
    x, a, b = f32(64, 32, seed=20), f32(16, 1, seed=21), f32(16, 32, seed=22)
    spec = "isa_batch_search.py::psum_row_broadcast"
    instrs = [i for i, _ in trace(kernel(spec), x, a, b).program.instructions()]
    assert [i.op for i in instrs].count("nc_stream_shuffle") == 2 and [i.op for i in instrs].count("matmul") == 1
    np.testing.assert_allclose(run(kernel(spec), x, a, b)["return0"], x + a.T @ b, rtol=1e-5, atol=1e-5)


def test_broadcast_to_of_a_strided_row_reaches_every_partition():
    x = f32(4, 64, seed=14)
    out = run(kernel("isa_batch_search.py::strided_row_broadcast"), x)["return0"]
    np.testing.assert_array_equal(out, np.broadcast_to(x[0, ::2], (128, 32)))


def test_iota_over_a_multi_level_pattern():
    out = run(kernel("isa_batch_search.py::patterned_iota"))
    i0, i1 = np.divmod(np.arange(6), 3)
    np.testing.assert_array_equal(out["out"], 5 + 100 * np.arange(4)[:, None] + 10 * i0 + i1)
    np.testing.assert_array_equal(out["repeats"], np.broadcast_to(7 * i1, (4, 6)))


def test_sequence_bounds_and_nonzero_with_count_on_the_references_examples():
    ids = np.array([[0, 1, 1, 2, 2, 2, 0, 3, 3]], np.int32)  # the API reference's examples
    flags = np.zeros((32, 8), np.int32)
    flags[0] = [0, 1, 1, 0, 0, 1, 0, 0]
    flags[16] = [2, 0, 0, 0, 0, 0, 0, 7]
    flags[5] = 1  # not a GpSimd core's first partition: not scanned
    out = run(kernel("isa_batch_search.py::gpsimd_scans"), ids, flags)
    assert out["bounds_out"].tolist() == [[[9, 1, 1, 3, 3, 3, 9, 7, 7], [-1, 3, 3, 6, 6, 6, -1, 9, 9]]]
    found = out["found_out"]
    assert found[0].tolist() == [17, 18, 21, -1, -1, -1, -1, -1, 3]
    assert found[16].tolist() == [16, 23, -1, -1, -1, -1, -1, -1, 2]
    assert (np.delete(found, [0, 16], axis=0) == -9).all()


def test_language_reductions_over_the_partition_axis():
    x = f32(96, 40, seed=16)
    out = run(kernel("isa_batch_search.py::column_stats"), x)["out"]
    np.testing.assert_allclose(out, np.stack([x.sum(0), x.max(0), x.mean(0)]), atol=1e-5)


def test_per_partition_gathers_by_index_tile():
    x = f32(64, 4, 8, seed=17)  # two free dimensions, flattened for the indices
    idx = np.random.default_rng(18).integers(0, 32, (64, 12)).astype(np.uint32)
    out = run(kernel("isa_batch_search.py::gathers"), x, idx)
    expected = np.take_along_axis(x.reshape(64, 32), idx.astype(np.int64), axis=1)
    np.testing.assert_array_equal(out["picked_out"], expected)
    np.testing.assert_array_equal(out["flat_out"], expected)


def test_cumulative_reset_load_and_chained_reduce():
    rng = np.random.default_rng(2)
    x, scale = f32(128, 64, seed=2), rng.uniform(0.5, 2, (128, 1)).astype(np.float32)
    out = run(kernel("isa_batch_select.py::running"), x, scale)
    np.testing.assert_allclose(out["sums_out"], np.cumsum(x * scale, axis=1), atol=1e-5)
    np.testing.assert_array_equal(out["peaks_out"], np.maximum.accumulate(np.maximum(x, 0.5), axis=1))
    np.testing.assert_allclose(out["chained_out"], np.cumsum(x, axis=1) + x.sum(1, keepdims=True), atol=1e-5)


@pytest.mark.parametrize("func, words", [
    ("window_on_trn1", "nisa.range_select: available on NeuronCore-v3 and newer only (its page), not NeuronCore-v2"),
    ("window_filled_otherwise", "nisa.range_select(on_false_value=-5.0): its page says it must be FP32_MIN"),
])
def test_range_select_as_its_page_limits_it(func, words):
    """Both ran (a helper's sweep): on trn1, and filling with -5.0 where the page allows FP32_MIN only."""
    x, lo, hi = f32(8, 16), np.zeros((8, 1), np.float32), np.full((8, 1), 4, np.float32)
    with pytest.raises(NkiError) as info:
        trace(kernel(f"isa_batch_select.py::{func}"), x, lo, hi)
    call = line_of(Path(KERNELS, "isa_batch_select.py"), f"def {func}(") + 3  # the docstring, the tile, the call
    assert words in info.value.message and info.value.path.endswith(f"isa_batch_select.py:{call}")


def test_range_select_keeps_the_window_and_chains_its_maximum():
    rng = np.random.default_rng(3)
    x = f32(128, 64, seed=3)
    lo = rng.integers(0, 40, (128, 1)).astype(np.float32)
    hi = lo + rng.integers(1, 64, (128, 1)).astype(np.float32)
    out = run(kernel("isa_batch_select.py::windows"), x, lo, hi)
    column = np.arange(64)[None, :]
    first, second = (column >= lo) & (column < hi), (column + 64 >= lo) & (column + 64 < hi)
    np.testing.assert_array_equal(out["kept_out"], np.where(first, x, FP32_MIN))
    top = np.maximum(np.where(first, x, FP32_MIN).max(1), np.where(second, x + 1, FP32_MIN).max(1))
    np.testing.assert_allclose(out["top_out"][:, 0], top)
    assert second.any() and (top > FP32_MIN).all()  # the second call's columns count, every row kept one


def test_predicated_selects_and_copies():
    x, y = f32(128, 64, seed=4), f32(128, 64, seed=5)
    pred = np.random.default_rng(6).integers(0, 2, (128, 64)).astype(np.uint8)
    out = run(kernel("isa_batch_select.py::predicated"), x, y, pred)
    picked = np.where(pred != 0, x, -5.0)
    np.testing.assert_array_equal(out["picked_out"], picked)
    np.testing.assert_array_equal(out["top_out"][:, 0], picked.max(1))
    np.testing.assert_array_equal(out["reversed_out"], np.where(pred == 0, x, np.arange(128.0)[:, None]))
    np.testing.assert_array_equal(out["copied_out"], np.where(pred != 0, x, y))
    np.testing.assert_array_equal(out["filled_out"], np.where(pred != 0, 9.0, y))


def test_abs_as_an_alu_operator():
    x = f32(128, 64, seed=15)
    out = run(kernel("isa_batch_select.py::absolute_max"), x)
    np.testing.assert_array_equal(out["magnitudes_out"], np.abs(x))
    np.testing.assert_array_equal(out["peak_out"][:, 0], np.abs(x).max(1))


def _draws(seed: int) -> dict[str, np.ndarray]:
    return run(kernel("isa_batch_random.py::draws"), f32(128, 512, seed=7), np.array([[seed]], np.uint32))


def test_random_ops_range_statistics_and_determinism():
    out, again, other = _draws(7), _draws(7), _draws(8)
    uniform, bits, ranged = out["uniform_out"], out["bits_out"], out["ranged_out"]
    assert 0.0 <= uniform.min() and uniform.max() < 1.0 and abs(uniform.mean() - 0.5) < 0.01
    assert bits.dtype == np.uint16 and abs(bits.astype(np.float64).mean() / 65535 - 0.5) < 0.01
    assert len(np.unique(bits)) > 30000  # the low 16 of 32 random bits, not a scaled float
    assert -2.0 <= ranged.min() and ranged.max() < 3.0 and abs(ranged.mean() - 0.5) < 0.05
    data = f32(128, 512, seed=7)
    for name, rate in (("dropped_out", 0.3), ("halved_out", 0.5)):
        kept = out[name] != 0
        assert abs(1 - kept.mean() - rate) < 0.01, name
        np.testing.assert_array_equal(out[name][kept], data[kept])
    assert all(np.array_equal(out[k], again[k]) for k in out)
    assert not np.array_equal(out["uniform_out"], other["uniform_out"])


def test_legacy_forms_return_their_results():
    x = f32(64, 16, seed=8)
    zeros = (np.zeros((64, 8), np.float32), np.zeros((64, 8), np.uint32), np.zeros((64, 16), np.float32),
             np.zeros((1, 16), np.float32))
    out = run(kernel("isa_batch_legacy.py::legacy_search"), x, *zeros)
    vals = -np.sort(-x, axis=1)[:, :8]
    np.testing.assert_array_equal(out["out_vals"], vals)
    np.testing.assert_array_equal(out["out_index"], np.argsort(-x, axis=1, kind="stable")[:, :8])
    np.testing.assert_array_equal(out["out_replaced"], np.where(x >= vals[:, 7:8], 0.0, x))
    np.testing.assert_allclose(out["out_sums"], x.sum(0, keepdims=True), atol=1e-5)
    top = run(kernel("isa_batch_legacy.py::legacy_rand_top"), np.zeros((32, 8), np.float32))["out_vals"]
    assert (np.diff(top, axis=1) <= 0).all() and 0.9 < top.min() and top.max() < 1.0


def test_legacy_dst_forms_and_a_certain_dropout():
    x = f32(32, 16, seed=9)
    lo, hi = np.full((32, 1), 2, np.float32), np.full((32, 1), 9, np.float32)
    out = run(kernel("isa_batch_legacy.py::legacy_select"), x, lo, hi, *[np.zeros((32, 16), np.float32)] * 4)
    column = np.arange(16)[None, :]
    np.testing.assert_array_equal(out["out_kept"], np.where((column >= 2) & (column < 9), x, FP32_MIN))
    np.testing.assert_array_equal(out["out_rolled"], x[[(i + 1) % 32 for i in range(32)]])
    np.testing.assert_allclose(out["out_sums"], np.cumsum(x, axis=1), atol=1e-5)
    np.testing.assert_array_equal(out["out_dropped"], np.zeros_like(x))  # probability 1 drops all


@pytest.mark.parametrize("spec, needle, message", [
    ("isa_batch_search.py::short_mask", "shuffle_mask=list(range(31))", "shuffle_mask is 32 source partitions"),
    ("isa_batch_select.py::continues_nothing", "dst=sums, src=data, op0=nl.add",
     "reduce_cmd=reduce) reads the engine's reduce registers, and nothing in the kernel set them before it"),
])
def test_misuse_is_one_line_at_the_kernel_line(spec, needle, message):
    path = Path(KERNELS, spec.split("::")[0])
    with pytest.raises(NkiError) as info:
        trace(kernel(spec), f32(32, 16))
    text = str(info.value)
    assert "\n" not in text and message in text, text
    assert text.startswith(f"tests/nki/kernels/{path.name}:"), text
    assert int(text.split(":")[1]) == line_of(path, needle)  # the call's (first) line
