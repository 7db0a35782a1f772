"""A spill the allocator adds is charged to the line that declared the tile it spills (probe_t:
the spills of a tutorial attention's PSUM scores held a quarter of its critical path as
'(no kernel line)', and an author could not tell which tile spilled).  The transfers carry the
tile's declaration as their ``x-source``, its call saying what they are."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from neuronsim.machine.nki import load_kernel
from neuronsim.nki.line_profile import NO_LINE, profile_kernel

KERNEL = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def keep_all(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    tiles = []
    for k in range(8):
        t = nl.ndarray((128, 8192), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[k * 128:(k + 1) * 128, :])
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
        tiles.append(t)
    for k in range(8):
        nisa.dma_copy(dst=out[k * 128:(k + 1) * 128, :], src=tiles[k])
    return out
'''
DECLARED = KERNEL.splitlines().index("        t = nl.ndarray((128, 8192), dtype=x.dtype, buffer=nl.sbuf)") + 1


def test_the_spills_of_tiles_live_together_are_charged_to_their_declaration(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(KERNEL)
    kernel = load_kernel(f"{tmp_path / 'k.py'}::keep_all")
    profile, _report = profile_kernel(kernel, np.ones((8 * 128, 8192), np.float32))  # 8 x 32 KiB a partition
    lines = {figures.where: figures for figures in profile.lines}
    assert NO_LINE not in lines, lines[NO_LINE]
    declared = lines[f"k.py:{DECLARED}"]
    assert any(call.endswith("(a spill)") for call in declared.calls) and declared.dma_bytes > 0
