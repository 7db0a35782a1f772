"""A sample of the corpus run (``bench/bench_corpus.py``, the frontend's main test): six small
kernels of the SDK's API pages, unmodified from the public corpus, run end to end by the
bench script as a user runs it and equal to the case table's numpy references; and every
kernel function the run finds has an entry in the case table.

The corpus is not in the repository: ``NEURONSIM_NKI_CORPUS`` names its folder (``.ci/run`` sets
it; :mod:`neuronsim_tests.nki_corpus`).  Without it these tests fail, naming the variable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from neuronsim_tests.nki_corpus import nki_corpus

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "bench_corpus.py"

#: Small kernels whose outputs the SDK's tests define; they run in a few seconds each.
SAMPLE = (
    "test_nki_isa_activation.py::nki_activation",
    "test_nki_isa_affine_select.py::nki_affine_select",
    "test_nki_isa_bn_stats.py::nki_bn_stats_bn_aggr_1",
    "test_nki_isa_tensor_tensor.py::nki_tensor_tensor",
    "test_nki_mask.py::nki_mask",
    "test_nki_nl_add.py::add_tensors",
)


@pytest.fixture(scope="module")
def corpus() -> Path:
    return nki_corpus()


def _bench(*args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=timeout)


def test_sample_kernels_run_equal_to_their_references(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "sample.json"
    filters = [arg for key in SAMPLE for arg in ("--filter", f"aws-neuron-sdk/nki/test/{key}")]
    done = _bench("--corpus", str(corpus), "--jobs", "2", "--timeout", "60", "--json", str(out), *filters,
                  timeout=300)
    assert done.returncode == 0, done.stderr
    records = {r["kernel"].split("/")[-1]: r for r in json.loads(out.read_text())}
    assert sorted(records) == sorted(SAMPLE)
    for key, record in records.items():
        assert record["outcome"] == "equal", \
            f"{key}: {record['outcome']}: {record.get('where')} {record.get('message')}"
        assert record["traced"] and record["race_free"] and record["simulated"] and record["equal"]
        assert record["instructions"] > 0
    assert f"TOTAL {len(SAMPLE)} kernels: {len(SAMPLE)} equal" in done.stdout


def test_every_kernel_found_has_a_case(corpus: Path) -> None:
    done = _bench("--corpus", str(corpus), "--list", timeout=120)
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()[:-1]]
    # 234 on the corpus as copied (SOURCES.json): the SDK's, nki-samples' and nki-library's
    assert len(rows) >= 230, done.stdout[-2000:]
    assert {row[0] for row in rows} <= {"decorator", "handed", "unparsed"}
    absent = [row[2] for row in rows if row[1] == "absent"]
    assert not absent, f"kernels found without an entry in bench/corpus_cases*.py: {absent}"
    assert sum(row[1] == "case" for row in rows) >= 0.95 * len(rows)


def test_a_missing_corpus_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = _bench("--corpus", str(tmp_path / "absent"), timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "no such corpus folder" in done.stderr


def test_no_corpus_given_is_one_line_naming_the_variable_and_exit_2() -> None:
    env = {k: v for k, v in os.environ.items() if k != "NEURONSIM_NKI_CORPUS"}
    done = subprocess.run([sys.executable, str(BENCH), "--list"], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == "no corpus folder: give --corpus DIR or set NEURONSIM_NKI_CORPUS"
