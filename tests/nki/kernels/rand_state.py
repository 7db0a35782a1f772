"""``nisa.rand_get_state`` / ``rand_set_state`` (NeuronCore-v3+): a state saved and restored
continues one sequence of draws, as nki-library's experimental rng kernels rely on."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit(platform_target="trn2")
def draws_again(seeds):  # seeds (128, 6) uint32
    out = nl.ndarray((128, 16), dtype=nl.uint32, buffer=nl.shared_hbm)
    s = nl.ndarray((128, 6), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=seeds)
    nisa.rand_set_state(src_seeds=s, engine=nisa.gpsimd_engine)
    saved = nl.ndarray((128, 6), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.rand_get_state(dst=saved, engine=nisa.gpsimd_engine)
    first = nl.ndarray((128, 8), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.rng(dst=first, engine=nisa.gpsimd_engine)
    nisa.rand_set_state(src_seeds=saved, engine=nisa.gpsimd_engine)  # back to where the draws began
    again = nl.ndarray((128, 8), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.rng(dst=again, engine=nisa.gpsimd_engine)
    nisa.dma_copy(dst=out[:, 0:8], src=first)
    nisa.dma_copy(dst=out[:, 8:16], src=again)
    return out


@nki.jit(platform_target="trn2")
def too_few_words(seeds):
    out = nl.ndarray((128, 4), dtype=nl.uint32, buffer=nl.shared_hbm)
    saved = nl.ndarray((128, 4), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.rand_get_state(dst=saved)
    nisa.dma_copy(dst=out, src=saved)
    return out
