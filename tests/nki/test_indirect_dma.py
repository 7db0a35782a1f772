"""Indirect DMA (machine/nki/indirect.py): a tile of row numbers as a DMA's index, read on the
traced inputs.  Outputs against numpy, the transfers emitted (one per run of evenly stepping
rows, with their concrete rows, software DGE on POOL), the indices recorded as a decision at the
kernel line, ``oob_mode`` (error at the line naming the index; skip drops rows), and the race
checker seeing the rows a scatter really writes."""

from __future__ import annotations

import numpy as np
import pytest

import neuronsim.verify.nki  # noqa: F401  (registers the device-value reader)
from neuronsim.machine.nki import NkiError, trace
from neuronsim.verify.nki.placement import identity_placement
from neuronsim.verify.racecheck import check_program
from neuronsim_tests.nki_kernels import KERNELS, f32, kernel, run

LEGACY = "indirect_legacy.py"
CURRENT = "indirect_current.py"


def _line(file: str, text: str) -> int:
    with open(f"{KERNELS}/{file}") as source:
        return next(n for n, line in enumerate(source, 1) if text in line)


def _rows(*values: int) -> np.ndarray:
    return np.array(values, np.int32).reshape(-1, 1)


def _transfers(traced, tensor: str) -> list:
    """The DMA instructions touching DRAM tensor ``tensor``, in program order."""
    return [inst for inst, _ in traced.program.instructions()
            if inst.op == "dma_copy" and any(a.tensor == tensor for a, _w in inst.accesses)]


def test_gather_of_scattered_rows_equals_numpy_one_transfer_per_run():
    data = f32(40, 16)
    rows = _rows(0, 2, 4, 6, 9, 9, 9, 1, 39, 20)  # runs: 0..6 step 2, 9 x3 (a read may repeat), 1 39, 20
    out = run(kernel(f"{LEGACY}::gather_rows"), data, rows)["return0"]
    np.testing.assert_array_equal(out, data[rows[:, 0]])
    traced = trace(kernel(f"{LEGACY}::gather_rows"), data, rows)
    gathers = _transfers(traced, "data")
    assert len(gathers) == 4
    assert {(g.engine, g.queue, g.attrs.get("dge")) for g in gathers} == {("pool", "dma2", "swdge")}
    first = gathers[0].reads[0]  # rows 0, 2, 4, 6: a row stride of two rows of 16 elements
    assert (first.offset or 0, first.pattern) == (0, ((32, 4), (1, 16)))
    assert [i.op for i, _ in traced.program.instructions()].count("dge_indices") == 1


def test_gather_records_the_indices_as_a_decision_at_the_kernel_line():
    rows = _rows(5, 3, 1)
    traced = trace(kernel(f"{LEGACY}::gather_rows"), f32(8, 4), rows)
    (decision,) = traced.program.extras["x-nki-decisions"]
    assert decision["line"] == _line(LEGACY, "picked = nl.load(data[row_tile[i_p, 0], i_f])")
    assert decision["value"] == [5, 3, 1] and "gathers rows of data" in decision["what"]


def test_scatter_writes_the_rows_the_indices_name():
    src, fill = f32(12, 8, seed=1), f32(30, 8, seed=2)
    rows = _rows(*np.random.default_rng(3).permutation(30)[:12])
    out = run(kernel(f"{LEGACY}::scatter_rows"), src, rows, fill)["return0"]
    expected = fill.copy()
    expected[rows[:, 0]] = src + 1
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_oob_skip_drops_the_rows_past_the_end():
    data = f32(64, 32)
    out = run(kernel(f"{LEGACY}::gather_odd_rows_skip"), data)["return0"]
    expected = np.full((32, 32), -1, np.float32)
    expected[:21] = data[3 * np.arange(21) + 1]  # 3k + 1 < 64 for k <= 20
    np.testing.assert_array_equal(out, expected)
    (decision,) = trace(kernel(f"{LEGACY}::gather_odd_rows_skip"), data).program.extras["x-nki-decisions"]
    assert "11 out of bounds, skipped" in decision["what"]


def test_oob_skip_keeps_what_of_a_row_lies_inside_the_tensor():
    """A row inside the dimension whose transfer runs past the tensor's end (two rows from the
    last) was refused by the program's bounds check; with skip, the part past the end is
    skipped and the destination keeps its zeros there (pave's bilinear gather of pixel pairs)."""
    img = f32(8, 4)
    out = run(kernel(f"{CURRENT}::gather_pixel_pairs_skip"), img, _rows(0, 3, 7))["return0"]
    expected = np.zeros((3, 8), np.float32)
    expected[0], expected[1], expected[2, :4] = img[0:2].reshape(-1), img[3:5].reshape(-1), img[7]
    np.testing.assert_array_equal(out, expected)


