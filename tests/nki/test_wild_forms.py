"""Constructs of public kernels nobody here wrote, each traced, compiled, simulated and compared
with numpy, or refused at its line (tests/nki/kernels/wild_forms.py, wild_forms_current.py)."""

from __future__ import annotations

import logging

import ml_dtypes
import math
from pathlib import Path

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, trace
from neuronsim.verify.nki.run import run_kernel
from neuronsim_tests.nki_kernels import KERNELS, f32, kernel, run


def test_where_keeps_a_number_beside_an_integer_condition():
    c = (np.random.default_rng(1).random((128, 64)) < 0.5).astype(np.uint8)
    x = f32(128, 64)
    out = run(kernel("wild_forms.py::where_number"), c, x)
    np.testing.assert_allclose(out["return0"], np.where(c, x, -5.0) + np.where(c, 2.0, x), rtol=1e-6)


def test_where_selects_without_arithmetic_on_the_other_branch():
    """A select, not ``c * x + (1 - c) * y``: an infinity on the branch not taken stays out."""
    c = np.eye(128, 64, dtype=np.uint8)
    x = np.full((128, 64), np.inf, np.float32)
    out = run(kernel("wild_forms.py::where_number"), c, x)
    # (c * x + (1 - c) * y would give 0 * inf = nan on every element)
    np.testing.assert_array_equal(out["return0"][c == 0], np.full((c == 0).sum(), np.inf, np.float32))
    np.testing.assert_array_equal(out["return0"][c == 1], np.full((c == 1).sum(), np.inf, np.float32))


def test_a_matmul_added_into_an_sbuf_tile_goes_through_psum():
    a, b, c = f32(128, 128), f32(128, 128, seed=1), f32(128, 128, seed=2)
    traced = trace(kernel("wild_forms.py::sbuf_plus_matmul"), a, b, c)
    ops = [inst.op for inst, _ in traced.program.instructions()]
    assert "matmul" in ops and "tensor_tensor" in ops
    out = run(kernel("wild_forms.py::sbuf_plus_matmul"), a, b, c)
    np.testing.assert_allclose(out["return0"], c + a.T @ b, rtol=1e-4, atol=1e-4)


def test_loop_reduce_in_an_affine_loop_is_no_finding():
    a = f32(4, 128, 64)
    outputs, report = run_kernel(kernel("wild_forms.py::loop_reduce_in_affine"), a, reference=lambda a: a.sum(0))
    assert not report.findings and not report.problems()
    np.testing.assert_allclose(outputs, a.sum(0), rtol=1e-5)


def test_loop_reduce_into_an_unwritten_tile_reduces_over_the_iterations():
    # the accumulators start from the op's identity (0 for add, -inf for max), set before the
    # loop; they used to start from whatever the memory held (an `uninitialised` warning)
    a = f32(4, 128, 64) - 2.0  # all negative: a max started from 0 would show
    want = np.stack([a.sum(0), a.max(0)])
    outputs, report = run_kernel(kernel("wild_forms.py::loop_reduce_uninitialised"), a, reference=lambda a: want)
    assert not report.findings and not report.problems(), (report.findings, report.problems())
    np.testing.assert_allclose(outputs, want, rtol=1e-5)


def test_a_return_inside_a_kept_loop_keeps_the_loop():
    a = f32(3, 128, 64)
    out = run(kernel("wild_forms.py::returns_inside_loop"), a)
    np.testing.assert_allclose(out["return0"], 2 * a, rtol=1e-6)


def test_a_legacy_body_ending_in_return_runs_every_iteration_when_unrolled():
    """The masked tail makes neuronsim unroll the loop; NKI still traces the body once and runs
    it for every tile, so the ``return`` ending the body returns after the loop."""
    x = f32(250, 64)
    out = run(kernel("wild_forms.py::returns_inside_masked_loop"), x)
    np.testing.assert_allclose(out["return0"], np.exp(x), rtol=1e-5)


