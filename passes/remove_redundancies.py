"""``remove-redundancies``: drop deps that other deps or engine order already imply (pass 75).

Runs between the two builders and prunes the Flow graph: a dep is redundant when, for every
instance it makes wait, the order it asks for (``E(target) <= T(waiter)``, rule 4) already
follows from the spec's rules 1-3 and the *other* deps.

Mode ``paths`` (default) is a thin call into the reduction (:mod:`neuronsim.passes.dep_reduction`):
``remove-redundancies`` is ``dep-reduction{split=false}`` over every kind, run where the seed
runs its pass 75, so the anti-dependence builder starts from the smallest Flow graph with the
same orders.  It never splits a dep into iteration ranges (that is a lowering decision for
the last reduction).  On a Flow-only graph the two passes therefore keep the same deps
whenever no dep is needed at some iterations only (the tests state it).

Mode ``engine`` only drops what rule 1 gives directly: deps on a non-DMA instruction of the
waiter's own sequencer (the sequencer completes it before triggering anything after it).

Contract
    requires: a valid program.
    guarantees: deps are a subset of the input's; the happens-before relation over trigger,
    start and end events of all instances is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np


from neuronsim.passes.dep_reduction import ANTI_KINDS, REORDER_KINDS, reduce_table
from neuronsim.passes.pipeline import Pass, PassContext, PipelineState

__all__ = ["RemoveRedundancies"]


@dataclass(frozen=True, slots=True)
class RemoveRedundancies(Pass):
    """Drop deps that the other deps and the engines' order already imply.

    Contract
        requires: a valid program.
        guarantees: the deps are a subset of the input's, and happens-before over the trigger,
        start and end of every instance is unchanged (``mode=paths`` drops every dep implied
        at all its instances; ``mode=engine`` only those rule 1 implies).
    """

    name: ClassVar[str] = "remove-redundancies"
    mode: str = "paths"

    def __post_init__(self) -> None:
        if self.mode not in ("paths", "engine"):
            raise ValueError(f"mode must be 'paths' or 'engine', got {self.mode!r}")

    def run(self, state: PipelineState, ctx: PassContext) -> PipelineState:
        stream, table = state.stream, state.deps
        if self.mode == "paths":
            reduced, result = reduce_table(stream, table, kinds=REORDER_KINDS | ANTI_KINDS, split=False, describe=False)
            rows = np.asarray(result.dropped_rows, np.int64)
            former, waiter = table.former[rows], table.waiter[rows]
            engine_order = int(np.count_nonzero(~stream.dma_x[former] & (stream.seq_x[former] == stream.seq_x[waiter])))
            ctx.count(self.name, "removed_engine_order", engine_order)
            ctx.count(self.name, "removed_path", len(rows) - engine_order)
        else:
            former, waiter = table.former, table.waiter
            same = (stream.seq_x[former] == stream.seq_x[waiter]) & ~stream.dma_x[former] & (table.distance == 0) \
                & (table.when < 0)
            reduced = table.select(~same)
            ctx.count(self.name, "removed_engine_order", int(np.count_nonzero(same)))
        ctx.count(self.name, "kept", len(reduced))
        return state.with_deps(reduced)

