"""Constructs that blocked public kernels of the corpus run (issue 28), each on a kernel of our
own (tests/nki/kernels/corpus_causes*.py): outputs against a numpy reference, or the refusal
line at the kernel's file:line."""

from __future__ import annotations

import os

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, load_kernel
from neuronsim_tests.nki_kernels import KERNELS, f32, kernel, run


def _line(file: str, text: str) -> int:
    with open(os.path.join(KERNELS, file)) as source:
        return next(n for n, line in enumerate(source, 1) if text in line)


def test_a_kernel_file_failing_at_import_is_refused_at_its_line_not_an_internal_error():
    with pytest.raises(NkiError) as err:
        load_kernel(os.path.join(KERNELS, "corpus_causes_import_error.py::copy"))
    where = _line("corpus_causes_import_error.py", "Platforms.TRN2")
    assert str(err.value).startswith(f"tests/nki/kernels/corpus_causes_import_error.py:{where}: ")
    assert "importing the kernel: NameError: name 'Platforms' is not defined" in str(err.value)


def test_dataclass_nkiobject_with_bare_class_attributes_takes_keywords():
    x = f32(128, 64)
    out = run(kernel("corpus_causes.py::dataclass_params"), x)
    expected = np.zeros_like(x)
    expected[:, :63] = x[:, 1:] * 2.0 + 0.5
    (result,) = out.values()
    np.testing.assert_allclose(result[:, :63], expected[:, :63], rtol=1e-6)


def test_an_hbm_tensor_in_python_if_tests_presence_and_unset_fields_are_none():
    x, bias = f32(128, 32), f32(128, 32, seed=1)
    (with_bias,) = run(kernel("corpus_causes.py::optional_input"), x, bias).values()
    np.testing.assert_allclose(with_bias, (x + bias) * 2.0, rtol=1e-6)
    (without,) = run(kernel("corpus_causes.py::optional_input"), x).values()
    np.testing.assert_allclose(without, x * 2.0, rtol=1e-6)


def test_an_on_chip_tile_in_python_if_is_refused_at_its_line():
    with pytest.raises(NkiError) as err:
        run(kernel("corpus_causes.py::branch_on_tile"), f32(128, 32))
    where = _line("corpus_causes.py", "if tile:")
    assert str(err.value).startswith(f"tests/nki/kernels/corpus_causes.py:{where}: ")
    assert "a tile's value used in Python control flow" in str(err.value)


@pytest.mark.parametrize("func", ["rotated_transposes", "unrolled_blocks"])
def test_one_allocation_reusing_its_banks_is_no_race_and_transposes_right(func):
    """attn_fwd_v9 at its test's seqlen: v_psum_t's 8 banks serve 32 tiles.  The compiler orders
    a physical tile's reuse by the iterations of one tensor (the direct-allocation guide: one
    physical tile serializes the iterations), so that reuse is no finding, whether a kept loop
    rotates the tensor or the blocks are picked by constants (the tutorial's qk, scores_psum_t)."""
    from neuronsim.machine.nki import trace
    from neuronsim.verify.nki.findings import nki_findings

    v, identity = f32(128, 512), np.eye(128, dtype=np.float32)
    rotated = kernel(f"corpus_causes_legacy.py::{func}")
    assert [f.describe() for f in nki_findings(trace(rotated, v, identity).program)] == []
    (out,) = run(rotated, v, identity).values()
    expected = np.concatenate([v[:, i * 128:(i + 1) * 128].T for i in range(4)])
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_a_retried_trace_starts_from_the_kernel_modules_state():
    x = f32(128, 16)
    (out,) = run(kernel("corpus_causes_legacy.py::module_state_on_retry"), x).values()
    np.testing.assert_allclose(out, x, rtol=1e-6)  # + 0.0: the counter as the module left it


def test_torch_neuronx_nki_jit_traces_the_kernel_as_nki_jit():
    x = f32(128, 64)
    (out,) = run(kernel("corpus_causes_nki_jit.py::exp_kernel"), x).values()
    np.testing.assert_allclose(out, np.exp(x), rtol=1e-4)


def test_a_kernel_run_at_import_failing_in_our_passes_is_refused_at_the_call_line():
    import neuronsim.verify.nki.simulate  # noqa: F401  (an eager kernel call runs on the simulator)

    with pytest.raises(NkiError) as err:
        load_kernel(os.path.join(KERNELS, "corpus_causes_eager_import.py::per_row_writes"))
    call = _line("corpus_causes_eager_import.py", "RESULT = per_row_writes()")
    assert str(err.value).startswith(f"tests/nki/kernels/corpus_causes_eager_import.py:{call}: importing the kernel")


@pytest.mark.parametrize("shape, perm", [((16, 8, 4), (2, 1, 0)), ((8, 3, 4, 16), (3, 1, 2, 0))])
def test_dma_transpose_of_an_nd_dram_source_permutes_as_the_api_page(shape, perm):
    x = f32(*shape)
    (out,) = run(kernel("corpus_causes.py::dma_transpose_nd"), x).values()
    np.testing.assert_array_equal(out, x.transpose(perm))
