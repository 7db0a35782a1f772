"""A legacy kernel's misuse of Python's ``range`` (the tracer's stand-in,
``machine/nki/kernel_range.py``) is the kernel's error at its line, as Python says it: not an
internal error of neuronsim (probe_bc: ``range(2.5)`` exited 3).  A loop of 2**63 iterations or
more is refused at once like one of fewer (it was unrolled for eight minutes first).  And a
legacy ``nl.zeros`` in HBM is refused as the call the kernel wrote, not as a memset."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, load_kernel, trace
from neuronsim.machine.ir.program import Loop

KERNEL = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def k(a):
    out = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    for i in RANGE:
        nl.store(out, nl.load(a))
    return out
'''


@pytest.mark.parametrize("call, said", [
    ("range(2.5)", "TypeError: 'float' object cannot be interpreted as an integer"),
    ("range(0, 4, 0)", "ValueError: range() arg 3 must not be zero"),
    ("range()", "TypeError: range expected at least 1 argument, got 0"),
    ("range(stop=4)", "TypeError: range() takes no keyword arguments"),
    ("range(5)[10:11] if range(5)[10] else ()", "IndexError: range object index out of range"),
    ("range(5)[::0]", "ValueError: slice step cannot be zero"),
    ("range(len(range(10**20)))", "OverflowError"),
])
def test_a_misused_range_is_the_kernels_error_at_its_line(tmp_path, monkeypatch, call, said):
    (tmp_path / "k.py").write_text(KERNEL.replace("RANGE", call))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(NkiError) as err:
        trace(load_kernel("k.py::k"), np.zeros((128, 64), np.float32))
    assert str(err.value).startswith("k.py:8: ") and said in str(err.value)


def test_a_huge_range_is_true_as_pythons_is():
    from neuronsim.machine.nki.kernel_range import KernelRange

    assert KernelRange(10**20) and not KernelRange(0) and not KernelRange(5, 5)


def test_a_loop_past_two_to_the_63_is_kept_as_a_loop(tmp_path, monkeypatch):
    # kept (its size is then refused before any work: `run` says it unrolls to 2**64 instances),
    # where it failed to be kept (len() of its range) and was unrolled a body at a time
    (tmp_path / "k.py").write_text(KERNEL.replace("RANGE", "range(2**63)"))
    monkeypatch.chdir(tmp_path)
    traced = trace(load_kernel("k.py::k"), np.zeros((128, 64), np.float32), max_instructions=1000)
    (loop,) = [node for node in traced.program.body if isinstance(node, Loop)]
    assert loop.trip_count == 2**63


def test_a_legacy_hbm_tensor_with_an_initial_value_is_refused_as_the_kernel_wrote_it(tmp_path, monkeypatch):
    # it was "memset of out_7: only on-chip tiles can be set", a call the kernel never wrote (probe_bc)
    (tmp_path / "k.py").write_text(KERNEL.replace("nl.ndarray((128, 64), dtype=a.dtype", "nl.zeros((128, 64), "
                                                  "dtype=a.dtype").replace("RANGE", "range(1)"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(NkiError, match=r"^k\.py:7: an HBM tensor made with an initial value \(out_7\): the legacy"):
        trace(load_kernel("k.py::k"), np.zeros((128, 64), np.float32))