def test_a_legacy_body_ending_in_break_runs_every_iteration_then_what_follows():
    x = f32(250, 64)
    out = run(kernel("wild_forms.py::breaks_at_the_end_of_a_masked_loop"), x)
    want = 2 * x
    want[:128] = x[:128]
    np.testing.assert_allclose(out["return0"], want, rtol=1e-6)


def test_an_early_return_inside_an_unrolled_legacy_body_is_refused_at_the_loop():
    source = (Path(KERNELS) / "wild_forms.py").read_text().splitlines()
    start = next(k for k, text in enumerate(source, 1) if "def returns_early_inside_a_masked_loop" in text)
    line = next(k for k, text in enumerate(source, 1) if k > start and "nl.affine_range" in text)
    with pytest.raises(NkiError, match="leaves this nl.affine_range loop by return or break in iteration 0 of 2") \
            as caught:
        trace(kernel("wild_forms.py::returns_early_inside_a_masked_loop"), f32(250, 64))
    assert caught.value.path.endswith(f"wild_forms.py:{line}"), caught.value


def test_the_logging_level_the_neuron_packages_add_is_there_while_importing_only():
    disabled = logging.root.manager.disable
    kernel("wild_forms.py::where_number")
    assert not hasattr(logging, "OFF") and logging.root.manager.disable == disabled


def test_current_api_shape_views():
    x, w = f32(128, 4, 6), f32(1, 24, seed=3)
    out = run(kernel("wild_forms_current.py::views"), x, w)
    expected = [x.transpose(0, 2, 1), np.broadcast_to(w, (8, 24)), x.reshape(128, 24), x.reshape(128, 4, 2, 3),
                x[:, 2], x[:, 1:4:2], x.reshape(128, 24), x.transpose(0, 2, 1)]
    for k, want in enumerate(expected):
        np.testing.assert_array_equal(out[f"return{k}"], want)


def test_rearrange_names_dimensions_as_einops_does():
    x = f32(128, 24)
    out = run(kernel("wild_forms_current.py::rearranged"), x)
    np.testing.assert_array_equal(out["return0"], x.reshape(128, 4, 6).transpose(0, 2, 1))
    np.testing.assert_array_equal(out["return1"], x.reshape(128, 2, 12))


@pytest.mark.parametrize("func, line_text, message", [
    ("returns_inside_unrolled_loop", "for _i in nl.affine_range(3)",
     "the kernel leaves this nl.affine_range loop by return or break in iteration 0 of 3"),
    ("sqrt_of_a_number", "nl.sqrt(64.0)", "nl.sqrt computes on a tile, not float 64.0"),
    ("loads_one_element", "nl.load(a[0, 1])", "nl.load of a single element"),
    ("mask_as_index", "t[nl.arange(64)", "a comparison of indices used as an index: pass it as the call's mask="),
    ("squeezes_a_long_dimension", "x.squeeze_dim(1)", "squeeze_dim(1): dimension 1 of x has size 4, not 1"),
    ("permutes_partitions", "t.permute((1, 0))", "the partition dimension of t_"),
    ("rearranges_partitions", "t.rearrange(('p', 'f'), ('f', 'p'))", "the partition dimension of t_"),
    ("merges_apart", "x.rearrange(('n', 'p', 'f')", "rearrange merging ('n', 'f'): "),
    ("loads_256_partitions", "nl.load(g[0:256])", "partition dimension 256 of an on-chip tile exceeds 128"),
    ("ap_offset_as_list", "t.ap([[64, 128]", ".ap(): offset is list, where the call takes a number"),
])
def test_mistakes_are_refused_at_their_line(func, line_text, message):
    source = (Path(KERNELS) / "wild_forms_current.py").read_text().splitlines()
    line = next(k for k, text in enumerate(source, 1) if line_text in text)
    with pytest.raises(NkiError) as caught:
        args = {"squeezes_a_long_dimension": (f32(128, 4, 6),), "loads_256_partitions": (f32(128, 256), f32(256)),
                "merges_apart": (f32(2, 128, 32),)}
        trace(kernel(f"wild_forms_current.py::{func}"), *args.get(func, (f32(128, 64),)))
    assert caught.value.path.endswith(f"wild_forms_current.py:{line}"), caught.value
    assert message in caught.value.message, caught.value.message


