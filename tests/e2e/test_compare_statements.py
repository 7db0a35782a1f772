"""``neuronsim compare`` on variants (probe_t): statements matched by their syntax, not by the
text of their first line (every multi-line ``nisa.dma_copy(`` of a file was one statement,
its time named at the first; two statements of the same text were one), the two specs checked
before any work (B without ``::FUNC`` was an exit 3 after A ran), an exact tie named as such
(A was "faster"), ``--timing-only`` with ``--reference`` refused as ``run`` refuses it, and
outputs of another shape a difference without values too (they passed with exit 0)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from neuronsim.machine.nki import load_kernel
from neuronsim.nki import compare_kernels
from neuronsim_tests.bad_inputs import one_error_line

NEURONSIM = Path(sys.executable).with_name("neuronsim")
KERNELS = '''\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def two_passes(x):
    out = nl.ndarray((128, 1024), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
    for i in nl.sequential_range(4):
        nisa.dma_copy(dst=t, src=x[:, i * 512:(i + 1) * 512])
    nisa.dma_copy(dst=out[:, 0:512], src=t)
    for i in nl.sequential_range(4):
        nisa.dma_copy(dst=t, src=x[:, i * 512:(i + 1) * 512])
    nisa.dma_copy(dst=out[:, 512:1024], src=t)
    return out


@nki.jit
def half(x):
    out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=x[:, 0:512])
    return out


@nki.jit
def one_pass(x):
    out = nl.ndarray((128, 1024), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
    for i in nl.sequential_range(4):
        nisa.dma_copy(
            dst=t,
            src=x[:, i * 512:(i + 1) * 512])
    nisa.dma_copy(dst=out[:, 0:512], src=t)
    return out


@nki.jit
def ones_in_bf16(x):
    out = nl.ndarray((128, 1024), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out[:, 0:512], src=x[:, 0:512])
    nisa.dma_copy(dst=out[:, 512:1024], src=x[:, 0:512])
    return out
'''


@pytest.fixture
def folder(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)  # (run from the kernel's folder: its lines read k.py:11)
    (tmp_path / "k.py").write_text(KERNELS)
    np.savez(tmp_path / "in.npz", x=np.ones((128, 2048), np.float32))
    return tmp_path


def _line(text: str, occurrence: int = 0) -> int:
    return [k + 1 for k, line in enumerate(KERNELS.splitlines()) if line.strip() == text][occurrence]


def test_statements_match_by_syntax_and_in_order_whatever_their_lines(folder: Path) -> None:
    x = np.ones((128, 2048), np.float32)
    step = compare_kernels(load_kernel(f"{folder}/k.py::two_passes"), load_kernel(f"{folder}/k.py::one_pass"), x,
                           functional=False)
    load = "nisa.dma_copy(dst=t, src=x[:, i * 512:(i + 1) * 512])"
    by_line = {(m.where_a, m.where_b): m for m in step.moves}
    # the first loop's load (one line in A, three in B) is one statement: it moved nothing
    first = by_line[(f"k.py:{_line(load)}", f"k.py:{_line('nisa.dma_copy(')}")]
    assert first.critical_a_ns == first.critical_b_ns > 0
    # A's second loop, the same text as its first, is A's alone: B no longer has it
    second = by_line[(f"k.py:{_line(load, 1)}", None)]
    assert second.critical_b_ns == 0 and second.moved_ns < 0
    assert abs(sum(m.moved_ns for m in step.moves) - (step.b.profile.makespan_ns - step.a.profile.makespan_ns)) < 1e-6
    assert step.faster == "one_pass"


def test_an_exact_tie_names_no_variant_faster(folder: Path) -> None:
    run = subprocess.run([str(NEURONSIM), "compare", "k.py::one_pass", f"{folder}/k.py::one_pass", "--inputs",
                          "in.npz", "--timing-only"], cwd=folder, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "B takes 1.000 of A's makespan (the same makespan)" in run.stdout


@pytest.mark.parametrize("args, fragments", [
    (["compare", "k.py::one_pass", "k.py", "--inputs", "in.npz"], ["B: expected PATH.py::FUNC, got 'k.py'"]),
    (["compare", "k.py::one_pass", "k.py::two_passes", "--inputs", "in.npz", "--timing-only", "--reference",
      "k.py:one_pass"], ["--timing-only computes no value to compare with --reference"]),
], ids=["b-without-func", "timing-only-with-reference"])
def test_a_misused_compare_is_refused_before_any_work(folder: Path, args: list[str], fragments: list[str]) -> None:
    one_error_line(subprocess.run([str(NEURONSIM), *args], cwd=folder, capture_output=True, text=True, timeout=300),
                   *fragments)


def test_outputs_of_another_shape_differ_without_values(folder: Path) -> None:
    run = subprocess.run([str(NEURONSIM), "compare", "k.py::one_pass", "k.py::half", "--inputs", "in.npz",
                          "--timing-only"], cwd=folder, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stderr
    assert "B's outputs return0 [128, 512] float32 are not A's return0 [128, 1024] float32" in run.stdout


def test_the_differences_of_two_variants_name_them_a_and_b(folder: Path) -> None:
    """probe_t: B's values against A's were said as 'simulated ..., reference ...', and an output
    B has and A lacks as 'missing from the reference'."""
    run = subprocess.run([str(NEURONSIM), "compare", "k.py::one_pass", "k.py::two_passes", "--inputs", "in.npz"],
                         cwd=folder, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stderr
    assert "return0: 65536 of 131072 elements beyond rtol=0.01, atol=0.01; first at [0, 512]: B 1, A " in run.stdout


@pytest.mark.parametrize("values", [True, False], ids=["values", "timing-only"])
def test_an_output_of_another_dtype_differs_with_values_or_without(folder: Path, values: bool) -> None:
    """probe_bad U2: a bfloat16 output against a float32 one of equal values was "equal" when
    values were compared and DIFFER under --timing-only; one pair, one verdict."""
    run = subprocess.run([str(NEURONSIM), "compare", "k.py::two_passes", "k.py::ones_in_bf16", "--inputs", "in.npz",
                          *([] if values else ["--timing-only"])], cwd=folder, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 1, run.stderr
    assert ("return0: B writes bfloat16, A float32" if values else "[128, 1024] bfloat16 are not A's") in run.stdout


def test_the_printed_moves_name_both_lines_and_a_faster_wrong_variant_is_said_so(folder: Path) -> None:
    """probe_as: the list printed statements that moved +0.0 ns, never marked a statement only
    in B, and showed B's line alone for one at other lines in A; the headline called a variant
    computing something else "faster" without a word."""
    run = subprocess.run([str(NEURONSIM), "compare", "k.py::two_passes", "k.py::one_pass", "--inputs", "in.npz"],
                         cwd=folder, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stderr
    assert "(one_pass is faster; but the outputs differ)" in run.stdout, run.stdout
    moves = run.stdout.split("statements that moved the makespan")[1].splitlines()[1:]
    assert moves and not any(line.lstrip().startswith(("+0.0 ns", "-0.0 ns")) for line in moves), moves
    load = "nisa.dma_copy(dst=t, src=x[:, i * 512:(i + 1) * 512])"
    assert any(f"k.py:{_line(load, 1)} (A only)" in line for line in moves), moves
    swapped = subprocess.run([str(NEURONSIM), "compare", "k.py::one_pass", "k.py::two_passes", "--inputs", "in.npz",
                              "--timing-only"], cwd=folder, capture_output=True, text=True, timeout=300)
    lines = swapped.stdout.split("statements that moved the makespan")[1].splitlines()[1:]
    assert any(f"k.py:{_line(load, 1)} (B only)" in line for line in lines), lines
