"""The DMA queue of every kind of transfer, as docs/nki.md's table says (the trigger engine
decides the queue; nl.load / nl.store are SP-triggered, none of the docs naming another)."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import load_kernel, trace

KERNEL = '''import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def transfers(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    nl.store(out, value=t)
    u = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    u[...] = a
    nisa.dma_copy(dst=u, src=a)
    nisa.dma_copy(dst=u, src=a, dge_mode=nisa.dge_mode.unknown)
    nisa.dma_copy(dst=u, src=a, engine=nisa.scalar_engine)
    nisa.dma_copy(dst=u, src=a, engine=nisa.gpsimd_engine)
    nisa.dma_copy(dst=u, src=a, engine=nisa.scalar_engine, dge_mode=nisa.dge_mode.swdge)
    nisa.dma_copy(dst=u, src=a, dge_mode=nisa.dge_mode.hwdge)
    nisa.dma_copy(dst=u, src=a, engine=nisa.scalar_engine, dge_mode=nisa.dge_mode.hwdge)
    nisa.dma_copy(dst=u, src=a, engine=nisa.vector_engine)
    return out
'''

SP, ACT, POOL = ("sp", "dma0"), ("act", "dma1"), ("pool", "dma2")


@pytest.mark.parametrize("machine, hwdge", [("trn1", None), ("trn2", "hwdge")])
def test_each_transfer_on_the_queue_of_its_trigger(tmp_path, monkeypatch, machine, hwdge):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dmas.py").write_text(KERNEL)
    traced = trace(load_kernel("dmas.py::transfers"), np.zeros((128, 8), np.float32), machine=machine)
    got = [(i.engine, i.queue, i.attrs.get("dge")) for i, _ in traced.program.instructions()]
    assert got == [(*SP, None), (*SP, None),  # nl.load, nl.store
                   (*SP, None),  # a tile assigned from DRAM
                   (*SP, None), (*SP, None),  # dma_copy: no engine, dge_mode unknown (the compiler's choice)
                   (*ACT, None), (*POOL, None),  # engine= picks the trigger
                   (*POOL, "swdge"),  # software DGE runs on POOL whatever engine= says
                   (*SP, hwdge), (*ACT, hwdge),  # hardware DGE on SP or ACT, where the machine has it
                   (*SP, None)]  # an engine that triggers no DMA: SP