def test_a_reference_may_name_the_parameters_the_kernel_writes():
    a = f32(128, 64)
    outputs, report = run_kernel(kernel("wild_forms_current.py::writes_its_argument"), a, np.zeros_like(a),
                                 reference=lambda a, out: 2 * a + out)
    assert not report.problems(), report.problems()
    np.testing.assert_allclose(outputs, 2 * a, rtol=1e-6)


def test_raw_two_byte_records_are_the_callers_mistake_at_the_kernel():
    raw = np.ones((128, 64), np.float16).view("V2")  # bf16 saved by np.savez loads back so
    with pytest.raises(NkiError, match=r"argument a: dtype \|V2 is not supported .*ml_dtypes.bfloat16"):
        trace(kernel("wild_forms_current.py::writes_its_argument"), raw, np.zeros((128, 64), np.float32))


def test_where_of_a_comparison_of_indices():
    x = f32(128, 64)
    rows, cols = np.arange(128)[:, None], np.arange(64)[None, :]
    out = run(kernel("wild_forms.py::where_index_mask"), x)
    expected = np.where((rows < 100) & (cols >= 8), x, -1.0) + np.where(rows >= 120, 5.0, x)
    np.testing.assert_allclose(out["return0"], expected, rtol=1e-6)


def test_tile_equality_is_elementwise():
    a = np.round(f32(128, 64) * 2)
    b = np.round(f32(128, 64, seed=1) * 2)
    out = run(kernel("wild_forms.py::tile_equality"), a, b)
    np.testing.assert_array_equal(out["return0"], a * (a == b) + b * (a != 2.0))


def test_legacy_tensor_methods():
    x = f32(128, 64)
    out = run(kernel("wild_forms.py::legacy_tensor_methods"), x)
    np.testing.assert_allclose(out["return0"].astype(np.float32), (4 * x)[:, None, :], rtol=1e-2)


def test_rms_norm():
    x, w = f32(128, 256), f32(1, 256, seed=4)
    out = run(kernel("wild_forms.py::rms_norm"), x, w)
    np.testing.assert_allclose(out["return0"], x / np.sqrt((x * x).mean(1, keepdims=True) + 1e-6) * w, rtol=1e-5,
                               atol=1e-6)


def test_bitvec_operators_are_exact_on_integers():
    x = np.random.default_rng(5).integers(0, 2**32, (128, 64), dtype=np.uint64).astype(np.uint32)
    out = run(kernel("wild_forms.py::bits"), x)
    mixed = ((x & 0xFF) << 8) | (x >> 24)
    np.testing.assert_array_equal(out["return0"], mixed ^ ~x)
    np.testing.assert_array_equal(out["return1"], ((x & 0xFFFF) >> 4).astype(np.int32))


def test_erf_and_the_derivatives():
    x = f32(128, 64) * 3
    out = run(kernel("wild_forms.py::erf_family"), x)
    erf = np.vectorize(math.erf)
    gelu_dx = 0.5 * (1 + erf(x / math.sqrt(2))) + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(out["return0"], erf(x) + gelu_dx, rtol=1e-5, atol=1e-6)


