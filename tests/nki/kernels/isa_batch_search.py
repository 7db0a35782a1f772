"""Top-8 search and cross-partition ops, current NKI: ``nisa.max8``, ``nc_find_index8``,
``nc_match_replace8``, ``nc_stream_shuffle``, ``tensor_partition_reduce`` and an
SBUF-to-SBUF ``dma_transpose``."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def top8(x):
    """The 8 largest values of each row, their indices, and the row with them replaced by -1."""
    P, F = x.shape
    vals_out = nl.ndarray((P, 8), dtype=nl.float32, buffer=nl.shared_hbm, name="vals_out")
    index_out = nl.ndarray((P, 8), dtype=nl.uint32, buffer=nl.shared_hbm, name="index_out")
    replaced_out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="replaced_out")
    matched_out = nl.ndarray((P, 8), dtype=nl.uint32, buffer=nl.shared_hbm, name="matched_out")
    data = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=data, src=x)
    vals = nl.ndarray((P, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.max8(dst=vals, src=data)
    index = nl.ndarray((P, 8), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.nc_find_index8(dst=index, data=data, vals=vals)
    replaced = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    matched = nl.ndarray((P, 8), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.nc_match_replace8(dst=replaced, data=data, vals=vals, imm=-1.0, dst_idx=matched)
    nisa.dma_copy(dst=vals_out, src=vals)
    nisa.dma_copy(dst=index_out, src=index)
    nisa.dma_copy(dst=replaced_out, src=replaced)
    nisa.dma_copy(dst=matched_out, src=matched)
    return vals_out, index_out, replaced_out, matched_out


@nki.jit
def given_values(x, v):
    """Indices of the given 8 values per row (duplicates among them, one value absent)."""
    P, F = x.shape
    found_out = nl.ndarray((P, 8), dtype=nl.uint32, buffer=nl.shared_hbm, name="found_out")
    matched_out = nl.ndarray((P, 8), dtype=nl.uint32, buffer=nl.shared_hbm, name="matched_out")
    data = nl.load(x)
    vals = nl.load(v)
    found = nl.ndarray((P, 8), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.nc_find_index8(dst=found, data=data, vals=vals)
    replaced = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    matched = nl.ndarray((P, 8), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.nc_match_replace8(dst=replaced, data=data, vals=vals, imm=0.0, dst_idx=matched)
    nl.store(found_out, found)
    nl.store(matched_out, matched)
    return found_out, matched_out


@nki.jit
def shuffle(x, mask):
    """Each quadrant's partitions picked by ``mask`` (255: the destination's -7 stays)."""
    P, F = x.shape
    out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="out")
    src = nl.load(x)
    dst = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=dst, value=-7.0)
    nisa.nc_stream_shuffle(dst=dst, src=src, shuffle_mask=mask)
    nl.store(out, dst)
    return out


@nki.jit
def across_partitions(x):
    """Column sums and maxima over the partitions, and the tile transposed by a DMA."""
    P, F = x.shape
    sums_out = nl.ndarray((1, F), dtype=nl.float32, buffer=nl.shared_hbm, name="sums_out")
    maxima_out = nl.ndarray((1, F), dtype=nl.float32, buffer=nl.shared_hbm, name="maxima_out")
    flipped_out = nl.ndarray((F, P), dtype=nl.float32, buffer=nl.shared_hbm, name="flipped_out")
    data = nl.load(x)
    sums = nl.ndarray((1, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_partition_reduce(dst=sums, op=nl.add, data=data)
    maxima = nl.ndarray((1, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_partition_reduce(dst=maxima, op=nl.maximum, data=data)
    flipped = nl.ndarray((F, P), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_transpose(dst=flipped, src=data)
    nl.store(sums_out, sums)
    nl.store(maxima_out, maxima)
    nl.store(flipped_out, flipped)
    return sums_out, maxima_out, flipped_out


@nki.jit
def short_mask(x):
    """A shuffle mask of 31 entries (the ISA takes 32): refused at its line."""
    P, F = x.shape
    out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="out")
    src = nl.load(x)
    dst = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.nc_stream_shuffle(dst=dst, src=src, shuffle_mask=list(range(31)))
    nl.store(out, dst)
    return out


@nki.jit
def partition_broadcast(x, row, one, column):
    """On-chip tiles of one partition against 96 partitions: ``x + row``, ``x * one`` and
    ``column - row`` (both operands broadcast)."""
    P, F = x.shape
    summed_out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="summed_out")
    scaled_out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="scaled_out")
    outer_out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="outer_out")
    data, r, s, c = nl.load(x), nl.load(row), nl.load(one), nl.load(column)
    nl.store(summed_out, nl.add(data, r))
    nl.store(scaled_out, nl.multiply(data, s))
    nl.store(outer_out, nl.subtract(c, r))
    return summed_out, scaled_out, outer_out


@nki.jit
def integer_partition_broadcast(x, row):
    """An int32 row against the partitions of an int32 tile: PSUM's fp32 would round such
    values, so the row is spread by quadrant shuffles, not on PE."""
    out = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.shared_hbm)
    nl.store(out, nl.add(nl.load(x), nl.load(row)))
    return out


@nki.jit
def psum_row_broadcast(x, a, b):
    """A one-partition row still in PSUM (``a.T @ b``, ``[1, F]``) against the partitions of
    ``x``: PE reads only SBUF, so the row is spread by quadrant shuffles, which read PSUM."""
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    row = nl.matmul(nl.load(a), nl.load(b), transpose_x=True)
    nl.store(out, nl.add(nl.load(x), row))
    return out


@nki.jit
def strided_row_broadcast(x):
    """``.broadcast_to`` of every other element of a one-partition row, to 128 partitions."""
    out = nl.ndarray((128, x.shape[1] // 2), dtype=x.dtype, buffer=nl.shared_hbm)
    row = nl.load(x[0:1, :])
    nl.store(out, row[:, 0:x.shape[1]:2].broadcast_to((128, x.shape[1] // 2)))
    return out


@nki.jit
def patterned_iota():
    """``nisa.iota`` over a two-level pattern that is not one arithmetic run (a zero step repeats)."""
    out = nl.ndarray((4, 6), dtype=nl.int32, buffer=nl.shared_hbm, name="out")
    repeats = nl.ndarray((4, 6), dtype=nl.int32, buffer=nl.shared_hbm, name="repeats")
    t = nl.ndarray((4, 6), dtype=nl.int32, buffer=nl.sbuf)
    nisa.iota(dst=t, pattern=[[10, 2], [1, 3]], offset=5, channel_multiplier=100)
    r = nl.ndarray((4, 6), dtype=nl.int32, buffer=nl.sbuf)
    nisa.iota(dst=r, pattern=[[0, 2], [7, 3]])
    nl.store(out, t)
    nl.store(repeats, r)
    return out, repeats


@nki.jit
def gpsimd_scans(ids, flags):
    """``nisa.sequence_bounds`` of one row of segment ids and ``nisa.nonzero_with_count`` of
    32 rows of flags (rows 0 and 16 are scanned; the others keep the memset -9)."""
    bounds_out = nl.ndarray((1, 2, ids.shape[1]), dtype=nl.int32, buffer=nl.shared_hbm, name="bounds_out")
    found_out = nl.ndarray((32, flags.shape[1] + 1), dtype=nl.int32, buffer=nl.shared_hbm, name="found_out")
    bounds = nl.ndarray((1, 2, ids.shape[1]), dtype=nl.int32, buffer=nl.sbuf)
    nisa.sequence_bounds(dst=bounds, segment_ids=nl.load(ids))
    found = nl.ndarray((32, flags.shape[1] + 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=found, value=-9)
    nisa.nonzero_with_count(dst=found, src=nl.load(flags), index_offset=16, padding_val=-1)
    nl.store(bounds_out, bounds)
    nl.store(found_out, found)
    return bounds_out, found_out


@nki.jit
def column_stats(x):
    """``nl.sum`` / ``nl.max`` / ``nl.mean`` over the partition axis (POOL partition reductions)."""
    P, F = x.shape
    out = nl.ndarray((3, F), dtype=nl.float32, buffer=nl.shared_hbm, name="out")
    data = nl.load(x)
    nl.store(out[0:1, :], nl.sum(data, axis=0))
    nl.store(out[1:2, :], nl.max(data, axis=0))
    nl.store(out[2:3, :], nl.mean(data, axis=[0]))
    return out


@nki.jit
def gathers(x, idx):
    """Per-partition gathers by index tile: ``nisa.nc_n_gather`` and ``nl.gather_flattened``."""
    P, F = idx.shape
    picked_out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="picked_out")
    flat_out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="flat_out")
    data, index = nl.load(x), nl.load(idx)
    picked = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.nc_n_gather(dst=picked, data=data, indices=index)
    nl.store(picked_out, picked)
    nl.store(flat_out, nl.gather_flattened(data, index))
    return picked_out, flat_out
