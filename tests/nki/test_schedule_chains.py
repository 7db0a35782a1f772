"""``with_schedule`` edges against program order (tests/nki/kernels/schedule_chains.py): the
body is reordered once by every edge and the data order together, so a chain holds whichever
order its edges are listed in (one order was refused: the edges were applied one at a time,
the second undoing the first); two edges asking for each other are refused at their line."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, trace
from neuronsim_tests.nki_kernels import f32, kernel, run


def _activations(traced) -> list[int]:
    """Which input each activation reads, in program order (the tile each input was loaded into)."""
    insts = [inst for inst, _ in traced.program.instructions()]
    loaded = {inst.writes[0].tensor: "abc".index(inst.reads[0].tensor) for inst in insts
              if inst.op == "dma_copy" and inst.reads[0].tensor in ("a", "b", "c")}
    return [loaded[inst.reads[0].tensor] for inst in insts if inst.op == "activation"]


@pytest.mark.parametrize("func", ["chain_listed_first_to_last", "chain_listed_last_to_first"])
def test_a_chain_runs_in_its_order_whichever_way_it_is_listed(func):
    a, b, c = f32(128, 64), f32(128, 64, seed=1), f32(128, 64, seed=2)
    assert _activations(trace(kernel(f"schedule_chains.py::{func}"), a, b, c)) == [2, 1, 0]
    out = run(kernel(f"schedule_chains.py::{func}"), a, b, c)
    for k, x in enumerate((a, b, c)):
        np.testing.assert_allclose(out[f"return{k}"], np.exp(x), rtol=1e-6)


def test_edges_asking_for_each_other_are_refused_at_their_line():
    with pytest.raises(NkiError, match=r"schedule_chains.py:\d+: 'act1' cannot run after 'act0': the other orders "
                                       r"asked for, with the kernel's data order, put it first"):
        trace(kernel("schedule_chains.py::each_after_the_other"), f32(128, 64), f32(128, 64), f32(128, 64))
