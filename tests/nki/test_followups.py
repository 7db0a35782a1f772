"""Issue 28's remainders: ``with_schedule`` / ``depends_on`` order edges, ``run --report``, a
reshaped HBM view returned, bounds checked on the access, masks beyond one box, the keyword
forms of ``nl.dynamic_range`` (kernels in tests/nki/kernels/followups_*.py)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, trace
from neuronsim_tests.nki_kernels import KERNELS, f32, kernel, run

CURRENT = "followups_current.py::"
LEGACY = "followups_legacy.py::"


def _ops(traced) -> list[tuple[str, list[str]]]:
    """``(x-source call, [ops of the instructions it waits for])`` in program order."""
    insts = [inst for inst, _ in traced.program.instructions()]
    op_of = {inst.name: inst.op for inst in insts}
    return [(inst.op, [op_of[d.on] for d in inst.deps]) for inst in insts]


def _refusal_line(message: str, kernel_file: str) -> str:
    """The kernel source line an error names (asserting it names one, at the start)."""
    match = re.fullmatch(rf"\S*{re.escape(kernel_file)}:(\d+): .+", message)
    assert match, message
    return open(f"{KERNELS}/{kernel_file}").read().splitlines()[int(match.group(1)) - 1]


def test_with_schedule_orders_named_calls_in_kernel_order():
    x = f32(128, 64)
    assert _ops(trace(kernel(CURRENT + "named"), x))[2] == ("tensor_scalar", [])  # no edge without a schedule
    ops = _ops(trace(kernel(CURRENT + "forward"), x))
    assert ops[1:3] == [("activation", []), ("tensor_scalar", ["activation"])]
    np.testing.assert_allclose(run(kernel(CURRENT + "forward"), x)["return0"], np.exp(x) + x + 1.0, rtol=1e-5)


def test_with_schedule_moves_a_consumer_written_first_after_its_producer():
    x = f32(128, 64)
    ops = _ops(trace(kernel(CURRENT + "backward"), x))
    assert ops[1:3] == [("tensor_scalar", []), ("activation", ["tensor_scalar"])]
    np.testing.assert_allclose(run(kernel(CURRENT + "backward"), x)["return0"], np.exp(x) + x + 1.0, rtol=1e-5)


def test_depends_on_handles_chain_and_compose():
    x = f32(128, 64)
    ops = _ops(trace(kernel(CURRENT + "handles"), x))
    assert ops[1:4] == [("tensor_scalar", []), ("activation", ["tensor_scalar"]),
                        ("tensor_tensor", ["activation", "tensor_scalar"])]
    np.testing.assert_allclose(run(kernel(CURRENT + "handles"), x)["return0"], np.exp(x) + 2 * x, rtol=1e-5)


@pytest.mark.parametrize("func, words, source", [
    ("misspelled", "no traced nisa call is named 'frist' (did you mean 'first'?)", "with_schedule"),
    ("contradicting", "'load' cannot run after 'use'", "with_schedule"),
])
def test_schedule_edges_that_cannot_hold_are_refused_at_their_line(func, words, source):
    with pytest.raises(NkiError) as info:
        trace(kernel(CURRENT + func), f32(128, 64))
    assert words in str(info.value)
    assert source in _refusal_line(str(info.value), "followups_current.py")


@pytest.mark.parametrize("func, expected", [
    ("reshaped_return", lambda x: np.exp(x).reshape(64, 128)),
    ("reshaped_declared", lambda x: 3.0 * x),
])
def test_a_returned_reshaped_view_keeps_its_shape(func, expected):
    x = f32(128, 64)
    traced = trace(kernel(CURRENT + func), x)
    want = expected(x)
    assert traced.program.tensors["return0"].shape == want.shape
    out = run(kernel(CURRENT + func), x)["return0"]
    assert out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=1e-5)


def test_dynamic_range_by_keyword():
    x = f32(128, 64)
    np.testing.assert_allclose(run(kernel(CURRENT + "keyword_dynamic_range"), x)["return0"], x + 1.0, rtol=1e-6)


@pytest.mark.parametrize("func, keep, value, boxes", [
    ("triangle", lambda p, f: p + f < 100, np.exp, 64),  # a box per column, each from partition 0
    ("holes", lambda p, f: (f < 8) | ((f >= 40) & (f < 48)) | (f >= 60), lambda t: t, 3),
    ("upper_rows", lambda p, f: (f >= p) | (p >= 96), lambda t: 2 * t, 128),  # two boxes per column
])
def test_masks_beyond_one_box_equal_numpy(func, keep, value, boxes):
    x = f32(128, 64)
    traced = trace(kernel(LEGACY + func), x, np.zeros((128, 64), np.float32))
    stores = [i for i, _ in traced.program.instructions() if i.extras["x-source"]["call"] == "nl.store"]
    assert len(stores) == boxes
    out = run(kernel(LEGACY + func), x, np.zeros((128, 64), np.float32))["out"]
    kept = keep(*np.mgrid[0:128, 0:64])
    np.testing.assert_allclose(out[kept], value(x)[kept], rtol=1e-5)  # the rest: the output's initial bytes


@pytest.mark.parametrize("func, shape, value", [
    ("tail_rows", (300, 64), np.exp),  # x[k*128:(k+1)*128] past row 300, the mask keeps the rows inside
    ("tail_columns", (128, 100), lambda t: t),  # x[i_p, k*64 + i_f] past column 100, likewise
])
def test_views_past_the_tensor_with_accesses_inside_run(func, shape, value):
    x = f32(*shape)
    out = run(kernel(LEGACY + func), x, np.zeros(shape, np.float32))["out"]
    np.testing.assert_allclose(out, value(x), rtol=1e-5)


@pytest.mark.parametrize("func, shape, words", [
    ("rows_past_end", (100, 64), "reaches past its 100 elements along dimension 0"),
    ("columns_past_end", (128, 64), "reaches past its 64 elements along dimension 1"),  # no wrap into the next row
    ("masked_too_little", (100, 64), "positions 0 to 99 of its 110 are inside"),
])
def test_accesses_past_the_tensor_are_refused_at_the_kernel_line(func, shape, words):
    with pytest.raises(NkiError) as info:
        trace(kernel(LEGACY + func), f32(*shape), np.zeros(shape, np.float32))
    assert words in str(info.value)
    assert "nl.load" in _refusal_line(str(info.value), "followups_legacy.py")


def test_run_report_writes_the_page_with_the_findings(tmp_path):
    from click.testing import CliRunner

    from neuronsim.verify.cli import cli

    np.savez(tmp_path / "in.npz", x=f32(128, 2048), out=np.zeros((128, 4), np.float32))
    page = tmp_path / "run.html"
    example = str(KERNELS).replace("tests/nki/kernels", "examples/nki/row_sums.py")
    result = CliRunner().invoke(cli, ["run", f"{example}::running_sums", "--inputs", str(tmp_path / "in.npz"),
                                       "--out", str(tmp_path / "out"), "--report", str(page)])
    assert result.exit_code == 1, result.output  # the carried value is a finding
    html = page.read_text()
    assert "affine loop k carries a RAW dependence" in html and "row_sums.py:48" in html
    refused = CliRunner().invoke(cli, ["run", "add_chain", "--report", str(tmp_path / "s.html")])
    assert refused.exit_code == 2 and "--report is for kernels" in refused.output


def test_compiler_style_names_the_corpus_uses():
    # ncc.no_reorder() as a loop's directives= (attention tutorials), nki.isa.constants (nki-library)
    from neuronsim.machine.nki import standins

    with standins():
        import neuronxcc.nki.compiler as ncc
        from neuronxcc.nki.isa.constants import dge_mode as legacy_dge
        from nki.isa.constants import dge_mode

        assert dge_mode.swdge == legacy_dge.swdge == "swdge" and callable(ncc.no_reorder)
