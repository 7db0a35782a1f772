"""Three silent wrong results of the current API a helper's sweep found:

* ``.ap(pattern, offset)`` of a sliced or indexed view counts from the view's own first
  element (the page: "element offset added to the view's base storage offset", None keeping
  it); it counted from the tensor's, so ``x[10:74, 5:37].ap(...)`` read ``x[0:64, 0:32]``;
* ``nisa.tensor_scalar`` with two bitvec operators hands the second a 32-bit pattern: ``(x <<
  4) >> 4`` of uint32 kept the top bits an int64 intermediate had saved;
* a transpose on PE from NeuronCore-v3 on moves int32 bit for bit ("Starting NeuronCore-v3,
  all Tensor Engine transpose is bit-accurate"); it went through fp32 (7,888 of 8,192 wrong)."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.verify.nki.run import run_kernel

#: A current-API kernel: ``x`` loaded whole into ``t``; ``OP`` writes ``o`` (OUT, in OUT_DTYPE),
#: which is stored.  Each test fills in its instruction.
KERNEL = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit(platform_target="TARGET")
def kernel(x):
    out = nl.ndarray(OUT, dtype=OUT_DTYPE, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    o = nl.ndarray(OUT, dtype=OUT_DTYPE, buffer=nl.sbuf)
    OP
    nisa.dma_copy(dst=out, src=o)
    return out
'''


def _run(tmp_path, x, op: str, out: str = "x.shape", out_dtype: str = "x.dtype", target: str = "trn1"):
    text = KERNEL.replace("OUT_DTYPE", out_dtype).replace("OUT", out).replace("OP", op).replace("TARGET", target)
    (tmp_path / "k.py").write_text(text)
    result, report = run_kernel(f"{tmp_path / 'k.py'}::kernel", x, seeds=(None,))
    assert not report.run.problems(), report.run.problems()[:3]
    return result


WINDOWS = {
    "an HBM view's own pattern": ("v = x[10:74, 5:37]\n    nisa.dma_copy(dst=o, src=v.ap(pattern=v.get_pattern()))",
                                  lambda x: x[10:74, 5:37]),
    "an HBM view, offset added": ("nisa.dma_copy(dst=o, src=x[10:74, 5:37].ap(pattern=[[96, 64], [1, 32]], offset=3))",
                                  lambda x: x[10:74, 8:40]),
    "an SBUF view, offset 0": ("nisa.tensor_copy(dst=o,\n"
                               "                     src=t[64:128, 20:52].ap(pattern=[[96, 64], [1, 32]], offset=0))",
                               lambda x: x[64:128, 20:52]),
}


@pytest.mark.parametrize("case", list(WINDOWS))
def test_ap_counts_from_the_views_first_element(tmp_path, case):
    source, expected = WINDOWS[case]
    x = np.random.default_rng(12).standard_normal((128, 96)).astype(np.float32)
    out = _run(tmp_path, x, source, out="(64, 32)")
    np.testing.assert_array_equal(out, expected(x))


@pytest.mark.parametrize("dtype", [np.uint32, np.int32])
def test_two_bitvec_operators_work_on_32_bit_patterns(tmp_path, dtype):
    info = np.iinfo(dtype)
    x = np.random.default_rng(13).integers(info.min, info.max, (128, 64), dtype=np.int64).astype(dtype)
    out = _run(tmp_path, x, "nisa.tensor_scalar(dst=o, data=t, op0=nl.left_shift, operand0=4, op1=nl.right_shift, "
                            "operand1=4)")
    # numpy's 32-bit shifts wrap; right_shift is logical ("Logical Shift Right"): on the pattern
    np.testing.assert_array_equal(out, ((x << dtype(4)).view(np.uint32) >> np.uint32(4)).view(dtype))


@pytest.mark.parametrize("target", ["trn1", "trn2"])
def test_a_pe_transpose_of_int32_is_exact_from_neuroncore_v3(tmp_path, target):
    x = np.random.default_rng(14).integers(-2**31, 2**31 - 1, (128, 64), dtype=np.int64).astype(np.int32)
    out = _run(tmp_path, x, "ps = nl.ndarray((64, 128), dtype=nl.int32, buffer=nl.psum)\n"
                            "    nisa.nc_transpose(dst=ps, data=t, engine=nisa.engine.tensor)\n"
                            "    nisa.tensor_copy(dst=o, src=ps)", out="(64, 128)", target=target)
    if target == "trn2":
        np.testing.assert_array_equal(out, x.T)
    else:  # v2: a matmul against the identity, in fp32
        np.testing.assert_array_equal(out, x.T.astype(np.float32).astype(np.int64).clip(-2**31, 2**31 - 1))


def test_a_compute_copy_between_integer_types_goes_through_fp32(tmp_path):
    # the tensor_copy page: "intermediate FP32 cast when input and output data types differ";
    # it kept the low bits as a DMA does (40000 came out -25536, 16777217 came out 1)
    x = np.random.default_rng(15).integers(-2**31, 2**31 - 1, (128, 64), dtype=np.int64).astype(np.int32)
    x[0, :3] = [40000, 16777217, -40000]
    out = _run(tmp_path, x, "nisa.tensor_copy(dst=o, src=t, engine=nisa.engine.vector)", out_dtype="nl.int16")
    np.testing.assert_array_equal(out, np.clip(x.astype(np.float32).astype(np.float64), -32768, 32767).astype(np.int16))
    assert out[0, :3].tolist() == [32767, 32767, -32768]


@pytest.mark.parametrize("out_dtype, np_dtype", [("nl.int8", np.int8), ("nl.uint8", np.uint8), ("nl.int16", np.int16),
                                                 ("nl.uint32", np.uint32)])
def test_a_dma_between_integer_types_keeps_bits_of_one_width_and_saturates_across_widths(tmp_path, out_dtype,
                                                                                          np_dtype):
    # the dma_copy page: "first casting from src.dtype to float32, then from float32 to dst.dtype";
    # one width keeps its bits (neuronx-distributed's find_index: uint32 0xFFFFFFFF lands as -1).
    # probe_ab: int32 300 into int8 came out 44, -1 into uint8 255
    x = np.random.default_rng(16).integers(-2**31, 2**31 - 1, (128, 64), dtype=np.int64).astype(np.int32)
    x[0, :4] = [300, -1, 70000, -70000]
    out = _run(tmp_path, x, "nisa.dma_copy(dst=o, src=t)", out_dtype=out_dtype)
    if np.dtype(np_dtype).itemsize == 4:
        np.testing.assert_array_equal(out, x.view(np_dtype))
    else:
        info = np.iinfo(np_dtype)
        np.testing.assert_array_equal(out, np.clip(x.astype(np.float32).astype(np.float64), info.min, info.max)
                                      .astype(np_dtype))