def test_oob_skip_keeps_each_run_of_a_row_that_lies_inside_the_tensor():
    """A row of two runs (it and the row two below) near the bottom: skip drops the run past the
    end and keeps the other (it dropped both: probe_bb, pave's 2x2 bilinear gather)."""
    img = f32(8, 4)
    out = run(kernel(f"{CURRENT}::gather_row_and_below_skip"), img, _rows(0, 5, 6, 7))["return0"]
    expected = np.zeros((4, 2, 4), np.float32)
    expected[0] = img[[0, 2]]
    expected[1] = img[[5, 7]]
    expected[2, 0], expected[3, 0] = img[6], img[7]  # rows 8 and 9 lie past the end
    np.testing.assert_array_equal(out, expected)


def test_oob_skip_keeps_the_elements_inside_of_a_run_walking_off_the_start():
    """A run with a last stride of -1 from row 0 walks off the tensor's start: skip keeps its one
    element inside (the run was dropped whole: probe_bd)."""
    img = f32(8, 4)
    rows = _rows(0, 1, 5)
    out = run(kernel(f"{CURRENT}::gather_rows_backwards_skip"), img, rows)["return0"]
    flat = img.reshape(-1)
    expected = np.array([[flat[r * 4 - j] if r * 4 - j >= 0 else 0.0 for j in range(4)] for r in rows[:, 0]],
                        np.float32)
    np.testing.assert_array_equal(out, expected)


def test_a_loads_legacy_mode_skip_holds_when_its_result_is_assigned():
    # nl.load(mode=...) was ignored: its result is emitted at the assignment, with the
    # assignment's options, and the rows past the end were an error
    data = f32(64, 32)
    out = run(kernel(f"{LEGACY}::load_odd_rows_mode_skip"), data)["return0"]
    expected = np.full((32, 32), -1, np.float32)
    expected[:21] = data[3 * np.arange(21) + 1]
    np.testing.assert_array_equal(out, expected)


def test_oob_error_names_the_index_at_the_dma_line():
    with pytest.raises(NkiError) as err:
        trace(kernel(f"{LEGACY}::gather_odd_rows_error"), f32(64, 32))
    line = _line(LEGACY, "# the out-of-bounds gather")
    message = str(err.value)
    assert message.startswith(f"tests/nki/kernels/{LEGACY}:{line}:") or f"{LEGACY}:{line}:" in message
    assert "index 64 (partition 21 of row_tile" in message and "outside the 64 rows of data" in message


@pytest.mark.parametrize("first_row, overlaps", [(16, True), (32, False)])
def test_race_checker_sees_the_rows_a_scatter_writes(first_row, overlaps):
    """A scatter (POOL's queue) and a plain store (SP's) with no order between them: a race on
    ``out`` exactly when the scattered rows meet rows 0..31 of the store."""
    rows = _rows(*range(first_row, first_row + 16))
    traced = trace(kernel(f"{LEGACY}::scatter_then_store"), f32(16, 8), rows, f32(32, 8, seed=1))
    program = identity_placement(traced.program)
    lines = {inst.name: inst.extras["x-source"]["line"] for inst, _ in program.instructions()}
    scatter, store = _line(LEGACY, "# the scatter"), _line(LEGACY, "# the plain store")
    races = {(lines[r.first], lines[r.second]) for r in check_program(program).races if r.memory == "dram"}
    assert ((scatter, store) in races) is overlaps


def test_current_api_vector_offset_gathers_and_scatters():
    data = f32(48, 24)
    rows, back = _rows(*range(47, 15, -2)), _rows(*range(0, 48, 3))  # 16 descending, 16 ascending
    out = run(kernel(f"{CURRENT}::gather_then_scatter"), data, rows, back)["return0"]
    expected = data.copy()
    expected[back[:, 0]] = data[rows[:, 0]] * 2
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    traced = trace(kernel(f"{CURRENT}::gather_then_scatter"), data, rows, back)
    assert len([d for d in _transfers(traced, "data") if d.queue == "dma2"]) == 16  # descending: a row each
    assert len([d for d in _transfers(traced, "return0") if d.queue == "dma2"]) == 1  # 0, 3, 6 ...: one run


def test_the_trace_validates_each_transfer_once(monkeypatch):
    """Reading each tile's indices validates the program traced so far; the final check of the
    traced program does not check those transfers again (each was checked twice: probe_bb's
    warp kernel of 243,000 transfers)."""
    import neuronsim.machine.formats.validate as validate

    rows = np.random.default_rng(5).permutation(256).astype(np.int32).reshape(-1, 1)  # a transfer a row, mostly
    table = f32(256, 8)
    np.testing.assert_array_equal(run(kernel(f"{CURRENT}::gather_tile_by_tile"), table, rows)["return0"],
                                  table[rows[:, 0]])
    checked = []
    original = validate.check_instruction
    monkeypatch.setattr(validate, "check_instruction", lambda inst, *a, **k: (checked.append(inst),
                                                                              original(inst, *a, **k))[1])
    traced = trace(kernel(f"{CURRENT}::gather_tile_by_tile"), table, rows)
    instructions = sum(1 for _ in traced.program.instructions())
    # besides each instruction once: each read's own copy of its index tile out of SBUF, and the
    # first attempt's few (its loop kept, then unrolled for the reads); twice each was 1.9x
    assert instructions > 150 and len(checked) < 1.2 * instructions
