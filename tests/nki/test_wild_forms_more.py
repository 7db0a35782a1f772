"""Constructs of public kernels found by the fourth sweep of kernels nobody here wrote, each
traced, compiled, simulated and compared with numpy, or refused at its line
(tests/nki/kernels/wild_forms_more.py)."""

from __future__ import annotations

import numpy as np
import pytest

import neuronsim.verify.nki  # noqa: F401 - reads device values (the dynamic index) on the traced inputs
from neuronsim.machine.nki import NkiError, trace
from neuronsim.verify.nki.run import run_kernel
from neuronsim_tests.nki_kernels import f32, kernel, run


def test_unary_alu_operators_in_a_tensor_scalar_slot():
    x = np.abs(f32(128, 64)) + 0.5
    x[0, :4] = 0.0  # logical_not's ones; rsqrt's and reciprocal's infinities
    traced = trace(kernel("wild_forms_more.py::unary_alu"), x)
    engines = [inst.engine for inst, _ in traced.program.instructions() if inst.op == "tensor_scalar"]
    assert engines == ["pool", "dve", "dve"]  # rsqrt where the ISA's table runs it
    out = run(kernel("wild_forms_more.py::unary_alu"), x)["return0"]
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(out[0], 1 / np.sqrt(x), rtol=1e-6)
        np.testing.assert_allclose(out[1], 1 / x, rtol=1e-6)
    np.testing.assert_array_equal(out[2], (x == 0).astype(np.float32))


def test_rsqrt_on_the_vector_engine_is_refused_at_its_line():
    with pytest.raises(NkiError, match=r"wild_forms_more.py:\d+: .*rsqrt on GpSimd or the Scalar Engine"):
        trace(kernel("wild_forms_more.py::rsqrt_on_vector"), f32(128, 64))


def test_the_scalar_engine_reduce_registers_carry_across_activations():
    x = f32(128, 64)
    out = run(kernel("wild_forms_more.py::act_register_chain"), x)["return0"]
    np.testing.assert_allclose(out[:, 0], x[:, :32].sum(1), rtol=1e-5)
    np.testing.assert_allclose(out[:, 1], x.sum(1), rtol=1e-5)  # the second half on top of the first
    np.testing.assert_allclose(out[:, 2], 2 * x.sum(1), rtol=1e-5)  # on top of the registers' own sum
    np.testing.assert_allclose(out[:, 3], np.exp(x).sum(1) + x.sum(1), rtol=1e-5)  # reset, then two


def test_reduce_with_nothing_accumulated_is_refused_at_its_line():
    with pytest.raises(NkiError, match=r"wild_forms_more.py:\d+: .*reduce_cmd=reduce\) reads the engine's reduce"):
        trace(kernel("wild_forms_more.py::reduce_before_any"), f32(128, 64))


@pytest.mark.parametrize("form", ["pick_rows", "pick_rows_ds"])
def test_one_dynamic_index_selects_a_middle_coordinate(form):
    data = f32(128, 6, 32)
    idx = np.array([[4, 0, 4, 2]], np.int32)
    out = run(kernel(f"wild_forms_more.py::{form}"), data, idx)["return0"]
    np.testing.assert_array_equal(out, np.stack([data[:, k, :] for k in idx[0]]))


def test_psum_tiles_of_a_kept_loops_inner_loops_share_banks():
    x = f32(2, 5, 128, 1024)
    out = run(kernel("wild_forms_more.py::transposed_blocks"), x)["return0"]
    expected = x.reshape(2, 5, 128, 8, 128).transpose(0, 1, 4, 3, 2).reshape(2, 5, 128, 1024)
    np.testing.assert_array_equal(out, expected)


def test_a_loop_body_of_the_wrong_arity_is_refused_at_the_loop():
    with pytest.raises(NkiError, match=r"wild_forms_more.py:\d+: nl.fori_loop calls its body with 1 argument"):
        trace(kernel("wild_forms_more.py::fori_body_without_index"), f32(128, 64))


def test_a_reference_gets_only_the_arguments_it_names():
    x = f32(128, 64)
    outputs, report = run_kernel(kernel("wild_forms_more.py::scaled"), x, reference=lambda x: 3 * x, factor=3.0)
    assert not report.problems()
    np.testing.assert_allclose(outputs, 3 * x, rtol=1e-6)


def test_selects_by_one_element_tiles_and_per_partition_rows():
    x, hbm = f32(128, 16), f32(4, 128, 16, seed=1)
    idx, rows = np.array([[2]], np.uint32), np.arange(511, -1, -4, dtype=np.int32).reshape(128, 1)
    out = run(kernel("wild_forms_more.py::selects"), x, hbm, idx, rows)["return0"]
    np.testing.assert_array_equal(out[0], np.repeat(x[:, 2:3], 16, axis=1))
    np.testing.assert_array_equal(out[1], hbm[2])
    np.testing.assert_array_equal(out[2], hbm.reshape(512, 16)[rows[:, 0]])


def test_a_one_element_tile_index_drops_its_dimension_as_an_integer_does():
    cache = f32(6, 32, 2, 64)
    table = np.array([5, 0, 3], np.int32)
    out = run(kernel("wild_forms_more.py::paged_transposed"), cache, table)["return0"]
    np.testing.assert_array_equal(out, np.stack([cache[b, :, 1, :].T for b in table]))


def test_the_vector_engine_accumulator_carries_across_tensor_scalar_reduces():
    x = f32(128, 64)
    out = run(kernel("wild_forms_more.py::dve_register_chain"), x)["return0"]
    np.testing.assert_allclose(out[:, 0], 2 * x.sum(1), rtol=1e-5)
    np.testing.assert_allclose(out[:, 1], x.max(1) - 1, rtol=1e-6)
