"""The ``carried`` finding on legacy ``affine_range`` loops the trace unrolls: unrolled, a loop
still promises independent iterations (``x-nki-unrolled-affine``, machine/nki/tracer.py), so a
value one iteration stores and the next loads back is the finding it is in a kept loop (it
used to vanish with the loop)."""

from __future__ import annotations

import pytest

from neuronsim.verify.nki.findings import nki_findings
from neuronsim_tests.nki_kit import GROUP_KERNELS, kernel_module, trace_file

KERNELS = GROUP_KERNELS / "unrolled_affine.py"


def _findings(func: str):
    traced = trace_file(KERNELS, func, kernel_module(KERNELS).inputs(0))
    assert any(loop for inst, loop in traced.program.instructions()) is False  # the loops were unrolled
    return [f for f in nki_findings(traced.program) if f.kind == "carried"]


def _line(needle: str) -> int:
    lines = [n for n, text in enumerate(KERNELS.read_text().splitlines(), 1) if needle in text]
    return lines[0]


def test_a_value_carried_through_hbm_is_found_in_the_unrolled_loop() -> None:
    found = _findings("running_sum_in_hbm")
    flows = [f for f in found if f.dependence == "RAW"]
    assert [(f.loop, f.distance, f.tensors) for f in flows] == [("k", 1, ("return0",))] * 3
    store, load = _line("nl.store(out, value=nl.add(total, part))"), _line("total = nl.load(out)")
    assert flows[0].first.endswith(f"unrolled_affine.py:{store} [k=0]")
    assert flows[0].second.endswith(f"unrolled_affine.py:{load} [k=1]")
    # and every iteration's store lands on the same output bytes: written over, one apart
    overwrites = [f for f in found if f.dependence == "WAW"]
    assert [(f.loop, f.distance) for f in overwrites] == [("k", 1)] * 3
    assert all(f.first.endswith(f"{store} [k={n}]") and f.second.endswith(f"{store} [k={n + 1}]")
               for n, f in enumerate(overwrites))


def test_the_inner_of_two_unrolled_loops_carries_within_one_outer_iteration() -> None:
    found = _findings("nested_inner_carries")
    assert {(f.loop, f.distance) for f in found} == {("k", 1)}
    assert all("[j=0, k=0]" in f.first or "[j=1, k=0]" in f.first for f in found)


@pytest.mark.parametrize("func", ["independent_halves", "carried_by_the_python_loop_only"])
def test_iterations_that_share_nothing_or_only_a_python_loop_carry_are_clean(func: str) -> None:
    assert _findings(func) == []


def test_the_outer_loop_carries_past_an_inner_unrolled_loop() -> None:
    # each iteration of the outer loop keeps its run: the inner loop's runs, counted while
    # the outer body ran, gave the outer loop's second iteration another run, and nothing
    # it carried was paired (a public GEMM's += into SBUF across its K blocks went unflagged)
    found = _findings("outer_carries_past_an_inner_loop")
    assert ("j", 1) in {(f.loop, f.distance) for f in found if f.dependence == "RAW"}


@pytest.mark.parametrize("func, loop, reader", [("psum_sums_read_per_tile", "m", "nl.store(out[m], value=nl.copy(acc)"),
                                                ("sbuf_sums_read_per_tile", "c", "nl.store(out[c], value=acc)")])
def test_an_accumulation_read_inside_the_loop_it_crosses_is_carried(func: str, loop: str, reader: str) -> None:
    # a reduction only while nothing reads the partial sum inside the loop: here every tile does
    found = [f for f in _findings(func) if f.dependence == "RAW"]
    assert found and {f.loop for f in found} == {loop}, [f.describe() for f in found]
    assert all(f"unrolled_affine.py:{_line(reader)}" in f.describe() and "reads it inside the loop" in f.describe()
               for f in found)
