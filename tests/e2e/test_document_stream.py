"""A one-document command's standard output holds its one document, whatever the user's code
does to file descriptor 1 (probe_bad F3), and an error that arrives while the user's reference
runs on its thread puts its error document there too (probe_bad F5).  Through the real entry
point: an in-memory runner has no descriptor 1 to write to."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from neuronsim_tests.bad_inputs import cli_child

KERNEL = '''import os
import subprocess
import sys

import nki
import nki.language as nl


def _add1(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(x), 1.0))
    return out


@nki.jit
def writes_fd1(x):
    os.write(1, b"RAW LINE ON DESCRIPTOR 1\\n")
    return _add1(x)


@nki.jit
def runs_a_child(x):
    subprocess.run([sys.executable, "-c", "print('CHILD LINE')"], check=True)
    return _add1(x)


@nki.jit
def points_fd1_at_devnull(x):
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    return _add1(x)


def ref(x):
    os.write(1, b"REFERENCE LINE\\n")
    return x + 1


def never(x):
    while True:
        pass
'''


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "k.py").write_text(KERNEL)
    np.savez(tmp_path / "in.npz", x=np.ones((128, 64), np.float32))
    return tmp_path


def _child(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return cli_child(folder, *args, timeout=120)


@pytest.mark.parametrize("kernel", ["writes_fd1", "runs_a_child", "points_fd1_at_devnull"])
def test_the_document_survives_what_the_kernel_writes_below_print(folder, kernel):
    done = _child(folder, "run", f"k.py::{kernel}", "--inputs", "in.npz", "--reference", "k.py:ref",
                  "--out", "out", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["format"] == "neuronsim.run/1"
    if kernel != "points_fd1_at_devnull":
        assert ("RAW LINE" in done.stderr or "CHILD LINE" in done.stderr) and "REFERENCE LINE" in done.stderr


def test_a_program_written_to_standard_output_stays_one_document(folder):
    done = _child(folder, "nki", "k.py::runs_a_child", "--inputs", "in.npz", "-o", "-")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["format"] == "neuronsim.program/1" and "CHILD LINE" in done.stderr


def test_an_error_while_the_reference_runs_is_a_document_on_standard_output(folder):
    done = _child(folder, "run", "k.py::writes_fd1", "--inputs", "in.npz", "--reference", "k.py:never",
                  "--out", "out", "--json", "--max-idle", "1")
    assert done.returncode == 2
    doc = json.loads(done.stdout)
    assert doc["format"] == "neuronsim.error/1" and doc["path"].startswith("k.py:"), done.stdout
    assert not (folder / "out").exists()


def test_a_kernel_that_unbinds_os_dup2_leaves_one_document(folder):
    """The release of the document's descriptor ran after the report and called os.dup2, which
    the kernel had set to None: a second, error, document followed the report (probe_re N3)."""
    (folder / "d.py").write_text(KERNEL.replace("def writes_fd1(x):\n", "def writes_fd1(x):\n    os.dup2 = None\n"))
    done = _child(folder, "run", "d.py::writes_fd1", "--inputs", "in.npz", "--out", "out", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["format"] == "neuronsim.run/1"


def test_standard_error_closed_leaves_the_document_and_the_status(folder):
    """Started with standard error closed (`2>&-`): the progress display asked None whether it
    was a terminal, read as the user's code having closed it, and the document's descriptor
    became 2 (probe_re N1)."""
    done = subprocess.run([sys.executable, "-c", "from neuronsim.verify.cli import main; main()", "run",
                           "k.py::writes_fd1", "--inputs", "in.npz", "--out", "out", "--json"], cwd=folder,
                          stdout=subprocess.PIPE, preexec_fn=lambda: os.close(2), text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=""))
    assert done.returncode == 0
    assert json.loads(done.stdout)["format"] == "neuronsim.run/1"
    plain = subprocess.run([sys.executable, "-c", "from neuronsim.verify.cli import main; main()", "run",
                            "k.py::writes_fd1", "--inputs", "in.npz", "--out", "out2"], cwd=folder,
                           stdout=subprocess.PIPE, preexec_fn=lambda: os.close(2), text=True, timeout=120,
                           env=dict(os.environ, PYTHONPATH=""))
    assert plain.returncode == 0 and "writes_fd1" in plain.stdout
