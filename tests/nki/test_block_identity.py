"""Every block of a direct allocation is a tile of its own (as NKI's compiler tells tiles
apart): a tensor of its own on its slot's bytes, or one tensor rotating over a kept loop when
the loop's variable alone picks the block."""

from __future__ import annotations

import numpy as np

from neuronsim.machine.ir.program import Loop
from neuronsim.machine.nki import load_kernel, trace

KERNEL = '''import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.language as nl


@nki.jit
def rotate_only(a):
    out = nl.ndarray((4, 128, 16), dtype=a.dtype, buffer=nl.shared_hbm)
    slots = ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,))
    buf = nl.ndarray((4, nl.par_dim(128), 16), dtype=a.dtype, buffer=slots)
    for t in nl.affine_range(4):
        buf[t] = nl.load(a[t])
        nl.store(out[t], value=nl.multiply(buf[t], 2.0))
    return out


@nki.jit
def rotate_then_constant(a):
    out = nl.ndarray((128, 16), dtype=a.dtype, buffer=nl.shared_hbm)
    slots = ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,))
    buf = nl.ndarray((4, nl.par_dim(128), 16), dtype=a.dtype, buffer=slots)
    for t in nl.affine_range(4):
        buf[t] = nl.load(a[t])
    nl.store(out, value=nl.multiply(buf[3], 2.0))
    return out
'''


def _trace(tmp_path, monkeypatch, func):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "blocks.py").write_text(KERNEL)
    return trace(load_kernel(f"blocks.py::{func}"), np.ones((4, 128, 16), np.float32))


def _placed(traced):
    return {n: t.offset for n, t in traced.program.tensors.items() if n.startswith("buf_")}


def test_the_loop_variable_alone_keeps_one_rotating_tensor(tmp_path, monkeypatch):
    traced = _trace(tmp_path, monkeypatch, "rotate_only")
    assert [n for n, _ in traced.program.walk() if isinstance(n, Loop)]
    (name, _offset), = _placed(traced).items()
    assert name.endswith("_rot") and traced.program.tensors[name].rotate.slots == 2


def test_blocks_read_by_constants_unroll_the_loop_into_a_tile_per_block(tmp_path, monkeypatch):
    traced = _trace(tmp_path, monkeypatch, "rotate_then_constant")
    assert not [n for n, _ in traced.program.walk() if isinstance(n, Loop)]
    assert _placed(traced) == {"buf_21_b0": 0, "buf_21_b1": 64, "buf_21_b2": 0, "buf_21_b3": 64}
