"""Engines and instructions the pages rule out before some NeuronCore: a warning at the call,
the kernel run as modelled (a kernel that names no target is traced for trn1, and public
kernels written for trn2 / trn3 name none).  A probe of kernel mistakes found them silent."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import load_kernel, trace

KERNELS = '''
import nki
import nki.isa as nisa
import nki.language as nl


def _go(x, body, dtype=nl.float32):
    t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    r = nl.ndarray(x.shape, dtype=dtype, buffer=nl.sbuf)
    body(r, t)
    o = nl.ndarray(x.shape, dtype=dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=o, src=r)
    return o


@nki.jit
def copy_on_act(x):
    return _go(x, lambda r, t: nisa.tensor_copy(dst=r, src=t, engine=nisa.scalar_engine))


@nki.jit
def rng_on_gpsimd(x):
    return _go(x, lambda r, t: nisa.rng(dst=r, engine=nisa.gpsimd_engine), nl.uint32)


@nki.jit(platform_target="trn2")
def subtract_on_act(x):
    return _go(x, lambda r, t: nisa.tensor_scalar(dst=r, data=t, op0=nl.subtract, operand0=1.0,
                                                  engine=nisa.scalar_engine))


@nki.jit
def scalar_bias(x):
    return _go(x, lambda r, t: nisa.activation(dst=r, op=nl.exp, data=t, bias=1.0))


def _accumulate_onto(x, first):
    s = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=s, value=1.0)
    m = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=m, src=x)
    p = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.psum)
    first(p, s, m)
    nisa.nc_matmul(dst=p, stationary=s, moving=m, accumulate=True)
    r = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=r, src=p)
    o = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=o, src=r)
    return o


@nki.jit
def accumulate_onto_a_copy(x):
    return _accumulate_onto(x, lambda p, s, m: nisa.tensor_copy(dst=p, src=m))


@nki.jit
def accumulate_onto_a_memset(x):
    return _accumulate_onto(x, lambda p, s, m: nisa.memset(dst=p, value=0.0))


@nki.jit
def accumulate_onto_a_matmul(x):
    return _accumulate_onto(x, lambda p, s, m: nisa.nc_matmul(dst=p, stationary=s, moving=m, accumulate=False))


@nki.jit(platform_target="trn3")
def accumulate_onto_a_copy_v4(x):
    return _accumulate_onto(x, lambda p, s, m: nisa.tensor_copy(dst=p, src=m))


@nki.jit(platform_target="trn2")
def copy_on_act_v3(x):
    return _go(x, lambda r, t: nisa.tensor_copy(dst=r, src=t, engine=nisa.scalar_engine))
'''

CASES = {
    "copy_on_act": 'nisa.tensor_copy on the Scalar Engine traced for NeuronCore-v2: its page: "On NeuronCore v2, '
                   'tensor_copy is not supported on the Scalar Engine',
    "rng_on_gpsimd": 'nisa.rng on the GpSimd Engine traced for NeuronCore-v2: its page: "Supported engines: '
                     'NeuronCore-v2: Vector.',
    "subtract_on_act": 'nisa.tensor_scalar on the Scalar Engine traced for NeuronCore-v3: its page: "The Scalar '
                       'Engine on trn2 only supports some operator combinations',
    "scalar_bias": 'nisa.activation: bias is the number 1.0, and its page: "In NeuronCore-v2, the bias must be a '
                   '[N, 1] vector"',
    "accumulate_onto_a_copy": "nisa.nc_matmul(accumulate=True) onto p_",
    "accumulate_onto_a_memset": "which a non-matmul instruction wrote last: its page, \"On NeuronCore-v2 and "
                                "NeuronCore-v3, matmul accumulating into a PSUM location that was value-initialized",
}


@pytest.fixture
def kernels(tmp_path):
    (tmp_path / "k.py").write_text(KERNELS)
    return lambda name: f"{tmp_path / 'k.py'}::{name}"


@pytest.mark.parametrize("func", sorted(CASES))
def test_an_engine_the_page_rules_out_for_the_target_is_a_warning_at_the_call(kernels, func: str) -> None:
    traced = trace(load_kernel(kernels(func)), np.ones((128, 64), np.float32))
    (warning,) = [w for w in traced.call_warnings if w[1] == "generation"]
    assert warning[0].startswith("k.py:") and CASES[func] in warning[2], warning


@pytest.mark.parametrize("func", ["copy_on_act_v3", "accumulate_onto_a_matmul", "accumulate_onto_a_copy_v4"])
def test_the_same_call_where_the_page_allows_it_says_nothing(kernels, func: str) -> None:
    assert trace(load_kernel(kernels(func)), np.ones((128, 64), np.float32)).call_warnings == ()
