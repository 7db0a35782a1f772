"""A ``reduce_cmd=reduce`` chain continues from the engine's 32-bit accumulator registers.
neuronsim keeps their last value in the tile the accumulation before wrote (its
``reduce_res``, a cumulative result's last column), so a chain continuing after the kernel
overwrote that tile, or from a tile of a narrower dtype, would continue from the wrong value:
each is refused at the continuing call's line (it ran, and a helper found sums 59 times too
large, and a max larger than every input)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, load_kernel, trace

KERNEL = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def chained(x):
    out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    junk = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    r1 = nl.ndarray((128, 1), dtype=DTYPE, buffer=nl.sbuf)
    r2 = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=junk, op=nl.exp, data=t, reduce_op=nl.add, reduce_res=r1,
                    reduce_cmd=nisa.reduce_cmd.reset_reduce)
    BETWEEN
    nisa.activation(dst=junk, op=nl.exp, data=t, reduce_op=nl.add, reduce_res=r2, reduce_cmd=nisa.reduce_cmd.reduce)
    nisa.dma_copy(dst=out, src=r2)
    return out
'''


@pytest.mark.parametrize("dtype, between, reason", [
    ("nl.float32", "nisa.memset(dst=r1, value=0.0)", "after the kernel wrote r1"),
    ("nl.bfloat16", "pass", "continuing from r1"),
])
def test_a_chain_that_would_continue_from_a_changed_tile_is_refused_at_its_line(tmp_path: Path, dtype: str,
                                                                               between: str, reason: str) -> None:
    path = tmp_path / "chain.py"
    path.write_text(KERNEL.replace("DTYPE", dtype).replace("BETWEEN", between))
    with pytest.raises(NkiError) as err:
        trace(load_kernel(f"{path}::chained"), np.zeros((128, 64), np.float32))
    line = next(k for k, text in enumerate(KERNEL.splitlines(), 1) if "reduce_cmd=nisa.reduce_cmd.reduce" in text)
    assert str(err.value).startswith(f"chain.py:{line}: nisa.activation(reduce_cmd=reduce) "), str(err.value)
    assert reason in str(err.value)


def test_a_chain_over_an_untouched_float32_tile_runs(tmp_path: Path) -> None:
    path = tmp_path / "chain.py"
    path.write_text(KERNEL.replace("DTYPE", "nl.float32").replace("BETWEEN", "pass"))
    traced = trace(load_kernel(f"{path}::chained"), np.zeros((128, 64), np.float32))
    assert traced.program is not None
