"""The names public NKI kernels use, in the order of how many kernels use them (the NKI
frontend's coverage list): each is implemented in both API generations, or refused with a
located "is not supported (...)" line."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, standins, trace
from neuronsim.machine.nki.errors import Refused

#: Ranked by the number of public kernels using each name (aws-neuron-sdk, nki-samples,
#: nki-library), dtypes folded at the end.
RANKED = """
nl.ndarray nl.shared_hbm nki.jit nl.tile_size nl.sbuf nl.affine_range nl.load nl.store nl.add nl.program_id
nisa.dma_copy nisa.nc_matmul nl.psum nl.multiply nl.num_programs nisa.tensor_copy nisa.tensor_tensor
nl.program_ndim nl.hbm nisa.get_nc_version nisa.memset nisa.nc_version nisa.activation nl.private_hbm
nisa.tensor_scalar nl.silu nl.ds nl.gelu nl.gelu_apprx_sigmoid nl.gelu_apprx_tanh nl.sequential_range nl.copy
nl.maximum nisa.nc_transpose nl.arange nl.NKIObject nisa.tensor_reduce nl.exp nl.minimum nisa.dma_transpose
nl.par_dim nisa.scalar_engine nisa.nc_stream_shuffle nl.mgrid nisa.scalar_tensor_tensor nisa.vector_engine
nl.zeros nl.subtract nisa.iota nisa.activation_reduce nisa.sendrecv nisa.constants.oob_mode nisa.core_barrier
nl.static_range nisa.reciprocal nisa.quantize_mx nisa.nc_matmul_mx nl.rsqrt nl.square nisa.dma_compute
nki.dtype nl.shared_identity_matrix nl.max nl.sum nisa.tensor_scalar_reduce nisa.dge_mode nki.benchmark
nisa.affine_select nl.shared_constant nisa.register_load nisa.register_alloc
nl.float32 nl.bfloat16 nl.float16 nl.float8_e4m3 nl.float8_e5m2 nl.float8_e4m3fn_x4 nl.float8_e5m2_x4
nl.int8 nl.int16 nl.int32 nl.uint8 nl.uint16 nl.uint32 nl.bool_
""".split()

#: Also common, outside the count: more calls kernels use, and the enums / engines.
COMMON = """
nki.baremetal nl.full nl.ones nl.zeros_like nl.divide nl.tanh nl.sigmoid nl.relu nl.log nl.sqrt nl.abs
nl.negative nl.mean nl.matmul nl.transpose nl.softmax nl.broadcast_to nl.load_transpose2d nl.equal nl.less
nl.greater_equal nl.power nl.reciprocal nl.where nl.device_print nisa.bn_stats nisa.bn_aggr
nisa.tensor_tensor_scan nisa.gpsimd_engine nisa.tensor_engine nisa.engine nisa.oob_mode nisa.reduce_cmd
nl.empty_like nl.not_equal nl.greater nl.less_equal nl.logical_and nl.min nl.prod nl.sign nki.profile
""".split()

#: The current API implements every ranked name (two-core sendrecv / core_barrier too:
#: machine/nki/cores.py); the legacy API refuses the MX ops, DMA compute and the two-core calls
#: (only their current forms are modelled).
REFUSED_BY = {"current": set(), "legacy": {"nisa.quantize_mx", "nisa.nc_matmul_mx", "nisa.dma_compute",
                                          "nisa.sendrecv", "nisa.core_barrier"}}

_MODULES = {"current": {"nl": "nki.language", "nisa": "nki.isa", "nki": "nki"},
            "legacy": {"nl": "neuronxcc.nki.language", "nisa": "neuronxcc.nki.isa", "nki": "neuronxcc.nki"}}


def _resolve(modules: dict, generation: str, name: str):
    alias, *path = name.split(".")
    value = modules[_MODULES[generation][alias]]
    for part in path:
        value = getattr(value, part)
    return value


@pytest.mark.parametrize("generation", ["current", "legacy"])
def test_every_ranked_name_is_implemented_or_refused(generation):
    assert len(RANKED) + len(COMMON) >= 120 and len(set(RANKED + COMMON)) == len(RANKED + COMMON)
    refused = set()
    with standins() as modules:
        for name in RANKED + COMMON:
            value = _resolve(modules, generation, name)  # a real name always resolves (imports)
            if isinstance(value, Refused):  # refused when used
                with pytest.raises(NkiError) as err:
                    value()
                assert f"{name} is not supported (" in str(err.value), str(err.value)
                refused.add(name)
                continue
            assert value is not None or name.endswith("unknown_engine"), name
    assert refused == REFUSED_BY[generation]


def test_each_ranked_call_traces():
    """The implemented calls of the list, together in one current-API kernel, trace."""
    with standins():
        import nki.isa as nisa
        import nki.language as nl

        def kernel(x):
            out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
            scratch = nl.ndarray((128, 64), dtype=nl.bfloat16, buffer=nl.private_hbm)
            assert nl.tile_size.pmax == 128 and nl.program_ndim() == 1 and nl.num_programs(0) == 2
            t = nl.load(x[nl.ds(nl.program_id(0) * 0, 128), :])
            acts = [f(t) for f in (nl.silu, nl.gelu, nl.gelu_apprx_sigmoid, nl.gelu_apprx_tanh, nl.exp, nl.rsqrt,
                                   nl.square)]
            s = nl.add(nl.multiply(acts[0], 2.0), nl.subtract(nl.maximum(t, acts[1]), nl.minimum(t, acts[2])))
            m = nl.max(s, axis=1, keepdims=True)
            total = nl.sum(s, axis=1, keepdims=True)
            d = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_scalar(d, s, nl.subtract, m, op1=nl.add, operand1=total)
            ps = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_transpose(ps, d)
            back = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(back, ps, engine=nisa.vector_engine)
            red = nl.ndarray((64, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_reduce(red, nl.add, back, axis=1)
            nisa.memset(back, 0.0)
            nisa.activation(back, nl.exp, back, bias=red, scale=1.0)
            rec = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.sbuf)
            nisa.reciprocal(rec, back)
            stt = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.sbuf)
            nisa.scalar_tensor_tensor(stt, rec, nl.multiply, 2.0, nl.add, back)
            acc = nl.ndarray((64, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation_reduce(stt, nl.copy, stt, reduce_op=nl.add, reduce_res=acc)
            nisa.tensor_scalar_reduce(stt, stt, nl.multiply, 0.5, nl.add, acc)
            ramp = nl.ndarray((128, 64), dtype=nl.int32, buffer=nl.sbuf)
            nisa.iota(ramp, [[1, 64]], 0, 1)
            eye = nl.load(nl.shared_identity_matrix(128, dtype=nl.float32))
            const = nl.load(nl.shared_constant(np.ones((128, 64), np.float32)))
            mm = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(mm, eye, const)
            z = nl.zeros((128, 64), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_tensor(z, mm, nl.copy(ramp, dtype=nl.float32), nl.add)
            nisa.dma_copy(dst=scratch, src=z, dge_mode=nisa.dge_mode.swdge)
            tr = nl.ndarray((64, 128), dtype=nl.bfloat16, buffer=nl.sbuf)  # (its page: src.dtype == dst.dtype)
            nisa.dma_transpose(tr, scratch)
            nisa.dma_copy(dst=out, src=z)
            for _ in nl.sequential_range(1):
                for _ in nl.static_range(1):
                    pass
            if nisa.get_nc_version() >= nisa.nc_version.gen2:
                nl.store(out, z)
            return out

        traced = trace(kernel, np.ones((128, 64), np.float32), grid=(2,))
    calls = {dict(i.extras["x-source"])["call"] for i, _ in traced.program.instructions()}
    assert {"nl.load", "nl.silu", "nisa.nc_transpose", "nisa.tensor_scalar_reduce", "nisa.iota", "nisa.dma_transpose",
            "nisa.activation_reduce", "nisa.scalar_tensor_tensor", "nl.zeros", "nisa.dma_copy"} <= calls
    queues = {i.queue for i, _ in traced.program.instructions() if i.op == "dma_copy"}
    assert queues == {"dma0", "dma2"}  # SP-triggered, and software DGE on POOL
