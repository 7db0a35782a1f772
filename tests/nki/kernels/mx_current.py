"""Microscaling (MX) kernels, current NKI: ``nisa.quantize_mx`` on bf16 tiles, then
``nisa.nc_matmul_mx`` on the quantized tiles, and a matmul of packed fp4 data loaded as words."""

import nki
import nki.isa as nisa
import nki.language as nl


def _quantized(x, mx_dtype, scale_dtype=nl.uint8):
    """x [P, 4F] bf16 in HBM -> its packed tile [P, F] and a scale tile (one row per partition)."""
    P, F4 = x.shape
    source = nl.ndarray((P, F4), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=source, src=x)
    data = nl.ndarray((P, F4 // 4), dtype=mx_dtype, buffer=nl.sbuf)
    scale = nl.ndarray((P, F4 // 4), dtype=scale_dtype, buffer=nl.sbuf)
    nisa.memset(dst=scale, value=0)
    nisa.quantize_mx(dst=data, src=source, dst_scale=scale)
    return data, scale


def _quantize_matmul(stationary, moving, mx_dtype, scale_dtype=nl.uint8):
    """Quantize both operands, multiply them, and return the product and the quantized data."""
    K, M4 = stationary.shape
    N = moving.shape[1] // 4
    st_data, st_scale = _quantized(stationary, mx_dtype, scale_dtype)
    mv_data, mv_scale = _quantized(moving, mx_dtype, scale_dtype)
    product = nl.ndarray((M4 // 4, N), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul_mx(dst=product, stationary=st_data, moving=mv_data, stationary_scale=st_scale,
                      moving_scale=mv_scale)
    result = nl.ndarray((M4 // 4, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=result, src=product)
    out = nl.ndarray((M4 // 4, N), dtype=nl.float32, buffer=nl.shared_hbm, name="out")
    nisa.dma_copy(dst=out, src=result)
    codes = nl.ndarray((K, M4 // 4), dtype=mx_dtype, buffer=nl.shared_hbm, name="codes")
    nisa.dma_copy(dst=codes, src=st_data)
    scales = nl.ndarray((K, M4 // 4), dtype=scale_dtype, buffer=nl.shared_hbm, name="scales")
    nisa.dma_copy(dst=scales, src=st_scale)
    return out, codes, scales


@nki.jit
def quantize_matmul_e4m3(stationary, moving):
    return _quantize_matmul(stationary, moving, nl.float8_e4m3fn_x4)


@nki.jit
def quantize_matmul_e5m2(stationary, moving):
    return _quantize_matmul(stationary, moving, nl.float8_e5m2_x4)


@nki.jit
def quantize_matmul_e8m0_scales(stationary, moving):
    """As quantize_matmul_e4m3 with float8_e8m0fnu scale tiles (the OCP type) instead of uint8."""
    return _quantize_matmul(stationary, moving, nl.float8_e4m3fn_x4, nl.float8_e8m0fnu)


@nki.jit
def packed_fp4_matmul(stationary_words, stationary_scale, moving_words, moving_scale):
    """Packed fp4 words (uint16, four lanes each) copied bit for bit into fp4_x4 tiles; scales
    [K / 8, F] for one quadrant; the product accumulated twice into PSUM (2x the product)."""
    K, M = stationary_words.shape
    N = moving_words.shape[1]
    st = nl.ndarray((K, M), dtype=nl.float4_e2m1fn_x4, buffer=nl.sbuf)
    nisa.dma_copy(dst=st, src=stationary_words)
    mv = nl.ndarray((K, N), dtype=nl.float4_e2m1fn_x4, buffer=nl.sbuf)
    nisa.dma_copy(dst=mv, src=moving_words)
    st_scale = nl.ndarray((K // 8, M), dtype=nl.uint8, buffer=nl.sbuf)
    nisa.dma_copy(dst=st_scale, src=stationary_scale)
    mv_scale = nl.ndarray((K // 8, N), dtype=nl.uint8, buffer=nl.sbuf)
    nisa.dma_copy(dst=mv_scale, src=moving_scale)
    product = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul_mx(dst=product, stationary=st, moving=mv, stationary_scale=st_scale, moving_scale=mv_scale)
    nisa.nc_matmul_mx(dst=product, stationary=st, moving=mv, stationary_scale=st_scale, moving_scale=mv_scale,
                      accumulate=True)
    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=result, src=product)
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm, name="out")
    nisa.dma_copy(dst=out, src=result)
    return out


@nki.jit
def quantize_fp32_source(x):
    """Misuse: quantize_mx takes bf16 / fp16 sources only."""
    P, F4 = x.shape
    source = nl.ndarray((P, F4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=source, src=x)
    data = nl.ndarray((P, F4 // 4), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    scale = nl.ndarray((P, F4 // 4), dtype=nl.uint8, buffer=nl.sbuf)
    nisa.quantize_mx(dst=data, src=source, dst_scale=scale)  # refused: fp32 source
    return x


@nki.jit
def scale_tile_too_short(x):
    """Misuse: 64 data partitions keep scales in rows 0-3 and 32-35; a 4-row scale tile lacks them."""
    P, F4 = x.shape
    source = nl.ndarray((P, F4), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=source, src=x)
    data = nl.ndarray((P, F4 // 4), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    scale = nl.ndarray((4, F4 // 4), dtype=nl.uint8, buffer=nl.sbuf)
    nisa.quantize_mx(dst=data, src=source, dst_scale=scale)  # refused: short scale tile
    return x


@nki.jit
def shared_scale_tile(stationary, moving):
    """Both operands' scales in one tile: the stationary's in rows 0-3, the moving's in rows 4-7
    of each quadrant (a scale view may start inside a quadrant)."""
    K, M4 = stationary.shape
    N4 = moving.shape[1]
    st_src = nl.ndarray((K, M4), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=st_src, src=stationary)
    mv_src = nl.ndarray((K, N4), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=mv_src, src=moving)
    scales = nl.ndarray((K, N4 // 4), dtype=nl.uint8, buffer=nl.sbuf)
    nisa.memset(dst=scales, value=0)
    st = nl.ndarray((K, M4 // 4), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    mv = nl.ndarray((K, N4 // 4), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    nisa.quantize_mx(dst=st, src=st_src, dst_scale=scales[0:, :M4 // 4])
    nisa.quantize_mx(dst=mv, src=mv_src, dst_scale=scales[4:, :])
    product = nl.ndarray((M4 // 4, N4 // 4), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul_mx(dst=product, stationary=st, moving=mv, stationary_scale=scales[0:, :M4 // 4],
                      moving_scale=scales[4:, :])
    result = nl.ndarray((M4 // 4, N4 // 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=result, src=product)
    out = nl.ndarray((M4 // 4, N4 // 4), dtype=nl.float32, buffer=nl.shared_hbm, name="out")
    nisa.dma_copy(dst=out, src=result)
    scales_out = nl.ndarray((K, N4 // 4), dtype=nl.uint8, buffer=nl.shared_hbm, name="scales_out")
    nisa.dma_copy(dst=scales_out, src=scales)
    return out, scales_out
