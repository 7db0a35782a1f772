"""Cases of the corpus run: the NKI folders of aws-neuron-sdk (the API pages' test kernels under
``nki/test/``, the examples, the MX deep dive).  Shapes are the ones each ``nki/test`` file
draws its inputs at; the references restate, in our numpy, what those tests assert."""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np

from corpus_cases import Case, api, case, failing

T = "aws-neuron-sdk/nki/test/"
E = "aws-neuron-sdk/nki/examples/"
MX = "aws-neuron-sdk/nki/deep-dives/src/mxfp-matmul/mx_kernels.py::"
MM = E + "matrix_multiplication/matrix_multiplication_nki_kernels.py::"
MAMBA = E + "fused_mamba/mamba_nki_kernels.py::"
FP32_MIN = np.finfo(np.float32).min
# why some rows run without a reference (outcome `ran`)
RANDOM_ONLY = ("no reference: its test defines no expected result (its data is drawn in the kernel by "
               "nl.rand, or dropout is random; the test checks only properties such as order or nonzero)")
ROWS_UNWRITTEN = "the kernel never writes the odd rows of its output: compared, as its test does, are the even rows"


def _f(x):
    return np.asarray(x, np.float32)


def _t(x):
    return _f(x).T


def _add(a_tensor, b_tensor):
    return _f(a_tensor) + _f(b_tensor)


def _add_inputs(a_input, b_input):
    return _f(a_input) + _f(b_input)


def _matmul(lhsT, rhs, **_):
    return _f(lhsT).T @ _f(rhs)


