"""A loop of one core left unfinished while the other core's loop state is in force (two
cores' traces hand a baton at each meeting, machine/nki/cores.py; nki-samples' blockwise matmul
backward on two cores leaves a loop by `return`): its generator, closed later, ends on the
lists it began on.  It popped the other core's and raised from a finaliser, nine warnings from
neuronsim's own files with no kernel line."""

from __future__ import annotations

from neuronsim.machine.nki.kernel_range import in_order
from neuronsim.machine.nki.tracer import Tracer


def test_an_unrolled_loop_closed_under_the_other_cores_lists_leaves_them_alone():
    tracer = Tracer("k", "trn1", "legacy", (1,), frozenset())
    with tracer.active():
        loop = tracer._unrolled("i", range(3), None)
        next(loop)
        mine, other = tracer.loops, [("j", 5)]
        tracer.loops = other  # the other core's, in force when this core's loop is closed
        loop.close()
        assert other == [("j", 5)] and mine == []


def test_a_sequential_run_closed_under_the_other_cores_lists_leaves_them_alone():
    tracer = Tracer("k", "trn1", "legacy", (1,), frozenset())
    with tracer.active():
        runs = in_order(tracer, iter(range(3)))
        next(runs)
        mine, other = tracer.in_order, [[9, 0, 0]]
        tracer.in_order = other
        runs.close()
        assert other == [[9, 0, 0]] and mine == []
