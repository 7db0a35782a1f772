"""A location outside the working folder is named by its absolute path (probe_bad M-F6): a base
name alone could name another file, one of the working folder's own.  Under the working folder
a location stays relative (``k.py:12``), as every other test reads it."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from neuronsim.machine.nki import NkiError, load_kernel, trace
from neuronsim.verify.cli import cli

KERNEL = '''\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
from far_helper import broken


@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    broken()
    return out
'''
HELPER = "def broken():\n    return 1 / 0\n"


@pytest.fixture
def elsewhere(tmp_path):
    """The kernel and its helper in ``there/``; the working folder ``here/`` has a far_helper.py
    of its own, the file a base name would point at."""
    there, here = tmp_path / "there", tmp_path / "here"
    there.mkdir()
    here.mkdir()
    (there / "k.py").write_text(KERNEL)
    (there / "far_helper.py").write_text(HELPER)
    (here / "far_helper.py").write_text("# another file\n")
    os.chdir(here)
    sys.modules.pop("far_helper", None)  # (another test's, imported in this process)
    yield there
    sys.modules.pop("far_helper", None)


def test_a_helper_outside_the_working_folder_is_named_by_its_absolute_path(elsewhere):
    with pytest.raises(NkiError) as err:
        trace(load_kernel(f"{elsewhere / 'k.py'}::kernel"), np.ones((4, 4), np.float32))
    assert str(err.value).startswith(f"{elsewhere / 'far_helper.py'}:2: ZeroDivisionError"), str(err.value)


def test_the_command_names_it_so_and_from_the_kernels_folder_relatively(elsewhere, tmp_path):
    np.savez(tmp_path / "x.npz", x=np.ones((4, 4), np.float32))
    result = CliRunner().invoke(cli, ["run", f"{elsewhere / 'k.py'}::kernel", "--inputs", str(tmp_path / "x.npz"),
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert f"error: {elsewhere / 'far_helper.py'}:2: ZeroDivisionError" in result.output, result.output
    os.chdir(elsewhere)
    result = CliRunner().invoke(cli, ["run", "k.py::kernel", "--inputs", str(tmp_path / "x.npz"),
                                      "--out", str(tmp_path / "out")])
    assert "error: far_helper.py:2: ZeroDivisionError" in result.output, result.output


def test_a_users_pass_outside_the_working_folder_is_named_so(elsewhere):
    (elsewhere / "bad_pass.py").write_text("def p(program:\n")
    spec = f"{elsewhere / 'bad_pass.py'}:p"
    result = CliRunner().invoke(cli, ["compile", "--passes", spec, "-", "-o", "-"], input="{}")
    assert result.exit_code == 2
    assert f"{elsewhere / 'bad_pass.py'}:1: SyntaxError" in result.output, result.output
