"""A kernel reached through a symbolic link imports the modules beside the file the link leads
to, as Python does for a script (its ``sys.path[0]`` is the target's folder; probe_ah F11)."""

from __future__ import annotations

import os
import sys

import numpy as np

from neuronsim.machine.nki import load_kernel
from neuronsim.verify.nki.run import run_kernel

KERNEL = '''\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
from linked_helper import plus


@nki.jit
def add1(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.add(nl.load(x), plus()))
    return out
'''


def test_a_kernel_through_a_link_imports_the_helper_beside_its_target(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "k.py").write_text(KERNEL)
    (tmp_path / "real" / "linked_helper.py").write_text("def plus():\n    return 1.0\n")
    os.symlink(tmp_path / "real" / "k.py", tmp_path / "link.py")
    sys.modules.pop("linked_helper", None)
    try:
        x = np.ones((128, 4), np.float32)
        out, report = run_kernel(load_kernel(f"{tmp_path / 'link.py'}::add1"), x, seeds=(None,))
    finally:
        sys.modules.pop("linked_helper", None)
    assert not report.run.problems()
    np.testing.assert_array_equal(out, x + 1)
