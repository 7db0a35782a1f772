"""Each NKI finding against the documented behaviour of its test kernel
(``tests/nki/kernels/findings_semantics.py``; the doc words in ``docs/nki-checks.md``), and the
findings' memory on a kernel of 30k+ instances (``tests/nki/kernels/findings_scale.py``)."""

from __future__ import annotations

import tracemalloc

import pytest

from neuronsim.machine.order.stream import stream_of
from neuronsim.verify.nki.findings import nki_findings
from neuronsim_tests.nki_kit import GROUP_KERNELS, ROOT, kernel_module, line_of, trace_file

KERNELS = GROUP_KERNELS / "findings_semantics.py"
EXPECTED = {  # kernel -> (kind, severity) of its findings
    "scan_affine": [("carried", "error")] * 2,  # the carry read across iterations, and written by each
    "scan_sequential": [],
    "sum_sbuf": [("sbuf-accumulate", "warning")],
    "sum_into_psum": [("psum-accumulate", "warning")],
    "matmul_psum": [],
    "matmul_psum_read_per_tile": [("carried", "error")],  # the partial sums read inside the loop they cross
    "clobber": [("allocation", "error")],
    "placed_apart": [],
}


def _findings(func: str):
    return nki_findings(trace_file(KERNELS, func, kernel_module(KERNELS).inputs(0)).program)


@pytest.mark.parametrize("func", sorted(EXPECTED))
def test_each_kernel_gets_the_findings_its_documentation_says(func: str) -> None:
    assert [(f.kind, f.severity) for f in _findings(func)] == EXPECTED[func]


def test_the_carried_scan_names_both_lines_at_distance_one() -> None:
    found, overwrite = sorted(_findings("scan_affine"), key=lambda f: f.dependence)  # RAW, then WAW
    assert (found.dependence, overwrite.dependence) == ("RAW", "WAW")
    copy = f"findings_semantics.py:{line_of(KERNELS, 'nisa.tensor_copy(dst=carry')}"
    assert overwrite.first.endswith(f"{copy} [k=0]") and overwrite.second.endswith(f"{copy} [k=1]")
    assert found.first.endswith(f"findings_semantics.py:{line_of(KERNELS, 'nisa.tensor_copy(dst=carry')} [k=0]")
    assert found.second.endswith(f"findings_semantics.py:{line_of(KERNELS, 'nisa.tensor_tensor_scan(')} [k=1]")
    assert (found.loop, found.distance, found.tensors) == ("k", 1, found.tensors) and found.tensors


def test_the_accumulate_warning_cites_both_sources() -> None:
    (found,) = _findings("sum_sbuf")
    text = found.line()
    assert text.startswith("warning:") and "aws-neuron-sdk#1051" in text and "affine_range docs" in text


def test_a_non_matmul_add_into_psum_is_warned_of_and_says_so() -> None:
    (found,) = _findings("sum_into_psum")
    text = found.line()
    assert text.startswith("warning: += into PSUM by an instruction other than a matmul") and "#1051" in text


def test_a_psum_accumulation_read_inside_the_loop_it_crosses_names_the_reader() -> None:
    (found,) = _findings("matmul_psum_read_per_tile")
    reader = f"findings_semantics.py:{line_of(KERNELS, 'nisa.tensor_copy(dst=tile_out, src=acc)')}"
    assert (found.loop, found.dependence) == ("n", "RAW") and "[n=0, k=" in found.first and "[n=1, k=0]" in found.second
    assert f"{reader} [n=0] reads it inside the loop" in found.describe()


def test_every_test_kernel_is_cited_in_the_checks_page() -> None:
    page = (ROOT / "docs" / "nki-checks.md").read_text()
    assert all(f"`{func}`" in page for func in EXPECTED)


def test_findings_of_a_30k_instance_kernel_run_in_bounded_memory() -> None:
    scale = GROUP_KERNELS / "findings_scale.py"
    traced = trace_file(scale, "many_sums", kernel_module(scale).inputs(8, 2048), outer=8, inner=2048)
    assert len(stream_of(traced.program)) > 30_000
    tracemalloc.start()
    try:
        found = nki_findings(traced.program)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [f.kind for f in found] == ["sbuf-accumulate"]
    # measured 7 MiB; the pair search took > 1.6 GB at half the size
    assert peak < 64 * 2**20, f"{peak / 2**20:.0f} MiB"


@pytest.mark.parametrize("func", sorted(EXPECTED))
def test_gathering_a_footprints_cells_at_once_finds_what_slicing_them_run_by_run_finds(func: str, monkeypatch) -> None:
    """The carried check reads the last writers of a footprint of many byte runs in one gather
    (``carried._SPANS_ONE_BY_ONE``); forced on every footprint, and off, the findings agree."""
    from neuronsim.verify.nki import carried

    def described(threshold: int) -> list[str]:
        monkeypatch.setattr(carried, "_SPANS_ONE_BY_ONE", threshold)
        return [f.describe() for f in _findings(func)]

    assert described(0) == described(1 << 30) == described(4)