# the indirect DMA tests (test_nki_isa_dma_copy.py): rows gathered or scattered by an iota index
# tile; rows an out-of-bounds index would reach are skipped (oob_mode=skip), the rest of the
# output keeps the kernel's memset value
def _load_every_third(in_tensor):
    a = _f(in_tensor)
    out = np.full((a.shape[0] // 2, a.shape[1]), -1.0, np.float32)
    rows = np.arange(0, a.shape[0], 3)  # 3 * i below the 128 rows; the rest skipped
    out[:len(rows)] = a[rows]
    return out


def _store_even_rows(in_tensor, fill=-1.0):
    a = _f(in_tensor)
    out = np.full((2 * a.shape[0], a.shape[1]), fill, np.float32)
    out[2 * np.arange(a.shape[0])] = a
    return out


def _local_gather(src_buffer, index, num_elem_per_idx, num_valid_indices, output_shape):
    """Per GpSimd core (16 partitions): its index elements, partition first, are element offsets
    into each of its partitions' rows, each giving num_elem_per_idx elements (the API page)."""
    data = _f(src_buffer).reshape(src_buffer.shape[0], -1)
    out = np.empty((data.shape[0], num_valid_indices * num_elem_per_idx), np.float32)
    for first in range(0, data.shape[0], 16):
        offsets = index[first:first + 16].T.ravel()[:num_valid_indices].astype(np.int64)
        columns = (offsets[:, None] + np.arange(num_elem_per_idx)[None, :]).ravel()
        out[first:first + 16] = data[first:first + 16][:, columns]
    return out.reshape(output_shape)


def _gather_transpose(src_tensor, idx_tensor):
    """The dma_transpose page's indirect transpose: the indexed rows, then axes (2, 1, 0)."""
    return np.transpose(src_tensor[idx_tensor[:, 0].astype(np.int64)], (2, 1, 0))


def _store_even_rows_added(in_tensor):
    """dst_rmw_op=np.add onto a memset of 1: the even rows 1 + the input, the odd rows 1."""
    out = np.ones((2 * in_tensor.shape[0], in_tensor.shape[1]), np.float32)
    out[2 * np.arange(in_tensor.shape[0])] += _f(in_tensor)
    return out


def _store_every_third(in_tensor):
    a = _f(in_tensor)
    out = np.full((2 * a.shape[0], a.shape[1]), -1.0, np.float32)
    rows = np.arange(0, 2 * a.shape[0], 3)
    out[rows] = a[:len(rows)]
    return out


# The MX deep dive (mx_kernels.py): fp8 e5m2 lanes packed four to a uint32 word (lane j in byte
# j, along the contraction axis: k = 4 * partition + j), one E8M0 scale (biased exponent, uint8)
# for each 8 partitions x 4 lanes of a column: scale row p // 8, as the kernels load the [16, F]
# scales into the four 32-partition quadrants.  Words are drawn from finite codes only (e5m2 code
# 0x7C and above are inf / NaN): magnitudes 0.25 .. 1.75, either sign; scales 2**-2 .. 2**2.
MX_RNG_SEED = 28


def _mx_words(partitions: int, columns: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    signs = rng.integers(0, 2, (partitions, columns, 4)) << 7
    codes = rng.integers(0x34, 0x40, size=(partitions, columns, 4)) | signs
    return sum(codes[..., j].astype(np.uint32) << (8 * j) for j in range(4)).astype(np.uint32)


def _mx_scales(partitions: int, columns: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(125, 130, size=(partitions // 8, columns)).astype(np.uint8)


def _mx_values(words, scales) -> np.ndarray:
    """[K * 4, F] float32 values of packed e5m2 words [K, F] with their scales [K / 8, F]."""
    lanes = np.asarray(words, np.uint32)[..., None] >> (8 * np.arange(4, dtype=np.uint32))
    values = (lanes & 0xFF).astype(np.uint8).view(ml_dtypes.float8_e5m2).astype(np.float32)
    scale = np.exp2(np.asarray(scales, np.float32) - 127.0).repeat(8, axis=0)[..., None]
    k, f = np.asarray(words).shape
    return (values * scale).transpose(0, 2, 1).reshape(k * 4, f)


def _mx_offline(stationary_mx_data, stationary_mx_scale, moving_mx_data, moving_mx_scale, **_):
    return _mx_values(stationary_mx_data, stationary_mx_scale).T @ _mx_values(moving_mx_data, moving_mx_scale)


def _mx_on_device(stationary_mx_data, stationary_mx_scale, moving_data_bf16, **_):
    """The moving bf16 [K, 4 N] is quantized on the device: lane j of column n is element 4 n + j."""
    moving = _f(moving_data_bf16)
    k, n4 = moving.shape
    moving = moving.reshape(k, n4 // 4, 4).transpose(0, 2, 1).reshape(k * 4, n4 // 4)
    return _mx_values(stationary_mx_data, stationary_mx_scale).T @ moving


#: (rtol, atol) for a kernel that quantizes bf16 to MX e5m2 on the device: e5m2 keeps 2 mantissa
#: bits, so each quantized value is off by up to 1/8 of itself.  Against the unquantized product,
#: at the on-device case's inputs (signed stationary, sums ~20 in size) the rounding of the moving
#: data alone leaves errors of standard deviation 0.73 and at most 5.7 (our numpy of the
#: quantization, summed over K = 512); atol 8 (~11 sigma) holds that noise, while a wrong lane or
#: scale layout misses by about the size of the sums on most elements.
MX_QUANTIZED = (0.05, 8.0)
MX_OFFLINE_ARGS = (_mx_words(128, 128, MX_RNG_SEED), _mx_scales(128, 128, MX_RNG_SEED + 1),
                   _mx_words(128, 512, MX_RNG_SEED + 2), _mx_scales(128, 512, MX_RNG_SEED + 3))


def _matmul_mx(stationary_hbm, moving_hbm, **_):
    return _f(stationary_hbm).T @ _f(moving_hbm)


def _replace_top8(data, imm):
    """The match-replace tests: each partition's 8 largest values (over its whole free extent,
    largest first) replaced by ``imm``, and their indices in the flattened row."""
    x = _f(data).reshape(data.shape[0], -1)
    idx = np.argsort(-x, axis=-1, kind="stable")[:, :8]
    out = x.copy()
    np.put_along_axis(out, idx, np.float32(imm), axis=-1)
    return out.reshape(data.shape), idx.astype(np.uint32)


def _gathered_off(outputs):
    """gather_flattened's result less the elements its returned data and indices name (zero
    where the gather is right)."""
    data, indices, result = (outputs[f"return{i}"] for i in range(3))
    expected = np.take_along_axis(_f(data), indices.astype(np.int64), axis=-1)
    return {"return2": _f(result) - expected}


def _even_rows(outputs):
    """The rows an indirect store by 2 * i wrote (the others hold whatever HBM held)."""
    return {name: value[::2] for name, value in outputs.items()}


def _sequence_bounds(segment_ids):
    """sequence_bounds per partition row: each position gets the first index of its run of equal
    segment ids and one past its last; segment id 0 is padding (bounds n and -1)."""
    ids = _f(segment_ids)
    rows, n = ids.shape
    out = np.empty((rows, 2, n), np.float32)
    for r in range(rows):
        for i in range(n):
            start, end = i, i + 1
            while start > 0 and ids[r, start - 1] == ids[r, i]:
                start -= 1
            while end < n and ids[r, end] == ids[r, i]:
                end += 1
            out[r, :, i] = (n, -1) if ids[r, i] == 0 else (start, end)
    return out


def _range_select(on_true, bound0, bound1, range_start, **_):
    """The example test: elements whose column index (counted from range_start) lies in
    [bound0, bound1) kept, the rest fp32 min; and the row maximum of that selection."""
    x = _f(on_true)
    column = range_start + np.arange(x.shape[1])[None, :]
    selected = np.where((column >= bound0) & (column < bound1), x, FP32_MIN)
    return selected, selected.max(axis=1, keepdims=True)


def _range_select_chained(on_true, bound0, bound1, range_start, **_):
    """The chaining test: three range selects on the tile (+1 before each but the first), the
    range starting one tile height further each time; the last selection and the running max."""
    x = _f(on_true)
    best = np.full((x.shape[0], 1), -np.inf, np.float32)
    for i in range(3):
        column = range_start + i * x.shape[0] + np.arange(x.shape[1])[None, :]
        selected = np.where((column >= bound0) & (column < bound1), x + i, FP32_MIN)
        best = np.maximum(best, selected.max(axis=1, keepdims=True))
    return selected, best


def _bn(tensor):
    x = _f(tensor)
    return x.mean(axis=1, keepdims=True), x.var(axis=1, keepdims=True)


def _affine_select(a_tensor):
    out = _f(a_tensor).copy()
    out[np.triu_indices_from(out)] = FP32_MIN
    return out


def _scan(a_tensor, b_tensor):
    a, b = _f(a_tensor), _f(b_tensor)
    out = np.zeros_like(a)
    out[:, 0] = b[:, 0]
    for i in range(1, a.shape[1]):
        out[:, i] = a[:, i] * out[:, i - 1] + b[:, i]
    return out


def _avgpool(in_tensor, pool_size):
    c, h, w = in_tensor.shape
    return _f(in_tensor).reshape(c, h // pool_size, pool_size, w // pool_size, pool_size).mean(axis=(2, 4))


def _maxpool(in_tensor, sz_pool):
    c, h, w = in_tensor.shape
    return _f(in_tensor).reshape(c, h // sz_pool, sz_pool, w // sz_pool, sz_pool).max(axis=(2, 4))


def _transpose2d(in_tensor, shape2D):
    rows, cols = shape2D
    p = in_tensor.shape[0]
    return np.transpose(np.asarray(in_tensor).reshape(p, rows, cols), (0, 2, 1)).reshape(p, rows * cols)


#: The state matrix of the Mamba rows: negative, as a trained model's is (A = -exp(A_log)), so
#: exp(delta * A) decays; a standard normal A, half of it positive, made 70,141 of the 131,072
#: reference outputs infinite over 512 steps, and "equal" compared inf with inf (probe_p)
MAMBA_A = -(0.5 + 1.5 * np.random.default_rng(29).random((256, 4))).astype(np.float32)


def _mamba(delta, u, A, B, C):
    """The selective scan the fused-Mamba tutorial computes: for each state n,
    h_t = exp(delta_t * A_n) * h_{t-1} + delta_t * B_n,t * u_t, and out = sum_n C_n,t * h_t."""
    batch, channels, seq = delta.shape
    out = np.zeros((batch, channels, seq), np.float32)
    for b in range(batch):
        for n in range(A.shape[1]):
            dA = np.exp(delta[b] * A[:, n:n + 1])
            dBu = delta[b] * u[b] * B[b, n][None, :]
            h = np.zeros(channels, np.float32)
            for t in range(seq):
                h = dA[:, t] * h + dBu[:, t]
                out[b, :, t] += C[b, n, t] * h
    return out


def tutorial_rows(avgpool: str, mamba: str) -> dict[str, Case]:
    """The average-pool and fused-Mamba tutorial rows, which the SDK's examples and nki-samples'
    tutorials both hold (``avgpool`` / ``mamba``: the key prefix of each file in one of them)."""
    state = (MAMBA_A.copy(),)
    return {
        avgpool + "tensor_avgpool_kernel": case("f32[2,6,6]", pool_size=2, ref=_avgpool),
        mamba + "mamba_v1": case("f32[1,256,512]", "f32[1,256,512]", *state, "f32[1,4,512]", "f32[1,4,512]",
                                 ref=_mamba),
        mamba + "mamba_v2": case("f32[1,256,512]", "f32[1,256,512]", *state, "f32[1,4,512]", "f32[1,4,512]",
                                 ref=_mamba),
        mamba + "mamba_v3": case("f32[1,256,2048]", "f32[1,256,2048]", *state, "f32[1,4,2048]", "f32[1,4,2048]",
                                 ref=_mamba, note="v3 tiles the sequence by 2048"),
    }


CASES: dict[str, Case] = {
    # nki/test: the API pages' own kernels, at their tests' shapes
    T + "test_nki_isa_activation.py::nki_activation": case(
        "f32[128,1024]", "f32[128,512]", "f32[128,1]",
        ref=lambda a_tensor, b_tensor, c_tensor: (np.exp(_f(a_tensor)), np.square(_f(b_tensor) * 2 + _f(c_tensor)))),
    T + "test_nki_isa_affine_select.py::nki_affine_select": case("f32[128,128]", ref=_affine_select),
    T + "test_nki_isa_bn_stats.py::nki_bn_stats_bn_aggr_1": case("f32[128,128]", ref=lambda a_tensor: _bn(a_tensor)),
    T + "test_nki_isa_bn_stats.py::nki_bn_stats_bn_aggr_2": case("f32[128,1024]", ref=lambda b_tensor: _bn(b_tensor)),
    T + "test_nki_isa_copypredicated.py::nki_copy_predicated": case(
        "u8[128,512]<2", "f32[128,512]", "f32[128,512]",
        ref=lambda predicate, on_true_tensor, on_false_tensor: np.where(predicate != 0, on_true_tensor,
                                                                        on_false_tensor)),
    T + "test_nki_isa_dma_copy.py::nki_dma_copy": case("f32[256,1]", ref=lambda a: _f(a)),
    T + "test_nki_isa_dma_copy.py::nki_indirect_load_oob_err": case(
        "f32[128,512]", ref=lambda in_tensor: _f(in_tensor)[2 * np.arange(64)]),
    T + "test_nki_isa_dma_copy.py::nki_indirect_load_oob_error_negative": failing("f32[128,512]",
                                                                                  refusal="oob_mode=error"),
    T + "test_nki_isa_dma_copy.py::nki_indirect_load_oob_skip": case("f32[128,512]", ref=_load_every_third),
    T + "test_nki_isa_dma_copy.py::nki_indirect_store_rmw": case("f32[64,512]", ref=_store_even_rows_added),
    T + "test_nki_isa_dma_copy.py::nki_indirect_store_oob_err": case("f32[64,512]", ref=_store_even_rows),
    T + "test_nki_isa_dma_copy.py::nki_indirect_store_oob_err_negative": failing("f32[64,512]",
                                                                                 refusal="oob_mode=error"),
    T + "test_nki_isa_dma_copy.py::nki_indirect_store_oob_skip": case("f32[64,512]", ref=_store_every_third),
    T + "test_nki_isa_dma_copy.py::nki_dma_copy_swdge": case("f32[64,512]", ref=lambda in_tensor: _f(in_tensor)),
    T + "test_nki_isa_dma_copy.py::nki_dma_copy_hwdge": case("f32[128,512]", ref=lambda in_tensor: _f(in_tensor)),
    T + "test_nki_isa_dma_transpose.py::nki_dma_transpose_2d_hbm2sb": case("f16[16,128]", ref=lambda a: _t(a)),
    T + "test_nki_isa_dma_transpose.py::nki_dma_transpose_2d_sb2sb": case("f16[16,128]", ref=lambda a: _t(a)),
    T + "test_nki_isa_dma_transpose.py::nki_dma_transpose_2d_hbm2sb_dge_xbar": case("f16[16,128]", ref=lambda a: _t(a)),
    T + "test_nki_isa_dma_transpose.py::nki_dma_transpose_2d_sb2sb_dge_xbar": case("f16[16,128]", ref=lambda a: _t(a)),
    T + "test_nki_isa_dma_transpose.py::nki_dma_gather_transpose_3d_hbm2sb": case(
        "u16[64,4,128]<1000", "u32[32,1]<64", ref=_gather_transpose),
    # its result is (dim2, dim1, dim0) of the source tile: as many indices as the tile has rows
    T + "test_nki_isa_dma_transpose.py::nki_dma_gather_transpose_3d_sb2sb": case(
        "u16[64,4,128]<1000", "u32[64,1]<64", ref=_gather_transpose),
    T + "test_nki_isa_dropout.py::nki_dropout": case("f32[128,512]", "f32[128,1]", note=RANDOM_ONLY),
    T + "test_nki_isa_dropout.py::nki_dropout_scalar": case("f32[128,512]", note=RANDOM_ONLY),
    T + "test_nki_isa_iota.py::nki_iota": case(ref=lambda: (
        np.arange(512)[None, :], np.arange(128)[:, None], -np.arange(512)[None, :], np.arange(5, 260, 2)[:, None],
        np.arange(512)[None, :] + np.arange(128)[:, None])),
    T + "test_nki_isa_local_gather.py::nki_local_gather": case("f32[128,512,4]", "u16[128,4]<512", 4, 64,
                                                               (128, 4, 16, 4), ref=_local_gather),
    T + "test_nki_isa_max8.py::nki_max8": case(note=RANDOM_ONLY),
    T + "test_nki_isa_memset.py::nki_memset": case(ref=lambda: np.full((128, 128), 0.2, np.float32)),
    T + "test_nki_isa_nc_find_index8.py::nki_max_index8": case(note=RANDOM_ONLY),
    T + "test_nki_isa_nc_match_replace8.py::nki_nc_match_replace8": case(note=RANDOM_ONLY),
    T + "test_nki_isa_nc_match_replace8.py::nki_nc_match_replace_indices8": case(
        "f32[128,512]", imm=np.float32("-inf"), ref=lambda in_tensor, imm: _replace_top8(in_tensor, imm)),
    T + "test_nki_isa_nc_match_replace8.py::nki_nc_match_replace_indices8_mask": dataclasses.replace(case(
        "f32[128,512]", imm=np.float32("-inf"), ref=lambda in_tensor, imm: _replace_top8(in_tensor[:64, :256], imm),
        note="compared, as its test does, on [:64, :256] and the first 64 index rows: its mask is written "
             "`ix < n//2 and iy < m//2` (Python keeps the second condition only), and the two readings agree there"),
        decode=lambda out: {"return0": out["return0"][:64, :256], "return1": out["return1"][:64]}),
    T + "test_nki_isa_nc_match_replace8.py::nki_nc_match_replace_indices8_3d": case(
        "f32[128,4,4]", ref=lambda data_tensor: _replace_top8(data_tensor, 0.0)),
    T + "test_nki_isa_nc_match_replace8.py::nki_nc_match_replace_indices8_3d_inplace": case(
        "f32[128,4,4]", ref=lambda data_tensor: _replace_top8(data_tensor, 0.0)),
    T + "test_nki_isa_nc_matmul.py::nki_nc_matmul": case(
        "f32[128,128]", "f32[128,512]", "f32[256,128]", "f32[256,512]", "f32[16,64,64]", "f32[16,64,512]",
        ref=lambda a_tensor, b_tensor, d_tensor, e_tensor, g_tensor, h_tensor: (
            _t(a_tensor) @ _f(b_tensor), _t(d_tensor) @ _f(e_tensor),
            np.matmul(_f(g_tensor).transpose(0, 2, 1), _f(h_tensor)))),
    T + "test_nki_isa_nc_matmul.py::nki_nc_matmul_double_row_gen3": case(
        "f8e5m2[128,2,1]<2", "f8e5m2[128,2,512]<2",
        ref=lambda a_input, b_input: np.einsum("kli,klj->ij", _f(a_input), _f(b_input))),
    T + "test_nki_isa_nc_stream_shuffle.py::nki_nc_stream_shuffle": case(
        "f32[32,128]", ref=lambda in_tensor: _f(in_tensor)[[(i - 1) % 32 for i in range(32)]]),
    T + "test_nki_isa_nc_stream_shuffle.py::nki_nc_stream_shuffle_broadcast_partition": case(
        "f32[1,128]", ref=lambda in_tensor: np.repeat(_f(in_tensor), 32, axis=0)),
    T + "test_nki_isa_nc_stream_shuffle.py::nki_nc_stream_shuffle_broadcast_mask": case(
        "f32[128,128]",
        ref=lambda in_tensor: _f(in_tensor)[[(i - 1) % 32 + j * 32 for j in range(4) for i in range(32)]]),
    T + "test_nki_isa_nc_transpose.py::nki_nc_transpose": case(
        "f32[128,64]", "f32[32,2]", ref=lambda a_tensor, b_tensor: (_t(a_tensor), _t(b_tensor))),
    T + "test_nki_isa_partition_reduce.py::nki_par_reduce": case(
        "f32[128,32,4]", "0:f32[1,32,4]", ref=lambda a_tensor: _f(a_tensor).sum(axis=0, keepdims=True)),
    T + "test_nki_isa_partition_reduce.py::nki_par_reduce_nd_b": case(
        "f32[4,128,32,8]", "0:f32[4,1,32,8]", ref=lambda a_tensor: _f(a_tensor).sum(axis=1, keepdims=True)),
    # (traced for trn2, as their @nki.jit(platform_target="trn2") says: range_select is NeuronCore-v3 and newer)
    T + "test_nki_isa_range_select.py::nki_range_select_example": dataclasses.replace(case(
        "f32[128,512]", np.zeros((128, 1), np.float32), np.full((128, 1), 64, np.float32), np.greater_equal, np.less,
        32, np.float32, ref=_range_select,
        note="returns its SBUF result tile: NKI's simulator (mode='simulation') hands its values back"),
        machine="trn2"),
    T + "test_nki_isa_range_select.py::nki_range_select_chaining": dataclasses.replace(case(
        "f32[128,512]", np.zeros((128, 1), np.float32), np.full((128, 1), 350, np.float32), np.greater_equal, np.less,
        32, ref=_range_select_chained), machine="trn2"),
    T + "test_nki_isa_reciprocal.py::reciprocal_kernel": case(
        "f32[128,512]", ref=lambda in_tensor: 1.0 / (_f(in_tensor)),
        note="values in [0, 1): the test's * 100 kept out"),
    T + "test_nki_isa_reduce.py::nki_reduce": case("f32[128,512]",
                                                   ref=lambda a_tensor: _f(a_tensor).sum(axis=1, keepdims=True)),
    T + "test_nki_isa_select_reduce.py::nki_select_reduce_basic": case(
        "u8[128,64]<2", "f32[128,64]", ref=lambda predicate_data, on_true_data: np.where(
            predicate_data != 0, _f(on_true_data), FP32_MIN)),
    T + "test_nki_isa_select_reduce.py::nki_select_reduce_with_reduction": case(
        "u8[128,512]<2", "f32[128,512]", "f32[128,1]",
        ref=lambda predicate_data, on_true_data, on_false_data: (
            np.where(predicate_data != 0, on_true_data, on_false_data),
            np.where(predicate_data != 0, on_true_data, on_false_data).max(axis=1, keepdims=True))),
    T + "test_nki_isa_select_reduce.py::nki_select_reduce_reverse_pred": case(
        "u8[128,64]<2", "f32[128,64]", ref=lambda predicate_data, on_true_data: np.where(
            predicate_data == 0, _f(on_true_data), FP32_MIN)),
    T + "test_nki_isa_sequence_bounds.py::nki_sequence_bounds": case(segment_ids=np.sort(
        np.random.default_rng(0).integers(0, 32, 32)).reshape(1, 32).astype(np.float32), ref=_sequence_bounds),
    T + "test_nki_isa_tensor_copy.py::nki_tensor_copy": case("f32[8,8]", ref=lambda in_tensor: _f(in_tensor)),
    T + "test_nki_isa_tensor_scalar.py::nki_tensor_scalar": case(
        "f32[128,512]", "f32[128,512]", "f32[64,1024]", "f32[64,1]",
        ref=lambda a_tensor, c_tensor, e_tensor, f_tensor: (_f(a_tensor) - 1, 1 - _f(c_tensor),
                                                            _f(e_tensor) * _f(f_tensor) + 2.5)),
    T + "test_nki_isa_tensor_scalar_cumulative.py::nki_tensor_scalar_cumulative_scalar": case(
        np.ones((128, 64), np.float32), op0=api("nl.add"), op1=api("nl.add"), imm0=np.float32(0.0),
        ref=lambda src_data, **_: np.add.accumulate(_f(src_data), axis=-1)),
    T + "test_nki_isa_tensor_scalar_cumulative.py::nki_tensor_scalar_cumulative_vector": case(
        np.ones((128, 64), np.float32), op0=api("nl.add"), op1=api("nl.add"), imm0=np.ones((128, 1), np.float32),
        ref=lambda src_data, imm0, **_: np.add.accumulate(_f(src_data) + imm0, axis=-1)),
    T + "test_nki_isa_tensor_scalar_cumulative.py::nki_tensor_scalar_cumulative_chain": case(
        np.ones((128, 64), np.float32), op0=api("nl.add"), op1=api("nl.add"), imm0=np.float32(0.0),
        reduce_cmd=api("nisa.reduce_cmd.reset_reduce"),
        ref=lambda src_data, **_: np.add.accumulate(_f(src_data), axis=-1) + 64),
    T + "test_nki_isa_tensor_scalar_cumulative.py::nki_tensor_scan": case(
        np.ones((128, 64), np.float32), op=api("nl.add"), initial=np.float32(2.0),
        ref=lambda src_data, **_: np.add.accumulate(_f(src_data), axis=-1) + 2),
    T + "test_nki_isa_tensor_tensor.py::nki_tensor_tensor": case("f32[128,512]", "f32[128,512]", ref=_add),
    T + "test_nki_isa_tensor_tensor_scan.py::nki_tensor_tensor_scan": case("f32[128,1024]", "f32[128,1024]", ref=_scan),
    T + "test_nki_mask.py::nki_mask": case("f32[128,512]", ref=lambda in_tensor: np.square(_f(in_tensor)[:64, :256])),
    T + "test_nki_memory_semantics.py::simple_demo_kernel": case("f32[4,128,512]", ref=lambda a_ptr: np.exp(_f(a_ptr))),
    T + "test_nki_nl_add.py::add_tensors": case("f32[128,512]", "f32[128,512]", ref=_add),
    T + "test_nki_nl_add.py::add_tensor_scalar": case("f32[128,512]", ref=lambda a_tensor: _f(a_tensor) + 2.2),
    T + "test_nki_nl_add.py::add_broadcast_free_dim": case("f32[128,512]", "f32[128,1]", ref=_add),
    T + "test_nki_nl_add.py::add_broadcast_par_dim": case("f32[128,512]", "f32[1,512]", ref=_add),
    T + "test_nki_nl_add.py::add_broadcast_both_dims": case("f32[128,512]", "f32[1,1]", ref=_add),
    T + "test_nki_nl_add.py::add_broadcast_each_dims": case("f32[128,1]", "f32[1,512]", ref=_add),
    T + "test_nki_nl_broadcast.py::test_nl_broadcast": case(
        "i32[1,64]<100", ref=lambda in_tensor: np.repeat(in_tensor, 128, axis=0)),
    T + "test_nki_nl_dslice.py::example_kernel": case("f32[128,4096]", ref=lambda in_tensor: _f(in_tensor)),
    T + "test_nki_nl_gather_flattened.py::nki_gather_flattened": dataclasses.replace(case(
        ref=lambda: {"return2": np.zeros((32, 10), np.float32)},
        note="its data is drawn in the kernel (nl.rand): compared, as its test does, is the gathered result "
             "less np.take_along_axis of the data and indices the kernel also returns"), decode=_gathered_off),
    T + "test_nki_nl_load_store.py::example_kernel": case("f32[128,512]", ref=lambda in_tensor: _f(in_tensor)),
    T + "test_nki_nl_load_store.py::example_load_store_b": case("f32[4,128,512]", ref=lambda in_tensor: _f(in_tensor)),
    T + "test_nki_nl_load_store_indirect.py::example_indirect_load_1": case(
        "f32[128,512]", 2 * np.arange(64, dtype=np.int32),
        ref=lambda data_tensor, idx_tensor: _f(data_tensor)[idx_tensor]),
    T + "test_nki_nl_load_store_indirect.py::example_indirect_load_2": case(
        "f32[128,512]", ref=lambda data_tensor: _f(data_tensor)[2 * np.arange(64)]),
    T + "test_nki_nl_load_store_indirect.py::example_indirect_save_1": dataclasses.replace(case(
        "f32[64,512]", 2 * np.arange(64, dtype=np.int32), ref=lambda in_tensor, idx_tensor: _f(in_tensor),
        note=ROWS_UNWRITTEN), decode=_even_rows),
    T + "test_nki_nl_load_store_indirect.py::example_indirect_save_2": dataclasses.replace(case(
        "f32[64,512]", ref=lambda in_tensor: _f(in_tensor), note=ROWS_UNWRITTEN), decode=_even_rows),
    T + "test_nki_nl_load_transpose2d.py::example_kernel_0": case("f32[2048,128]", ref=lambda in_tensor: _t(in_tensor)),
    T + "test_nki_nl_load_transpose2d.py::example_kernel_1": case("f32[2048,128]", ref=lambda in_tensor: _t(in_tensor)),
    T + "test_nki_nl_mgrid.py::example_kernel": case("f32[128,512]", ref=lambda in_tensor: _f(in_tensor)),
    T + "test_nki_nl_mgrid.py::example_kernel_1": case("f32[128,512]", ref=lambda in_tensor: _f(in_tensor)),
    T + "test_nki_simulate_kernel.py::print_kernel": case("f32[3,4]", ref=lambda a_tensor: _f(a_tensor)),
    T + "test_nki_spmd_grid.py::nki_spmd_kernel": case("f32[4,2,1,1]", grid=(4, 2), ref=lambda a: _f(a)),
    T + "test_psum_modulo_alloc.py::allocated_loop_transpose": case(
        "f32[2048,1024]", "0:f32[1024,2048]", ref=lambda a_ptr: _t(a_ptr)),
    T + "test_sbuf_modulo_alloc.py::allocated_loop_transpose": case(
        "f32[2048,1024]", "0:f32[1024,2048]", ref=lambda a_ptr: _t(a_ptr)),
    # examples: the shapes of each file's __main__ or docstring
    **tutorial_rows(E + "average_pool2d/average_pool2d_nki_kernels.py::", MAMBA),
    E + "getting_started_baremetal.py::nki_tensor_add_kernel": case("f32[128,512]", "f32[128,512]", ref=_add_inputs),
    E + "getting_started_jax.py::nki_tensor_add_kernel": case("f32[128,512]", "f32[128,512]", ref=_add_inputs),
    E + "getting_started_torch.py::nki_tensor_add_kernel": case("f32[128,512]", "f32[128,512]", ref=_add_inputs),
    E + "index-case-1.py::tensor_split_kernel_": case(
        np.arange(20, dtype=np.float32).reshape(4, 5), note="the file's X, Y = 4, 5",
        ref=lambda in_tensor: (_f(in_tensor)[:, 0::2], _f(in_tensor)[:, 1::2])),
    E + "index-case-3.py::tensor_maxpool_kernel_": case(
        np.arange(72, dtype=np.float32).reshape(2, 6, 6), 2, ref=_maxpool),
    E + "layout-dynamic-loop.py::tensor_exp_kernel_": case("f32[256,512]", ref=lambda in_tensor: np.exp(_f(in_tensor))),
    # the file stores to out_tensor[i_p, i_f] but never defines i_f (the SDK's earlier copy of the
    # example did, `i_f = nl.arange(512)[None, :]`): Python fails at that line on any NKI
    E + "layout-loop.py::tensor_exp_kernel_": failing(
        "f32[256,512]", refusal="name 'i_f' is not defined",
        note="the example's own NameError: i_f is used and never assigned"),
    E + "layout-pass.py::tensor_exp_kernel_": case("f32[128,512]", ref=lambda in_tensor: np.exp(_f(in_tensor))),
    # the programming guide's counter-example (its __main__ sets shape (256, 512), "Previously
    # (128, 512)"): a 256-partition tile breaks the 128-partition limit, which layout-loop.py and
    # layout-pass.py then fix; the compiler rejects it, as neuronsim does at the load
    E + "layout-violation.py::tensor_exp_kernel_": failing(
        "f32[256,512]", refusal="256 partitions; at most 128 exist",
        note="the file's shape: the guide shows it violating the partition limit"),
    MM + "nki_matmul_basic_": case("bf16[128,64]", "bf16[128,512]", ref=_matmul),
    MM + "nki_matmul_tiled_": case("bf16[512,256]", "bf16[512,1024]", ref=_matmul),
    MM + "nki_matmul_hoist_load_": case("bf16[512,256]", "bf16[512,1024]", ref=_matmul),
    MM + "nki_matmul_block_free_dimension_": case("bf16[512,512]", "bf16[512,1024]", ref=_matmul),
    MM + "nki_matmul_fully_optimized_": case("bf16[1024,2048]", "bf16[1024,1024]", ref=_matmul,
                                             note="one block of each: K 8 x 128, M 16 x 128, N 2 x 512"),
    E + "simulate/nki_simulate_example.py::add_kernel": case(
        "f32[128,512]", "f32[128,512]", ref=lambda a_ptr, b_ptr: _f(a_ptr) + _f(b_ptr)),
    E + "tensor_addition/tensor_addition_nki_kernels.py::nki_tensor_add": case("bf16[256,1024]", "bf16[256,1024]",
                                                                               ref=_add_inputs),
    E + "transpose2d/transpose2d_nki_kernels.py::tensor_transpose2D_kernel_": case(
        np.arange(60, dtype=np.int8).reshape(5, 12), (3, 4), ref=_transpose2d),
    # the MX deep dive: K x M stationary, K x N moving, MX data packed four to a word
    MX + "kernel_offline_quantized_mx_matmul": case(*MX_OFFLINE_ARGS, api("nl.float8_e5m2_x4"), ref=_mx_offline),
    MX + "kernel_on_device_quantize_matmul_mx": case(
        *MX_OFFLINE_ARGS[:2], "bf16[128,2048]", api("nl.float8_e5m2_x4"), api("nl.float8_e5m2_x4"),
        ref=_mx_on_device, tolerance=MX_QUANTIZED),
    # the unquantized tiles: K x 4 = 512 rows (the kernel's assert), M 128, N 512
    MX + "kernel_copy_strided_quantize_matmul_mx": case(
        "bf16[512,128]", "bf16[512,512]", api("nl.float8_e5m2_x4"), ref=_matmul_mx, tolerance=MX_QUANTIZED),
    MX + "kernel_copy_strided_quantize_matmul_mx_packed_scale": case(
        "bf16[512,128]", "bf16[512,512]", api("nl.float8_e5m2_x4"), ref=_matmul_mx, tolerance=MX_QUANTIZED),
}
