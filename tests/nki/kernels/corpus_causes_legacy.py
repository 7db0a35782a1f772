"""Legacy-API kernels for corpus causes (issue 28), written as the nki-samples attention
tutorial writes its direct allocations."""

import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def rotated_transposes(v, identity):
    """The attention tutorial's v transposes (attn_fwd_v9 at its test's seqlen 4096): a PSUM
    tensor placed by mod_alloc on fewer banks than the loop has tiles, each bank reused by a
    later iteration once its copy has read it."""
    tiles = v.shape[1] // 128
    ident = nl.load(identity)
    v_sb = nl.load(v)
    v_psum_t = nl.ndarray((tiles, nl.par_dim(128), 128), dtype=nl.float32,
                          buffer=ncc.psum.mod_alloc(base_bank=0, num_bank_tiles=(2,)))
    v_sb_t = nl.ndarray((tiles, nl.par_dim(128), 128), dtype=v.dtype,
                        buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(tiles,)))
    out = nl.ndarray((v.shape[1], 128), dtype=v.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(tiles):
        v_psum_t[i] = nisa.nc_matmul(v_sb[:, nl.ds(i * 128, 128)], ident)
        v_sb_t[i] = nisa.tensor_copy(v_psum_t[i], dtype=v.dtype)  # the read a later slot reuse waits for
        nl.store(out[nl.ds(i * 128, 128), :], v_sb_t[i])
    return out


class OffsetCounter:
    """A module-level allocator as the attention tutorial's SBufAllocator: each call bumps it."""

    def __init__(self):
        self.offset = 0

    def take(self, size):
        start, self.offset = self.offset, self.offset + size
        return start


COUNTER = OffsetCounter()


@nki.jit
def module_state_on_retry(x):
    """The loop takes its variable as a Python int (not affine), so neuronsim traces again with
    the loop unrolled; NKI traces once, so the counter must read 0 in the trace that counts."""
    base = float(COUNTER.take(64))
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // 32):
        tile = nl.load(x[nl.ds(int(i) * 32, 32), :])
        nl.store(out[nl.ds(i * 32, 32), :], tile + base)
    return out


@nki.jit
def unrolled_blocks(v, identity):
    """The same transposes with the blocks picked by constants (the tutorial's qk and
    scores_psum_t, indexed by unrolled loops): blocks of one allocation reusing a bank."""
    tiles = v.shape[1] // 128
    ident = nl.load(identity)
    v_sb = nl.load(v)
    v_psum_t = nl.ndarray((tiles, nl.par_dim(128), 128), dtype=nl.float32,
                          buffer=ncc.psum.mod_alloc(base_bank=0, num_bank_tiles=(2,)))
    v_sb_t = nl.ndarray((tiles, nl.par_dim(128), 128), dtype=v.dtype,
                        buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(tiles,)))
    out = nl.ndarray((v.shape[1], 128), dtype=v.dtype, buffer=nl.shared_hbm)
    for i in nl.static_range(tiles):
        v_psum_t[i] = nisa.nc_matmul(v_sb[:, nl.ds(i * 128, 128)], ident)
        v_sb_t[i] = nisa.tensor_copy(v_psum_t[i], dtype=v.dtype)
        nl.store(out[nl.ds(i * 128, 128), :], v_sb_t[i])
    return out
