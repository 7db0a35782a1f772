"""A value set on one partition off a quadrant's start (``t[i, 2] = -1.0``) is lowered to a
read-modify-write of the quadrant (``machine/nki/ops.set_one_partition``); the checks of the
kernel's own accesses count the partition it names, not the quadrant (probe_af NS-1: one
element per affine iteration, each on its own partition, was two findings of carried values)."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import load_kernel, trace
from neuronsim.verify.nki.run import run_kernel
from neuronsim_tests.nki_kit import kernel_specs
from neuronsim.verify.nki.findings import nki_findings

KERNELS = '''\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def own_partitions(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    for i in nl.affine_range(4):
        t[i, 2] = -1.0
    nl.store(out, t)
    return out


@nki.jit
def one_partition_every_iteration(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    for i in nl.affine_range(4):
        t[1, 2] = float(i)
    nl.store(out, t)
    return out
'''


@pytest.fixture
def kernels(tmp_path):
    return kernel_specs(tmp_path, KERNELS)


def test_each_iteration_on_its_own_partition_carries_nothing(kernels):
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    assert nki_findings(trace(load_kernel(kernels("own_partitions")), a).program) == []
    expected = a.copy()
    expected[:, 2] = -1.0
    out, report = run_kernel(kernels("own_partitions"), a, seeds=(None,))
    assert not report.run.problems()
    np.testing.assert_array_equal(out, expected)


def test_every_iteration_on_one_partition_still_writes_the_same_bytes(kernels):
    a = np.zeros((4, 8), np.float32)
    found = nki_findings(trace(load_kernel(kernels("one_partition_every_iteration")), a).program)
    assert found and all("write the same bytes" in f.describe() for f in found), [f.describe() for f in found]
