"""Cumulative and predicated ops, current NKI: ``nisa.tensor_scalar_cumulative`` (reset, load
and a chained ``reduce``), ``range_select`` (chained through the accumulator register),
``select_reduce`` and ``tensor_copy_predicated``."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def running(x, scale):
    """Running sum of ``x * scale``, running max from 0.5, and a sum continued by a 2nd call."""
    P, F = x.shape
    sums_out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="sums_out")
    peaks_out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="peaks_out")
    chained_out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="chained_out")
    data, factor = nl.load(x), nl.load(scale)
    sums = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_cumulative(dst=sums, src=data, op0=nl.multiply, op1=nl.add, imm0=factor)
    peaks = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_cumulative(dst=peaks, src=data, op0=nl.add, op1=nl.maximum, imm0=0.0, imm1=0.5,
                                  reduce_cmd=nisa.reduce_cmd.load_reduce)
    chained = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_cumulative(dst=chained, src=data, op0=nl.add, op1=nl.add, imm0=0.0)
    nisa.tensor_scalar_cumulative(dst=chained, src=data, op0=nl.add, op1=nl.add, imm0=0.0,
                                  reduce_cmd=nisa.reduce_cmd.reduce)
    nl.store(sums_out, sums)
    nl.store(peaks_out, peaks)
    nl.store(chained_out, chained)
    return sums_out, peaks_out, chained_out


@nki.jit(platform_target="trn2")  # range_select: NeuronCore-v3 and newer
def windows(x, lo, hi):
    """Columns ``lo <= j < hi`` kept (else fp32 min) and the row maximum over two calls, the
    second covering columns ``F .. 2F - 1`` of ``x + 1`` and continuing the first's maximum."""
    P, F = x.shape
    kept_out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="kept_out")
    top_out = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.shared_hbm, name="top_out")
    data, low, high = nl.load(x), nl.load(lo), nl.load(hi)
    kept = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.range_select(dst=kept, on_true_tile=data, comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=low,
                      bound1=high, reduce_cmd=nisa.reduce_cmd.reset_reduce, range_start=0,
                      on_false_value=nl.fp32.min)
    shifted = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=shifted, data=data, op0=nl.add, operand0=1.0)
    scratch = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    top = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.range_select(dst=scratch, on_true_tile=shifted, comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=low,
                      bound1=high, reduce_cmd=nisa.reduce_cmd.reduce, reduce_res=top, range_start=F,
                      on_false_value=nl.fp32.min)
    nl.store(kept_out, kept)
    nl.store(top_out, top)
    return kept_out, top_out


@nki.jit
def predicated(x, y, pred):
    """``x`` where ``pred`` else -5 (and its row max), the reverse with a per-partition
    ``on_false``, and copies of ``x`` / of 9.0 into ``y`` where ``pred``."""
    P, F = x.shape
    picked_out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="picked_out")
    top_out = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.shared_hbm, name="top_out")
    reversed_out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="reversed_out")
    copied_out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="copied_out")
    filled_out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="filled_out")
    data, mask = nl.load(x), nl.load(pred)
    picked = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    top = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.select_reduce(dst=picked, predicate=mask, on_true=data, on_false=-5.0, reduce_res=top,
                       reduce_cmd=nisa.reduce_cmd.reset_reduce, reduce_op=nl.maximum)
    fallback = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.iota(dst=fallback, pattern=[[0, 1]], offset=0, channel_multiplier=1)
    flipped = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.select_reduce(dst=flipped, predicate=mask, on_true=data, on_false=fallback, reverse_pred=True)
    copied = nl.load(y)
    nisa.tensor_copy_predicated(dst=copied, src=data, predicate=mask)
    filled = nl.load(y)
    nisa.tensor_copy_predicated(dst=filled, src=9.0, predicate=mask)
    nl.store(picked_out, picked)
    nl.store(top_out, top)
    nl.store(reversed_out, flipped)
    nl.store(copied_out, copied)
    nl.store(filled_out, filled)
    return picked_out, top_out, reversed_out, copied_out, filled_out


@nki.jit
def continues_nothing(x):
    """``reduce_cmd=reduce`` with no accumulation before it: refused at its line."""
    P, F = x.shape
    out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="out")
    data = nl.load(x)
    sums = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_cumulative(dst=sums, src=data, op0=nl.add, op1=nl.add, imm0=0.0,
                                  reduce_cmd=nisa.reduce_cmd.reduce)
    nl.store(out, sums)
    return out


@nki.jit
def absolute_max(x):
    """``nl.abs`` as a tensor_scalar operator (its operand ignored), reduced with max."""
    P, F = x.shape
    magnitudes_out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="magnitudes_out")
    peak_out = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.shared_hbm, name="peak_out")
    data = nl.load(x)
    magnitudes = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    peak = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_reduce(dst=magnitudes, data=data, op0=nl.abs, operand0=0.0, reduce_op=nl.maximum,
                              reduce_res=peak)
    nl.store(magnitudes_out, magnitudes)
    nl.store(peak_out, peak)
    return magnitudes_out, peak_out


@nki.jit
def window_on_trn1(x, lo, hi):
    """range_select traced for the default trn1 (NeuronCore-v2): its page says v3 and newer."""
    kept = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.range_select(dst=kept, on_true_tile=nl.load(x), comp_op0=nl.greater_equal, comp_op1=nl.less,
                      bound0=nl.load(lo), bound1=nl.load(hi), range_start=0, on_false_value=nl.fp32.min)
    return kept


@nki.jit(platform_target="trn2")
def window_filled_otherwise(x, lo, hi):
    """on_false_value other than FP32_MIN: its page says the hardware takes no other."""
    kept = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.range_select(dst=kept, on_true_tile=nl.load(x), comp_op0=nl.greater_equal, comp_op1=nl.less,
                      bound0=nl.load(lo), bound1=nl.load(hi), range_start=0, on_false_value=-5.0)
    return kept
