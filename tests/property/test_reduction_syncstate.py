"""SyncState's two banks, assignIds, and the async window of rule 2."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from pyroaring import BitMap

from neuronsim.machine.formats.program_json import load_program
from neuronsim.machine.ir.program import Dep, Instruction, Program
from neuronsim.machine.model.presets import PRESETS
from neuronsim.machine.order.unroll import unroll
from neuronsim.passes.dep_reduction import instance_waits
from neuronsim.testing.reduction import redundant_waits_syncstate
from neuronsim.passes.analysis.syncstate import SyncState, assign_ids

frontiers = st.lists(st.integers(-1, 40), min_size=8, max_size=8)


@given(frontiers, frontiers)
def test_merge_of_prefixes_is_the_componentwise_max(a, b):
    s = SyncState.from_frontier(a)
    s.merge(SyncState.from_frontier(b))
    assert s.frontier() == tuple(max(x, y) for x, y in zip(a, b))
    assert all(bm == BitMap(range(f + 1)) for bm, f in zip(s.completed, s.frontier()))


@given(frontiers, st.lists(st.tuples(st.integers(5, 7), st.integers(0, 60)), max_size=12))
def test_minimize_keeps_exactly_the_transfers_not_known_complete(done, issued):
    s = SyncState.from_frontier(done)
    for engine, pos in issued:
        s.set_completed(engine, pos, issued=True)
    s.minimize()
    for engine in range(8):
        assert s.window(engine) == sorted({p for e, p in issued if e == engine and p > done[engine]})


def test_remove_and_copy_are_independent():
    s = SyncState(8)
    s.set_completed(1, 3)
    t = s.copy()
    s.remove(1, 3)
    assert not s.has_completed(1, 3) and t.has_completed(1, 3) and s != t


def test_assign_ids_numbers_each_engine_in_program_order():
    program = load_program("examples/matmul_k_loop.json")
    ids = assign_ids(unroll(program), PRESETS["trn1"])
    per_engine: dict[int, list[int]] = {}
    for engine, position in zip(ids.engine, ids.position):
        per_engine.setdefault(engine, []).append(position)
    assert all(p == list(range(len(p))) for p in per_engine.values())
    assert {ids.engines[e]: len(p) for e, p in per_engine.items()} == {
        "dma0": 4, "dma1": 4, "pe": 4, "dve": 1, "dma2": 1}
    assert ids.counts == (4, 0, 1, 0, 0, 4, 4, 1)


def test_async_window_is_bank_b():
    """POOL triggers ``load``: POOL's own later wait on it is in POOL's async window (it knows
    the trigger, not the completion); SP's wait on it is not (SP knows nothing of it)."""
    body = (Instruction("load", "pool", "dma_copy", queue="dma1"),
            Instruction("fill", "pool", "memset", deps=(Dep("load"),)),
            Instruction("store", "sp", "dma_copy", queue="dma2", deps=(Dep("load"),)))
    waits = instance_waits(Program({}, body))
    redundant, in_window = redundant_waits_syncstate(waits)
    assert list(redundant) == [0, 0]
    assert list(in_window) == [1, 0]


def test_a_completed_transfer_leaves_the_window():
    """Once ``fill`` waited for ``load``, ``after`` (also on POOL) knows it complete."""
    body = (Instruction("load", "pool", "dma_copy", queue="dma1"),
            Instruction("fill", "pool", "memset", deps=(Dep("load"),)),
            Instruction("after", "pool", "memset", deps=(Dep("load"),)))
    redundant, in_window = redundant_waits_syncstate(instance_waits(Program({}, body)))
    assert list(redundant) == [0, 1] and list(in_window) == [1, 0]
