"""Row tiles of x times a weight whose tiles load inside the N and K loops, the same for every
row tile (legacy NKI): what ``load-elim{nests=true}`` hoists (tests/nki/test_load_hoist_nest.py,
tests/e2e/test_run_passes.py)."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def rows_times_weight(xT, w):
    K, M = xT.shape
    _, N = w.shape
    out = nl.ndarray((M, N), dtype=xT.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                xt = nl.load(xT[k * 128:(k + 1) * 128, i * 128:(i + 1) * 128])
                wt = nl.load(w[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                acc += nl.matmul(xt, wt, transpose_x=True)
            nl.store(out[i * 128:(i + 1) * 128, n * 512:(n + 1) * 512], value=nl.copy(acc, dtype=out.dtype))
    return out


def reference(xT, w):
    return {"return0": xT.T @ w}
