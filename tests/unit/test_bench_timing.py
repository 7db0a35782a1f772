"""``bench/bench_timing.py``: every published micro-case stays within 15 % of its figure (the
acceptance of issue 21).  These are simulated nanoseconds, deterministic, not wall time."""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_timing.py"


@cache
def bench():
    spec = importlib.util.spec_from_file_location("bench_timing", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("case", ["act_chain", "dma_shapes", "dma_efficiency"])
def test_each_published_case_is_within_the_tolerance(case):
    rows = getattr(bench(), case)()
    assert rows
    for name, _machine, simulated, published in rows:
        assert abs(simulated / published - 1) <= bench().TOLERANCE, (name, simulated, published)


def test_the_efficiency_curve_rises_with_bytes_per_partition():
    shares = [simulated for _name, _machine, simulated, _published in bench().dma_efficiency()]
    assert shares == sorted(shares) and shares[0] < 0.2 < 0.9 < shares[-1] <= 1.0
