"""Kernels using constructs neuronsim refuses: each must stop the trace with one located line."""

import nki
import nki.collectives as cc
import nki.isa as nisa
import nki.language as nl


def _io(x):
    return nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)


def two_core_sendrecv(x):
    out = _io(x)
    t = nl.load(x)
    nisa.sendrecv(src=t, dst=t, send_to_rank=1, recv_from_rank=1, pipe_id=0)
    return out


def two_core_barrier(x):
    out = _io(x)
    nisa.core_barrier(x, (0, 1))
    return out


def collective(x):
    out = _io(x)
    cc.all_reduce(x, out)
    return out


def register_loop(x):
    out = _io(x)
    reg = nisa.register_alloc(0)
    for _ in range(reg):
        nl.store(out, nl.load(x))
    return out


def dynamic_loop(x):
    out = _io(x)
    for _ in nl.dynamic_range(4):
        nl.store(out, nl.load(x))
    return out


def unknown_name(x):
    out = _io(x)
    nl.store(out, nl.cumsum(nl.load(x)))
    return out


def misspelt_module(x):
    out = _io(x)
    nl.store(out, nki.langauge.exp(nl.load(x)))  # the NKI language guide's own typo
    return out


def rmw_dma(x):
    out = _io(x)
    t = nl.load(x)
    nisa.dma_copy(dst=out, src=t, dst_rmw_op=nl.multiply)  # the ISA adds only
    return out


def partition_and_free_reduce(x):
    out = _io(x)
    t = nl.load(x)
    nl.store(out[0:1, 0:1], nl.sum(t, axis=(0, 1)))
    return out


def mx_matmul(x):
    out = _io(x)
    t = nl.load(x)
    nisa.nc_matmul_mx(out, t, t, t, t)
    return out


def wide_dtype(x):
    return nl.ndarray(x.shape, dtype=nl.int64, buffer=nl.shared_hbm)


def python_bug(x):
    out = _io(x)
    t = nl.load(x)
    nl.store(out, t + "one")
    return out


def pe_reads_psum(x):
    out = _io(x)
    t = nl.load(x)
    acc = nl.ndarray((x.shape[1], x.shape[1]), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(acc, t, t)
    again = nl.ndarray((x.shape[1], x.shape[1]), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(again, acc, acc)
    return out


def too_many_partitions(x):
    return nl.ndarray((256, 4), dtype=nl.float32, buffer=nl.sbuf)


@nki.jit
def grid_inside(x):
    return grid_inside[2](x)


def data_dependent_branch(x):
    out = _io(x)
    t = nl.load(x)
    if nl.max(t, axis=1) > 0:
        nl.store(out, t)
    return out
