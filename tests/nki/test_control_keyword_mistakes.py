"""Mistakes in current-API kernels a probe (314 generated kernels) found accepted without a
word, each now one line at its kernel line:

* a keyword ``nl.fori_loop`` / ``nl.while_loop`` / ``nl.if_else`` do not take (their pages'
  signatures have no ``**kwargs``): ``fori_loop(0, 4, body, stride=2)`` ran four iterations;
* an ``nl.if_else`` condition that is no bool, int or NkiScalar (``"no"`` took the then branch);
* more indices than an on-chip tile has dimensions: ``t[:, :, 0]`` of a 2-D tile was ``t`` (the
  rule that reads ``idx_tile[i_p, 0]`` of a ``(P,)`` tile applied to every rank);
* a size refused by ``--max-instances`` names the kernel line of its largest instruction, not
  the option alone;
* a Python ``if`` on a comparison of a ``fori_loop`` body's index (an NkiScalar on its page)
  unrolled the loop and took the branch of each iteration's value.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import neuronsim.verify.nki  # noqa: F401  (registers the reader of device values)
from neuronsim.machine.nki import load_kernel, trace
from neuronsim.machine.nki.errors import NkiError
from neuronsim_tests.nki_kernels import run

HEADER = "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n@nki.jit\ndef k(x):\n"
START = ("    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)\n"
         "    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)\n"
         "    nisa.dma_copy(dst=t, src=x)\n"
         "    def body(i):\n"
         "        nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)\n"
         "    def branch():\n"
         "        nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)\n")
END = "    nisa.dma_copy(dst=out, src=t)\n    return out\n"
MISTAKE_LINE = 7 + START.count("\n") + 1


def _kernel(tmp_path, mistake: str):
    (tmp_path / "k.py").write_text(HEADER + START + f"    {mistake}\n" + END)
    return load_kernel(f"{tmp_path / 'k.py'}::k")


@pytest.mark.parametrize("mistake, message", [
    ("nl.fori_loop(0, 4, body, stride=2)", "nl.fori_loop takes no keyword 'stride'"),
    ("nl.fori_loop(0, 4, body, unrol=True)", "nl.fori_loop takes no keyword 'unrol'"),
    ("nl.if_else(True, branch, likely=True)", "nl.if_else takes no keyword 'likely'"),
    ("nl.if_else('no', branch)", "the condition is str 'no'"),
    ("nl.if_else([1], branch)", "the condition is list"),
    ("nisa.memset(dst=t[:, :, 0], value=0.0)", "3 indices for a 2-dimensional tile"),
    ("nisa.memset(dst=t[:, 5, 0], value=0.0)", "3 indices for a 2-dimensional tile"),
])
def test_each_mistake_is_one_line_at_its_kernel_line(tmp_path, mistake, message):
    with pytest.raises(NkiError, match=message) as caught:
        trace(_kernel(tmp_path, mistake), np.zeros((128, 64), np.float32))
    assert caught.value.path == f"k.py:{MISTAKE_LINE}"


def test_a_while_loop_keyword_it_does_not_take_is_refused(tmp_path):
    mistake = ("r = nisa.register_alloc(0)\n    nl.while_loop(r, lambda c: c, max_iter=5)")
    with pytest.raises(NkiError, match="nl.while_loop takes no keyword 'max_iter'"):
        trace(_kernel(tmp_path, mistake), np.zeros((128, 64), np.float32))


def test_the_conditions_and_forms_the_pages_allow_still_run(tmp_path):
    for allowed in ("nl.fori_loop(0, 4, body, step=2)", "nl.fori_loop(0, 4, body, unroll=True)",
                    "nl.if_else(1, branch, else_fn=branch)", "nl.if_else(np.int32(0), branch)"):
        (tmp_path / "k.py").write_text("import numpy as np\n" + HEADER + START + f"    {allowed}\n" + END)
        trace(load_kernel(f"{tmp_path / 'k.py'}::k"), np.zeros((128, 64), np.float32))


def test_a_size_over_the_limit_names_the_kernel_line(tmp_path):
    (tmp_path / "k.py").write_text(HEADER + START + "    nl.fori_loop(0, 10**9, body)\n" + END)
    np.savez(tmp_path / "in.npz", x=np.zeros((128, 64), np.float32))
    done = subprocess.run([sys.executable, "-m", "neuronsim.verify.cli", "run", "k.py::k", "--inputs", "in.npz",
                           "--out", "out"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    line = START.count("\n") + 7 - 2  # the body's tensor_scalar: the instruction of 10**9 instances
    assert done.stderr.strip().startswith(f"error: k.py:{line}: the program unrolls to 1,000,000,002 instances"), \
        done.stderr
    assert not (tmp_path / "out").exists()


def _fori_kernel(tmp_path, body: str):
    """A kernel whose ``nl.fori_loop(0, 4, body)`` body is ``body`` (lines indented by 8)."""
    source = (HEADER + "    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)\n"
              "    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)\n"
              "    nisa.dma_copy(dst=t, src=x)\n"
              "    def body(i):\n" + body + "    nl.fori_loop(0, 4, body)\n" + END)
    (tmp_path / "k.py").write_text(source)
    return load_kernel(f"{tmp_path / 'k.py'}::k")


def test_a_python_if_on_the_fori_index_is_refused_at_its_line(tmp_path):
    """The fori_loop page: the body's ``i`` is an NkiScalar; the NkiScalar page: a comparison of
    one is "traced, but the result cannot be used".  ``if i == 0:`` took the branch of the
    traced value in the first iteration only (the loop unrolled without a word)."""
    body = ("        if i == 0:\n"
            "            nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)\n")
    with pytest.raises(NkiError, match="Python if / while cannot test it") as caught:
        trace(_fori_kernel(tmp_path, body), np.zeros((128, 64), np.float32))
    assert caught.value.path == "k.py:12"


def test_the_fori_index_as_a_device_value_still_runs_each_iteration(tmp_path):
    """What the pages let a body do with its NkiScalar index: arithmetic (``i // 2``) and
    ``nl.if_else`` on a comparison, each iteration with its own value."""
    body = ("        def add():\n"
            "            nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)\n"
            "        nl.if_else(i // 2 == 1, add)\n")
    out = run(_fori_kernel(tmp_path, body), np.zeros((128, 64), np.float32))["return0"]
    assert np.array_equal(out, np.full((128, 64), 2.0, np.float32))  # iterations 2 and 3 add one each