def test_the_kernels_platform_target_picks_the_machine(monkeypatch):
    x = f32(128, 64)
    traced = trace(kernel("wild_forms_current.py::on_trn2"), x)
    assert traced.program.machine == "trn2"
    with pytest.raises(NkiError, match="SBUF"):  # the same tile on trn1 does not fit
        run(kernel("wild_forms_current.py::on_trn2"), x, machine="trn1")
    np.testing.assert_array_equal(run(kernel("wild_forms_current.py::version_branch"), x)["return0"], 2 * x)
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")  # the nki.jit page's other way
    np.testing.assert_array_equal(run(kernel("wild_forms_current.py::version_branch"), x)["return0"], 3 * x)
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "gen3")  # the page's generation name for trn2 (probe_ak)
    np.testing.assert_array_equal(run(kernel("wild_forms_current.py::version_branch"), x)["return0"], 3 * x)
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "gen2")
    assert trace(kernel("wild_forms_current.py::version_branch"), x).program.machine == "trn1"
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "gpu")
    with pytest.raises(NkiError, match="platform target 'gpu' is none of trn1, inf2, gen2, trn2, gen3, trn3, gen4") \
            as err:
        trace(kernel("wild_forms_current.py::version_branch"), x)
    assert err.value.path == "$NEURON_PLATFORM_TARGET_OVERRIDE"  # the variable's mistake, not the kernel's line


def test_a_comparison_of_indices_is_no_tile_operand():
    with pytest.raises(NkiError, match="a comparison of indices used as a tile operand: pass it as the call's mask="):
        trace(kernel("wild_forms_current.py::mask_as_operand"), f32(128, 64))


def test_the_two_e4m3_formats_are_apart():
    """nki-library's kernel_helpers keys FP8 maxima by nl.float8_e4m3 (240) and float8_e4m3fn (448)."""
    from neuronsim.machine.nki.dtypes import nl_dtypes

    names = nl_dtypes()
    assert names["float8_e4m3"].max == 240.0 and names["float8_e4m3fn"].max == 448.0
    assert len({names["float8_e4m3"]: 240.0, names["float8_e4m3fn"]: 448.0}) == 2


def test_an_infinite_reference_is_met_by_that_infinity_alone():
    a = f32(128, 64)
    _, report = run_kernel(kernel("wild_forms_current.py::writes_its_argument"), a, np.zeros_like(a),
                           reference=lambda a: np.full_like(a, np.inf))
    assert any("beyond" in p for p in report.problems()), report.problems()


def test_a_same_size_dtype_view_indexes():
    w = np.random.default_rng(6).integers(-100, 100, (128, 128), dtype=np.int64).astype(np.int8)
    out = run(kernel("wild_forms_current.py::fp8_view_slice"), w)
    want = w[0:128, 0:64].view(ml_dtypes.float8_e4m3).astype(np.float32)
    np.testing.assert_array_equal(out["return0"], want)


def test_the_docs_python_api_block_imports():
    block = (Path(KERNELS).parents[2] / "docs" / "nki.md").read_text().split("```python\n", 1)[1].split("```")[0]
    exec("\n".join(line for line in block.splitlines() if line.startswith(("from ", "import "))), {})


def test_isinstance_of_nt_tensor():
    # nt.tensor was an annotation object, no type: isinstance raised TypeError
    a = f32(128, 64)
    np.testing.assert_array_equal(run(kernel("wild_forms.py::checks_its_argument_type"), a)["return0"], a)


def test_nl_matmul_and_transpose_stage_a_psum_operand():
    # PE reads SBUF: the PSUM operand was refused; the compiler copies it to SBUF
    b, c = f32(128, 128), f32(128, 128)
    got = run(kernel("wild_forms.py::matmul_of_a_psum_result"), b, c)["return0"]
    product = b.astype(np.float64) @ c.T.astype(np.float64)
    np.testing.assert_allclose(got[0], product, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(got[1], product.T, rtol=1e-4, atol=1e-3)


def test_chained_block_indices_pick_the_block_the_comma_form_picks():
    # t[0][j][:, :] was refused: "index all 2 block dimensions"
    x = f32(2, 128, 64)
    np.testing.assert_array_equal(run(kernel("wild_forms.py::chained_block_index"), x)["return0"], 2 * x)
