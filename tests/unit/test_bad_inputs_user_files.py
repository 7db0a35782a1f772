"""Kernel and reference files a probe found misnamed: a kernel path outside the working
folder was said by its name alone (``cp.py: no such kernel file`` beside a ./cp.py that
exists), and a kernel or ``--reference`` file that is a FIFO was "no such file".  Each is now
one line naming the path as the user gave it, exit 2.
"""

from __future__ import annotations

import os

import pytest

from neuronsim_tests.bad_inputs import COPY_KERNEL as KERNEL
from neuronsim_tests.bad_inputs import refused_in_one_line as _refused



def test_a_kernel_file_that_is_a_fifo_is_named_as_such(tmp_path, monkeypatch):
    os.mkfifo(tmp_path / "fifo.py")
    monkeypatch.chdir(tmp_path)
    _refused(["nki", "fifo.py::cp", "-o", "o.json"], "fifo.py: not a kernel file: it is a named pipe (FIFO)")
    assert not (tmp_path / "o.json").exists()


def test_a_reference_that_is_a_fifo_is_refused(tmp_path):
    os.mkfifo(tmp_path / "ref.py")
    from neuronsim.verify.cli.cmd_nki import load_reference
    from neuronsim.verify.cli.common import UsageFailure

    with pytest.raises(UsageFailure) as err:
        load_reference(f"{tmp_path}/ref.py:f")
    assert err.value.path == "--reference" and "named pipe (FIFO)" in err.value.message


# -- a kernel path outside the working folder -----------------------------------------------

def test_a_missing_kernel_outside_the_working_folder_is_named_as_given(tmp_path, monkeypatch):
    here = tmp_path / "here"
    here.mkdir()
    (here / "cp.py").write_text(KERNEL)  # a file of the same name here: "cp.py: no such kernel file" lied
    monkeypatch.chdir(here)
    missing = str(tmp_path / "elsewhere" / "cp.py")
    line = _refused(["nki", f"{missing}::cp", "-o", "o.json"], "no such kernel file")
    assert line == f"error: {missing}: no such kernel file"
