"""Corpus cases compared through ``Case.decode`` (``bench/corpus_cases.py``): outputs that pack
values (rmsnorm_quant's fp32 row scale stored as four fp8 bytes, MXFP8 data with E8M0 scales)
or that the kernel writes only in part (an indirect store to the even rows) are compared as
their corpus tests compare them, and run equal to the case table's references.  Run end to end
by the bench script, as a user runs it (the corpus folder: ``NEURONSIM_NKI_CORPUS``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from neuronsim_tests.nki_corpus import nki_corpus

ROOT = Path(__file__).resolve().parents[2]
DECODED = (
    "aws-neuron-sdk/nki/test/test_nki_nl_load_store_indirect.py::example_indirect_save_1",
    "nki-library/src/nkilib_src/nkilib/core/rmsnorm/rmsnorm_quant.py::rmsnorm_quant_kernel",
    "nki-library/src/nkilib_src/nkilib/experimental/mxfp_subkernels/mxfp_load_utils.py::"
    "mxfp_load_performance_wrapper",
)


def test_decoded_outputs_run_equal_to_their_references(tmp_path: Path) -> None:
    out = tmp_path / "decoded.json"
    filters = [arg for key in DECODED for arg in ("--filter", key)]
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_corpus.py"), "--corpus", str(nki_corpus()),
                           "--jobs", "1", "--timeout", "120", "--json", str(out), *filters],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    records = {r["kernel"]: r for r in json.loads(out.read_text())}
    assert sorted(records) == sorted(DECODED)
    for key, record in records.items():
        assert record["outcome"] == "equal", f"{key}: {record['outcome']}: {record.get('message')}"
        assert record["reference"] and record["equal"] and record["race_free"]
