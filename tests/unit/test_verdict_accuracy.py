"""The verdict's stated accuracy agrees with the accuracy file ``bench_published.py`` writes."""

from __future__ import annotations

from neuronsim.machine.sim.accuracy import load_accuracy
from neuronsim.verify.author.verdict import ACCURACY


def test_the_verdicts_held_out_figures_are_the_accuracy_files():
    stored = load_accuracy()
    assert stored is not None
    held = ACCURACY["held_out"]
    assert (held["within"], held["of"], held["tolerance"]) == (stored.within, stored.cases, stored.tolerance)
    low, high = held["ratio_range"]
    # the worst ratio is the case farthest from 1: one end of the range
    assert stored.worst_ratio in (low, high)
    assert low <= stored.median_ratio <= high
