"""The corpus run counts a subkernel (a kernel only another kernel calls) by the outcome of the
kernel whose case runs it (``bench_corpus.by_caller``, the rule in docs/nki.md's corpus run)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from neuronsim_tests.nki_corpus import nki_corpus

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _by_caller(caller_outcome: str) -> dict:
    """The records by_caller makes of moe_tkg (with ``caller_outcome``) and one of its subkernels."""
    code = textwrap.dedent(f"""
        import json
        from bench_corpus import by_caller, totals
        base = {{"traced": True, "race_free": True, "simulated": True, "equal": False}}
        lib = "nki-library/src/nkilib_src/nkilib/core/moe/moe_tkg/"
        records = [
            {{**base, "kernel": lib + "moe_tkg.py::moe_tkg", "outcome": {caller_outcome!r}, "message": "at x.py:3"}},
            {{**base, "kernel": lib + "down_projection_mx.py::down_projection_mx", "outcome": "subkernel",
              "traced": False, "message": "called from another kernel"}},
        ]
        resolved = by_caller(records)
        print(json.dumps({{"records": resolved, "total": totals(resolved), "alone": by_caller(records[1:])}}))
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=BENCH, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_subkernel_of_a_kernel_that_ran_correctly_counts_as_ran() -> None:
    got = _by_caller("equal")
    sub = got["records"][1]
    assert sub["outcome"] == "ran"
    assert sub["subkernel_of"].endswith("moe_tkg.py::moe_tkg")
    assert "runs inside moe_tkg, which ran correctly" in sub["message"]
    assert "2 kernels: 1 equal, 1 ran (1 subkernels counted by the kernel that runs them)" in got["total"]
    assert "running correctly 2 (100.0 %)" in got["total"]


def test_a_subkernel_of_a_refused_kernel_takes_its_outcome_and_a_missing_caller_leaves_it_alone() -> None:
    got = _by_caller("refused")
    sub = got["records"][1]
    assert sub["outcome"] == "refused"
    assert sub["message"] == "runs inside moe_tkg: at x.py:3"
    assert "running correctly 0 (0.0 %)" in got["total"]
    assert got["alone"][0]["outcome"] == "subkernel"  # --filter left the caller out


def test_a_refusal_the_corpus_test_expects_is_counted_as_expected() -> None:
    done = subprocess.run([sys.executable, str(BENCH / "bench_corpus.py"), "--corpus", str(nki_corpus()), "--filter",
                           "test_nki_isa_dma_copy.py::nki_indirect_store_oob_err_negative"],
                          cwd=BENCH.parent, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("as expected"), first
    assert "test_nki_isa_dma_copy.py:203" in first and "oob_mode=error" in first
    assert "running correctly or refused as expected 1 of 1" in done.stdout
