"""A probe of NKI 0.7 kernel mistakes (235 generated kernels): the page rules it found running
without a word, each now refused at the line marked ``# mistake`` with its page's words (a
source narrower than its ``dst``, two PSUM operands of select_reduce, a reduction over a middle
axis, dma_transpose's dtype and DGE rules, a ``reduce_res`` read out of registers nothing set),
and what the same pages allow, which still runs (a legacy broadcast of ``tensor_tensor``, which
NxD's router_topk_kernel relies on, with a warning)."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, load_kernel, trace
from neuronsim.verify.nki.simulate import sequential_outputs

KERNELS = '''
import nki
import nki.isa as nisa
import nki.language as nl


def _tile(x, shape=None, dtype=None, buffer=nl.sbuf):
    t = nl.ndarray(shape or x.shape, dtype=dtype or x.dtype, buffer=buffer)
    if shape is None and buffer == nl.sbuf:
        nisa.dma_copy(dst=t, src=x)
    else:
        nisa.memset(dst=t, value=1.0)
    return t


def _out(t):
    o = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=o, src=t)
    return o


@nki.jit
def activation_of_a_column_into_a_tile(x):
    col, o = _tile(x, (128, 1)), nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.activation(dst=o, op=nl.exp, data=col)  # mistake
    return _out(o)


@nki.jit
def copy_of_a_column_into_a_tile(x):
    col, o = _tile(x, (128, 1)), nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=col)  # mistake
    return _out(o)


@nki.jit
def copy_of_a_row_onto_every_partition(x):
    t, o = _tile(x), nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=t[0:1, :])  # mistake
    return _out(o)


@nki.jit
def tensor_tensor_of_columns_into_a_tile(x):
    a, b = _tile(x, (128, 1)), _tile(x, (128, 1))
    o = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=o, data1=a, data2=b, op=nl.add)  # mistake
    return _out(o)


@nki.jit
def select_reduce_of_two_psum_operands(x):
    t, o = _tile(x), nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    pred = nl.ndarray(x.shape, dtype=nl.uint8, buffer=nl.psum)
    nisa.tensor_scalar(dst=pred, data=t, op0=nl.greater, operand0=0.0)
    tp = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.psum)
    nisa.tensor_copy(dst=tp, src=t)
    nisa.select_reduce(dst=o, predicate=pred, on_true=tp, on_false=0.0)  # mistake
    return _out(o)


@nki.jit
def reduction_over_a_middle_axis(x):
    t, o = _tile(x, (128, 8, 8)), nl.ndarray((128, 1, 8), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=o, op=nl.add, data=t, axis=1, keepdims=True)  # mistake
    return _out(o)


@nki.jit
def dma_transpose_with_a_cast(x):
    t, o = _tile(x, (64, 64)), nl.ndarray((64, 64), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_transpose(dst=o, src=t)  # mistake
    return _out(o)


@nki.jit
def hardware_dge_transpose_of_float32(x):
    t, o = _tile(x, (64, 64)), nl.ndarray((64, 64), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_transpose(dst=o, src=t, dge_mode=nisa.dge_mode.hwdge)  # mistake
    return _out(o)


@nki.jit
def software_dge_transpose_of_a_tile(x):
    t, o = _tile(x, (64, 64)), nl.ndarray((64, 64), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_transpose(dst=o, src=t, dge_mode=nisa.dge_mode.swdge)  # mistake
    return _out(o)


@nki.jit
def reduce_res_of_registers_nothing_set(x):
    t, e = _tile(x), nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    s = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=e, op=nl.exp, data=t, reduce_op=nl.add, reduce_res=s,  # mistake
                    reduce_cmd=nisa.reduce_cmd.idle)
    return _out(s)


@nki.jit
def reduce_res_read_out_by_idle(x):
    """reset_reduce keeps the row sums in the registers; idle leaves them and reads them out."""
    t, e = _tile(x), nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    s = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=e, op=nl.copy, data=t, reduce_op=nl.add, reduce_cmd=nisa.reduce_cmd.reset_reduce)
    nisa.activation(dst=e, op=nl.exp, data=t, reduce_op=nl.add, reduce_res=s, reduce_cmd=nisa.reduce_cmd.idle)
    return _out(s)


@nki.jit
def int32_copied_into_uint32(x):
    t = nl.ndarray((128, 2), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    u = nl.ndarray((128, 2), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=u, src=t)  # through float32
    return _out(u)


@nki.jit
def reduction_over_the_last_two_axes(x):
    t = nl.ndarray((128, 4, 16), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x.reshape((128, 4, 16)))
    o = nl.ndarray((128, 1), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=o, op=nl.add, data=t, axis=(1, 2))
    return _out(o)
'''

#: A module of its own: a module that imports the neuronxcc stand-ins is traced as legacy NKI whole.
LEGACY = '''
import neuronxcc.nki as legacy_nki
import neuronxcc.nki.isa as lisa
import neuronxcc.nki.language as lnl
import neuronxcc.nki.compiler as ncc


@legacy_nki.jit
def legacy_rows_scaled_by_a_narrower_tile(x, w):
    out = lnl.ndarray((128, 4, 16), dtype=x.dtype, buffer=lnl.shared_hbm)
    t = lnl.ndarray((lnl.par_dim(128), 4, 16), dtype=x.dtype, buffer=lnl.sbuf)
    t[...] = lnl.load(x.reshape((128, 4, 16)))
    lnl.store(out, lisa.tensor_tensor(t, lnl.load(w), lnl.multiply))
    return out


@legacy_nki.jit
def legacy_partition_index_written_free(x, w):
    out = lnl.ndarray((128, 64), dtype=x.dtype, buffer=lnl.shared_hbm)
    i_p, i_f = lnl.arange(128)[None, :], lnl.arange(64)[None, :]
    lnl.store(out, lnl.load(x[i_p, i_f]))  # mistake
    return out


@legacy_nki.jit
def legacy_shared_hbm_under_an_if(x, w):
    if lnl.program_id(0) == 0:  # the page's example: a branch on the program's coordinates
        out = lnl.ndarray((128, 64), dtype=x.dtype, buffer=lnl.shared_hbm)  # mistake
    lnl.store(out, lnl.load(x))
    return out


@legacy_nki.jit
def legacy_matmul_of_int32(x, w):
    out = lnl.ndarray((128, 64), dtype=lnl.float32, buffer=lnl.shared_hbm)
    ints = lnl.copy(lnl.load(x), dtype=lnl.int32)
    lnl.store(out, lnl.matmul(ints, lnl.load(x), transpose_x=True))  # mistake
    return out


@legacy_nki.jit
def legacy_matmul_of_bfloat16_by_float32(x, w):
    out = lnl.ndarray((128, 64), dtype=lnl.float32, buffer=lnl.shared_hbm)
    halves = lnl.copy(lnl.load(x), dtype=lnl.bfloat16)
    lnl.store(out, lnl.matmul(halves, lnl.load(x), transpose_x=True))  # mistake
    return out


@legacy_nki.jit
def legacy_exp_in_an_allocated_kernel(x, w):
    out = lnl.ndarray((128, 64), dtype=x.dtype, buffer=lnl.shared_hbm)
    t = lnl.ndarray((lnl.par_dim(128), 64), dtype=x.dtype, buffer=ncc.sbuf.mod_alloc(base_addr=0))
    t[...] = lnl.load(x)
    lnl.store(out, lnl.exp(t))  # mistake
    return out


@legacy_nki.jit
def legacy_activation_without_bias_in_an_allocated_kernel(x, w):
    out = lnl.ndarray((128, 64), dtype=x.dtype, buffer=lnl.shared_hbm)
    t = lnl.ndarray((lnl.par_dim(128), 64), dtype=x.dtype, buffer=ncc.sbuf.mod_alloc(base_addr=0))
    t[...] = lnl.load(x)
    lnl.store(out, lisa.activation(lnl.exp, data=t))  # mistake
    return out


@legacy_nki.jit
def legacy_mask_of_every_second_row(x, w):
    out = lnl.ndarray((128, 64), dtype=x.dtype, buffer=lnl.shared_hbm)
    i_p, i_f = lnl.arange(128)[:, None], lnl.arange(64)[None, :]
    lnl.store(out[i_p, i_f], lnl.load(x[i_p, i_f]), mask=(i_p % 2 < 1))  # mistake
    return out


@legacy_nki.jit
def legacy_columns_left_by_reductions(x, s):
    """AWS's Mamba2 inference step: reductions without keepdims leave [P] columns, which it
    transposes into a row and multiplies a tile by (nl.matmul's moving operand)."""
    out_row = lnl.ndarray((16, 64), dtype=x.dtype, buffer=lnl.shared_hbm)
    out_mm = lnl.ndarray((8, 1), dtype=x.dtype, buffer=lnl.shared_hbm)
    column = lnl.sum(lnl.load(x[0:64, 0:4]), axis=1)
    lnl.store(out_row, lnl.transpose(column).broadcast_to((16, 64)))
    sixteen = lnl.sum(lnl.load(x[0:16, 0:4]), axis=1)
    lnl.store(out_mm, lnl.matmul(lnl.load(s), sixteen))
    return out_row, out_mm


@legacy_nki.jit
def legacy_flat_declaration_never_used(x, w):
    """A CS149 submission declares a 1-D SBUF tile and rebinds the name at once."""
    out = lnl.ndarray((128, 64), dtype=x.dtype, buffer=lnl.shared_hbm)
    b = lnl.ndarray(shape=(lnl.par_dim(128),), dtype=w.dtype, buffer=lnl.sbuf)
    b = lnl.load(w[:, 0:1])
    lnl.store(out, lnl.add(lnl.load(x), b))
    return out


@legacy_nki.jit
def legacy_flat_declaration_used(x, w):
    out = lnl.ndarray((128, 64), dtype=x.dtype, buffer=lnl.shared_hbm)
    b = lnl.ndarray(shape=(lnl.par_dim(128),), dtype=w.dtype, buffer=lnl.sbuf)  # the declaration
    b[...] = lnl.load(w[:, 0])
    lnl.store(out, lnl.add(lnl.load(x), b))
    return out
'''

MISTAKES = {
    "activation_of_a_column_into_a_tile": "nisa.activation: data is (128, 1), and dst",
    "copy_of_a_column_into_a_tile": "nisa.tensor_copy: src is (128, 1), and dst",
    "copy_of_a_row_onto_every_partition": "nisa.tensor_copy: src is (1, 64), and dst",
    "tensor_tensor_of_columns_into_a_tile": "nisa.tensor_tensor: data1 is (128, 1), and dst",
    "select_reduce_of_two_psum_operands": "nisa.select_reduce: on_true and predicate are both in PSUM; its page: "
                                          "\"Either on_true or predicate may be in PSUM, but not both",
    "reduction_over_a_middle_axis": "nisa.tensor_reduce over axis 1 of a (128, 8, 8) tile: its page: \"The reduction "
                                    "axes must be the last contiguous free dimension(s) of the tile",
    "dma_transpose_with_a_cast": "nisa.dma_transpose of a float32 source into a bfloat16 dst: its page asks "
                                 "src.dtype == dst.dtype",
    "hardware_dge_transpose_of_float32": "nisa.dma_transpose(dge_mode=hwdge) of a (64, 64) float32 source: its page "
                                         "asks a 2-byte dtype",
    "software_dge_transpose_of_a_tile": "nisa.dma_transpose(dge_mode=swdge) of a direct source: its page: the only "
                                        "valid dge_modes are unknown and hwdge",
    "reduce_res_of_registers_nothing_set": "nisa.activation(reduce_cmd=idle) reads the engine's reduce registers, and "
                                           "nothing in the kernel set them before it",
}


@pytest.fixture
def kernels(tmp_path):
    (tmp_path / "k.py").write_text(KERNELS)
    (tmp_path / "l.py").write_text(LEGACY)
    return lambda name: load_kernel(f"{tmp_path / ('l.py' if name.startswith('legacy') else 'k.py')}::{name}")


def _line(func: str) -> int:
    lines = KERNELS.splitlines()
    start = next(k for k, text in enumerate(lines) if text.startswith(f"def {func}("))
    return next(k + 1 for k in range(start, len(lines)) if "# mistake" in lines[k])


X = np.random.default_rng(0).uniform(-1, 1, (128, 64)).astype(np.float32)


@pytest.mark.parametrize("func", sorted(MISTAKES))
def test_each_mistake_is_one_line_at_its_kernel_line(kernels, func):
    with pytest.raises(NkiError) as caught:
        trace(kernels(func), X)
    text = str(caught.value)
    assert text.startswith(f"k.py:{_line(func)}: ") and MISTAKES[func] in text and "\n" not in text, text


def test_idle_reads_out_the_registers_reset_reduce_left(kernels):
    traced = trace(kernels("reduce_res_read_out_by_idle"), X)
    sums = sequential_outputs(traced.program, traced.run_inputs)["return0"]
    np.testing.assert_allclose(sums[:, 0], X.sum(axis=1), rtol=1e-5, atol=1e-5)


def test_a_reduction_over_the_last_axes_runs(kernels):
    traced = trace(kernels("reduction_over_the_last_two_axes"), X)
    np.testing.assert_allclose(sequential_outputs(traced.program, traced.run_inputs)["return0"][:, 0],
                               X.sum(axis=1), rtol=1e-5, atol=1e-5)


def test_a_legacy_tensor_tensor_broadcasts_a_narrower_tile_with_a_warning(kernels):
    """NxD's router_topk_kernel (legacy API, run on hardware by its tests) multiplies a
    [P, A, B] tile by a [P, A] one; the page asks for as many elements per partition."""
    w = np.random.default_rng(1).uniform(-1, 1, (128, 4)).astype(np.float32)
    traced = trace(kernels("legacy_rows_scaled_by_a_narrower_tile"), X, w)
    ((_where, kind, message),) = traced.call_warnings
    assert kind == "broadcast" and "(128, 4, 16) tile and a (128, 4) one" in message
    out = sequential_outputs(traced.program, traced.run_inputs)["return0"]
    np.testing.assert_allclose(out, X.reshape(128, 4, 16) * w[:, :, None], rtol=1e-6)


def test_a_legacy_flat_tile_is_refused_at_its_declaration_only_when_used(kernels, tmp_path):
    """The known-issues page: users "may get" an error for a 1-D SBUF tile (its example is a
    memset of one); a CS149 submission declares one and never uses it (it was refused)."""
    w = np.random.default_rng(2).uniform(-1, 1, (128, 4)).astype(np.float32)
    traced = trace(kernels("legacy_flat_declaration_never_used"), X, w)
    np.testing.assert_allclose(sequential_outputs(traced.program, traced.run_inputs)["return0"], X + w[:, 0:1])
    with pytest.raises(NkiError) as caught:
        trace(kernels("legacy_flat_declaration_used"), X, w)
    line = next(k for k, text in enumerate(LEGACY.splitlines(), 1) if "# the declaration" in text)
    assert str(caught.value).startswith(f"l.py:{line}: an nl.sbuf tile of shape (128,): NKI's known-issues page")


def test_columns_left_by_reductions_transpose_and_multiply_as_columns(kernels):
    """nl.transpose and nl.matmul of a [P] column refused it ("transposes a 2-D tile") or read
    it as a row; AWS's Mamba2 inference step (awslabs/state-space-models-neuron) does both."""
    s = np.random.default_rng(3).uniform(-1, 1, (8, 16)).astype(np.float32)
    traced = trace(kernels("legacy_columns_left_by_reductions"), X, s)
    outputs = sequential_outputs(traced.program, traced.run_inputs)
    row, product = (outputs[name] for name in traced.outputs)
    np.testing.assert_allclose(row, np.broadcast_to(X[0:64, 0:4].sum(axis=1), (16, 64)), rtol=1e-5)
    np.testing.assert_allclose(product[:, 0], s @ X[0:16, 0:4].sum(axis=1), rtol=1e-4, atol=1e-5)


LEGACY_MISTAKES = {
    "legacy_partition_index_written_free": "indexing x with index vectors of 128 and 64 elements along the same axis "
                                           "((1, 128) and (1, 64))",
    "legacy_shared_hbm_under_an_if": "a shared_hbm tensor made under an if on the program's coordinates "
                                     "(nl.program_id): NKI makes shared_hbm tensors only at the kernel's top level "
                                     "(err_shared_hbm_must_in_kernel_level)",
    "legacy_matmul_of_int32": "nl.matmul of int32 x float32 tiles: nc_matmul's page takes float8",
    "legacy_mask_of_every_second_row": "an index vector in %, //, / or ** is no affine expression: NKI's index and "
                                       "mask expressions are affine (the errors page's "
                                       "err_unsupported_expression_in_mask",
    "legacy_exp_in_an_allocated_kernel": "nl.exp without a bias tile in a kernel that places its tiles itself: NKI's "
                                         "errors page (err_bias_tensor_must_be_specified_in_allocation)",
    "legacy_activation_without_bias_in_an_allocated_kernel": "nisa.activation without a bias tile in a kernel that "
                                                             "places its tiles itself",
    "legacy_matmul_of_bfloat16_by_float32": "nl.matmul of bfloat16 x float32 tiles: nc_matmul's page says \"if one of "
                                            "the input tiles is tfloat32/float32",
}


@pytest.mark.parametrize("func", sorted(LEGACY_MISTAKES))
def test_each_legacy_mistake_is_one_line_at_its_kernel_line(kernels, func):
    """A probe of legacy kernel mistakes: each ran without a word (two index vectors along one
    axis as the outer product; the page's "under if condition"; nl.matmul, which "calls
    nki.isa.nc_matmul under the hood", of operands nc_matmul refuses)."""
    lines = LEGACY.splitlines()
    start = next(k for k, text in enumerate(lines) if text.startswith(f"def {func}("))
    line = next(k + 1 for k in range(start, len(lines)) if "# mistake" in lines[k])
    with pytest.raises(NkiError) as caught:
        trace(kernels(func), X, X)
    text = str(caught.value)
    assert text.startswith(f"l.py:{line}: ") and LEGACY_MISTAKES[func] in text and "\n" not in text, text


def test_an_integer_copy_through_float32_is_a_warning_and_rounds_as_the_page_says(kernels):
    """A compute engine copies int32 into uint32 through float32 (the tensor_copy page): a bit-exact
    RNG kernel (trnsci/trnrand's philox) came out wrong without a word."""
    x = np.array([[0x12345678, 5]] * 128, dtype=np.int32)
    traced = trace(kernels("int32_copied_into_uint32"), x)
    ((where, kind, message),) = traced.call_warnings
    line = next(k for k, text in enumerate(KERNELS.splitlines(), 1) if "# through float32" in text)
    assert (where.endswith(f"k.py:{line}"), kind) == (True, "precision") and "intermediate FP32 cast" in message
    out = sequential_outputs(traced.program, traced.run_inputs)["return0"]
    assert out[0, 1] == 5 and out[0, 0] == np.uint32(np.float32(0x12345678))  # 305419896 -> 305419904
