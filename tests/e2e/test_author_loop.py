"""The kernel author's loop through the installed package and console script: a test suite
written against NKI's simulator under ``pytest --neuronsim`` (passing, and failing at a planted
mistake's line), ``neuronsim compare`` ranking the matmul tutorial's variants as its table
does, and ``run --json`` validated against docs/schema/run.schema.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import ml_dtypes
import numpy as np

from neuronsim.nki import compare_kernels
from neuronsim.machine.nki import load_kernel

from neuronsim_tests import ROOT

BIN = Path(sys.executable).parent
SCHEMA = json.loads((ROOT / "docs" / "schema" / "run.schema.json").read_text())
MATMUL = ROOT / "scenarios" / "nki" / "published" / "matmul.py"

#: A kernel author's module and tests, written against NKI's legacy simulator; line 19 of the
#: kernel file is the planted mistake (a running total carried across affine_range iterations).
KERNELS = '''\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

TILE = 512


@nki.jit
def scale_rows(x, out):
    for k in nl.affine_range(x.shape[1] // TILE):
        tile = nl.load(x[:, k * TILE:(k + 1) * TILE])
        nl.store(out[:, k * TILE:(k + 1) * TILE], nl.multiply(tile, 2.0))


@nki.jit
def running_total(x, out):
    total = nl.zeros((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    for k in nl.affine_range(x.shape[1] // TILE):
        tile = nl.load(x[:, k * TILE:(k + 1) * TILE])
        total[...] = nl.add(total, nl.sum(tile, axis=1, keepdims=True))
        nl.store(out[:, k:k + 1], total)
'''

TESTS = '''\
import numpy as np
from neuronxcc.nki import simulate_kernel

from kernels import running_total, scale_rows


def test_scale_rows():
    x = np.random.default_rng(0).random((128, 1024), dtype=np.float32)
    out = np.zeros_like(x)
    simulate_kernel(scale_rows, x, out)
    assert np.allclose(out, 2 * x)


def test_running_total():
    x = np.random.default_rng(0).random((128, 1024), dtype=np.float32)
    out = np.zeros((128, 2), np.float32)
    simulate_kernel(running_total, x, out)
    assert np.allclose(out[:, -1], x.sum(axis=1), rtol=1e-4)
'''


def _pytest(folder: Path, *flags: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([str(BIN / "pytest"), "-p", "no:cacheprovider", "-p", "no:xdist", "-q", "-rf", *flags,
                           "test_kernels.py"], cwd=folder, capture_output=True, text=True, env=env, timeout=600)


def test_pytest_neuronsim_runs_nki_simulator_calls_and_fails_at_the_planted_line(tmp_path: Path) -> None:
    (tmp_path / "kernels.py").write_text(KERNELS)
    (tmp_path / "test_kernels.py").write_text(TESTS)
    run = _pytest(tmp_path, "--neuronsim")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 failed, 1 passed" in run.stdout, run.stdout
    assert "FAILED test_kernels.py::test_running_total" in run.stdout
    failure = run.stdout[run.stdout.index("test_running_total"):]
    assert "neuronsim: kernels.py:19: affine loop k carries a RAW dependence" in failure, failure
    assert "called from" in failure and "test_kernels.py:17" in failure
    # without the flag the plugin does nothing: NKI is not installed, the tests cannot even import it
    plain = _pytest(tmp_path)
    assert plain.returncode != 0 and "neuronxcc" in plain.stdout + plain.stderr


def test_the_drop_in_raises_one_located_error_users_can_catch() -> None:
    from neuronsim.nki import KernelFinding, simulate_kernel

    kernel = load_kernel(f"{ROOT / 'examples' / 'nki' / 'row_sums.py'}::running_sums")
    x = np.random.default_rng(1).random((128, 2048), dtype=np.float32)
    try:
        simulate_kernel(kernel, x, np.zeros((128, 4), np.float32))
    except KernelFinding as err:
        assert isinstance(err, AssertionError) and err.line.endswith("row_sums.py:48")
        assert str(err).startswith(err.line + ": affine loop k carries")
    else:
        raise AssertionError("running_sums carries a value across affine iterations: no KernelFinding")
    fixed = load_kernel(f"{ROOT / 'examples' / 'nki' / 'row_sums.py'}::row_sums_fixed")
    out = np.zeros((128, 1), np.float32)
    assert simulate_kernel(fixed, x, out) is None  # legacy style: filled in place, nothing returned
    assert np.allclose(out[:, 0], x.sum(axis=1), rtol=1e-4)


def test_the_drop_in_lets_the_kernels_own_exception_through_and_locates_a_refusal(tmp_path: Path) -> None:
    """The kernel's own ``assert`` reaches the test as itself (NKI's simulator runs the kernel's
    Python), a refusal is a ``KernelFinding`` at the kernel's line (both were ``NkiError``, a
    ``ValueError``: probe_bc)."""
    import pytest

    from neuronsim.nki import KernelFinding, simulate_kernel

    (tmp_path / "checks.py").write_text(
        "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n\n\n@nki.jit\n"
        "def wants_64_rows(a):\n    assert a.shape[0] == 64, 'need 64 rows'\n"
        "    return nl.ndarray((64, 8), dtype=a.dtype, buffer=nl.shared_hbm)\n\n\n@nki.jit\n"
        "def reads_past_the_end(a):\n    out = nl.ndarray((128, 8), dtype=a.dtype, buffer=nl.shared_hbm)\n"
        "    nl.store(out, nl.load(a[:, 1:9]))\n    return out\n")
    a = np.zeros((128, 8), np.float32)
    with pytest.raises(AssertionError, match="need 64 rows") as own:
        simulate_kernel(load_kernel(f"{tmp_path / 'checks.py'}::wants_64_rows"), a)
    assert not isinstance(own.value, KernelFinding) and any("checks.py:7" in note for note in own.value.__notes__)
    with pytest.raises(KernelFinding) as refused:
        simulate_kernel(load_kernel(f"{tmp_path / 'checks.py'}::reads_past_the_end"), a)
    assert refused.value.line.endswith("checks.py:14") and refused.value.report is None
    assert str(refused.value).count("checks.py:14") == 1  # (said twice: probe_bd)
    (tmp_path / "noted.py").write_text(
        "import neuronxcc.nki as nki\n\n\nclass Odd(Exception):\n    __notes__ = ('its own',)\n\n\n"
        "@nki.jit\ndef raises_odd(a):\n    raise Odd('mine')\n")
    with pytest.raises(Exception, match="mine") as odd:  # (the note could not be added: TypeError, probe_bd)
        simulate_kernel(load_kernel(f"{tmp_path / 'noted.py'}::raises_odd"), a)
    assert type(odd.value).__name__ == "Odd"


def test_compare_ranks_the_matmul_tutorial_variants_as_its_table_does() -> None:
    # The tutorial's table (release 2.26, trn1): tiled 51.80 ms > hoisted loads 42.96 >
    # M, N blocks 22.07 > K blocks too 6.97.  Our versions at the smallest shape all four run.
    rng = np.random.default_rng(0)
    k, m, n = 1024, 2048, 1024
    lhsT = (rng.random((k, m)) / 8).astype(ml_dtypes.bfloat16)
    rhs = (rng.random((k, n)) / 8).astype(ml_dtypes.bfloat16)
    order = ("matmul_tiled", "matmul_hoisted", "matmul_blocked", "matmul_blocked_k")
    kernels = [load_kernel(f"{MATMUL}::{name}") for name in order]
    steps = [compare_kernels(a, b, lhsT, rhs, functional=False) for a, b in zip(kernels, kernels[1:])]
    assert all(step.ratio < 1 for step in steps), [(s.a.label, s.b.label, s.ratio) for s in steps]
    for step in steps:  # the statements' moves add up to the makespans' difference
        moved = sum(move.moved_ns for move in step.moves)
        change = step.b.profile.makespan_ns - step.a.profile.makespan_ns
        assert abs(moved - change) < 1e-6 * step.a.profile.makespan_ns


def test_run_json_is_one_document_valid_against_the_schema(tmp_path: Path) -> None:
    x = np.random.default_rng(2).random((128, 2048), dtype=np.float32)
    np.savez(tmp_path / "in.npz", x=x, out=np.zeros((128, 4), np.float32))
    kernel = ROOT / "examples" / "nki" / "row_sums.py"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for args, status in (([f"{kernel}::running_sums", "--inputs", "in.npz"], 1), (["softmax"], 0)):
        run = subprocess.run([str(BIN / "neuronsim"), "run", *args, "--json", "--out", "out"], cwd=tmp_path,
                             capture_output=True, text=True, env=env, timeout=600)
        assert run.returncode == status, run.stderr
        document = json.loads(run.stdout)
        jsonschema.validate(document, SCHEMA)
        assert document["ok"] is (status == 0)
        if status:
            assert any(line.endswith("row_sums.py:48") for f in document["findings"] for line in f["lines"])
