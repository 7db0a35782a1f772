"""The corpus run counts a subkernel (a kernel only another kernel calls) by the outcome of the
kernel whose case runs it (the rule in docs/nki.md's corpus run), as ``bench_corpus.py --records``
counts records given to it."""

from __future__ import annotations

import json
from pathlib import Path

from neuronsim_tests.bench_runs import run_bench
from neuronsim_tests.nki_corpus import nki_corpus

LIBRARY = "nki-library/src/nkilib_src/nkilib/core/moe/moe_tkg/"


def recounted(tmp_path: Path, records: list[dict]) -> tuple[list[dict], str]:
    """``bench_corpus.py --records`` of ``records``: the records it writes and its TOTAL line."""
    tmp_path.mkdir(exist_ok=True)
    given, written = tmp_path / "given.json", tmp_path / "written.json"
    given.write_text(json.dumps(records))
    done = run_bench("bench_corpus.py", "--records", str(given), "--json", str(written), timeout=120)
    total = done.stdout.strip().splitlines()[-1]
    assert total.startswith("TOTAL "), done.stdout
    return json.loads(written.read_text()), total


def _by_caller(tmp_path: Path, caller_outcome: str) -> dict:
    """The records the run makes of moe_tkg (with ``caller_outcome``) and one of its subkernels."""
    base = {"traced": True, "race_free": True, "simulated": True, "equal": False}
    records = [
        {**base, "kernel": LIBRARY + "moe_tkg.py::moe_tkg", "outcome": caller_outcome, "message": "at x.py:3"},
        {**base, "kernel": LIBRARY + "down_projection_mx.py::down_projection_mx", "outcome": "subkernel",
         "traced": False, "message": "called from another kernel"},
    ]
    resolved, total = recounted(tmp_path / "both", records)
    alone, _ = recounted(tmp_path / "alone", records[1:])
    return {"records": resolved, "total": total, "alone": alone}


def test_a_subkernel_of_a_kernel_that_ran_correctly_counts_as_ran(tmp_path: Path) -> None:
    got = _by_caller(tmp_path, "equal")
    sub = got["records"][1]
    assert sub["outcome"] == "ran"
    assert sub["subkernel_of"].endswith("moe_tkg.py::moe_tkg")
    assert "runs inside moe_tkg, which ran correctly" in sub["message"]
    assert "2 kernels: 1 equal, 1 ran (1 subkernels counted by the kernel that runs them)" in got["total"]
    assert "running correctly 2 (100.0 %)" in got["total"]


def test_a_subkernel_of_a_refused_kernel_takes_its_outcome_and_a_missing_caller_leaves_it_alone(tmp_path: Path) -> None:
    got = _by_caller(tmp_path, "refused")
    sub = got["records"][1]
    assert sub["outcome"] == "refused"
    assert sub["message"] == "runs inside moe_tkg: at x.py:3"
    assert "running correctly 0 (0.0 %)" in got["total"]
    assert got["alone"][0]["outcome"] == "subkernel"  # --filter left the caller out


def test_a_refusal_the_corpus_test_expects_is_counted_as_expected() -> None:
    done = run_bench("bench_corpus.py", "--corpus", str(nki_corpus()), "--filter",
                     "test_nki_isa_dma_copy.py::nki_indirect_store_oob_err_negative")
    first = done.stdout.splitlines()[0]
    assert first.startswith("as expected"), first
    assert "test_nki_isa_dma_copy.py:203" in first and "oob_mode=error" in first
    assert "running correctly or refused as expected 1 of 1" in done.stdout
