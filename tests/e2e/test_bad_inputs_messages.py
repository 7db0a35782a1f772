"""Messages a sweep of bad input found misleading or unlocated (probe_r M1-M5), each now one
``error:`` line that names the user's real mistake where it is: a kernel file given without
``::FUNC`` beside ``--inputs``, a ``--passes`` pipeline without ``alloc``, a kernel name bound
to a value, a reference module that fails as it loads or whose parameters are not the
kernel's, a kernel raising RecursionError itself; and ``--plot`` inside the ``--out`` folder of a
first run, which is written, not refused.  The installed console script, from a folder outside
the checkout."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from neuronsim_tests.bad_inputs import COPY_KERNEL, one_error_line

NEURONSIM = Path(sys.executable).with_name("neuronsim")
KERNELS = COPY_KERNEL + '''

add2 = 42


@nki.jit
def raises_recursion(x):
    raise RecursionError("the kernel's own")
'''
RAISE_LINE = KERNELS.splitlines().index('    raise RecursionError("the kernel\'s own")') + 1
REFERENCES = '''import numpy as np


def cp(x):
    return x


def other(y):
    return y
'''


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "k.py").write_text(KERNELS)
    (tmp_path / "refs.py").write_text(REFERENCES)
    (tmp_path / "boom.py").write_text("import numpy\n\nraise RuntimeError('ref module import boom')\n")
    np.savez(tmp_path / "x.npz", x=np.ones((128, 4), np.float32))
    return tmp_path


def _run(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(NEURONSIM), *args], cwd=folder, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args, fragments", [
    (["run", "k.py", "--inputs", "x.npz"], ["SCENARIO: k.py names no kernel", "k.py::FUNCTION"]),
    (["run", "k.py:cp", "--inputs", "x.npz"], ["SCENARIO: k.py:cp names no kernel"]),
    (["run", "k.py::cp", "--inputs", "x.npz", "--passes", "build-fdeps"],
     ["--passes: the pipeline 'build-fdeps' leaves", "without a place", "alloc"]),
    (["run", "k.py::add2", "--inputs", "x.npz"], ["k.py: 'add2' in the kernel file is 42, not a kernel function"]),
    (["run", "k.py::raises_recursion", "--inputs", "x.npz"], [f"k.py:{RAISE_LINE}: RecursionError: the kernel's own"]),
    (["run", "k.py::cp", "--inputs", "x.npz", "--reference", "boom.py:f"],
     ["--reference: cannot load boom.py: boom.py:3: RuntimeError: ref module import boom"]),
    (["run", "k.py::cp", "--inputs", "x.npz", "--reference", "refs.py:other"],
     ["refs.py:8: the reference other(y): missing a required argument: 'y'"]),
], ids=["no-func", "one-colon", "no-alloc", "not-a-function", "own-recursion", "reference-import", "reference-params"])
def test_the_line_names_the_mistake_where_it_is(folder: Path, args: list[str], fragments: list[str]) -> None:
    one_error_line(_run(folder, *args, "--out", "out"), *fragments)
    assert not (folder / "out").exists()


def test_a_plot_inside_the_out_folder_of_a_first_run_is_written(folder: Path) -> None:
    run = _run(folder, "run", "k.py::cp", "--inputs", "x.npz", "--reference", "refs.py:cp", "--out", "out",
               "--plot", "out/timeline.png")
    assert run.returncode == 0, run.stderr
    assert (folder / "out" / "timeline.png").stat().st_size > 0
