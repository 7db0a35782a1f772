"""The same ops in the legacy API (``neuronxcc.nki``), where they return their result tile:
``max8`` of ``nl.rand`` values, ``nc_find_index8``, ``nc_match_replace8``,
``tensor_partition_reduce``, ``range_select`` and ``dropout``; ``dst=`` forms of
``nc_stream_shuffle`` and ``tensor_scalar_cumulative``."""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def legacy_search(x, out_vals, out_index, out_replaced, out_sums):
    data = nl.load(x)
    vals = nisa.max8(src=data)
    nl.store(out_vals, value=vals)
    nl.store(out_index, value=nisa.nc_find_index8(data=data, vals=vals))
    nl.store(out_replaced, value=nisa.nc_match_replace8(data=data, vals=vals, imm=0.0))
    nl.store(out_sums, value=nisa.tensor_partition_reduce(np.add, data))


@nki.jit
def legacy_rand_top(out_vals):
    nl.store(out_vals, value=nisa.max8(src=nl.rand((32, 128))))


@nki.jit(platform_target="trn2")  # range_select: NeuronCore-v3 and newer
def legacy_select(x, lo, hi, out_kept, out_rolled, out_sums, out_dropped):
    data, low, high = nl.load(x), nl.load(lo), nl.load(hi)
    kept = nl.ndarray(data.shape, dtype=nl.float32, buffer=nl.sbuf)
    kept[...] = nisa.range_select(on_true_tile=data, comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=low,
                                  bound1=high, reduce_cmd=nisa.reduce_cmd.reset_reduce, reduce_op=np.max,
                                  range_start=0, on_false_value=nl.fp32.min)
    nl.store(out_kept, value=kept)
    rolled = nl.ndarray(data.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.nc_stream_shuffle(src=data, dst=rolled, shuffle_mask=[(i + 1) % 32 for i in range(32)])
    nl.store(out_rolled, value=rolled)
    sums = nl.ndarray(data.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_cumulative(src=data, dst=sums, op0=nl.add, op1=nl.add, imm0=0.0)
    nl.store(out_sums, value=sums)
    nl.store(out_dropped, value=nisa.dropout(data, prob=1.0))
