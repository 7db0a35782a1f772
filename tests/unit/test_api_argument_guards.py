"""The Python API refuses a kernel or a reference that is no function with a ``TypeError``
naming the argument (probe_bc: ``run_kernel(k, a, reference=5)`` blamed the reference for
neuronsim's own ``UnboundLocalError``; ``simulate_kernel(None, a)`` was an internal error)."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import standins
from neuronsim.nki import simulate_kernel
from neuronsim.verify.nki.run import run_kernel


def _double():
    with standins():
        import nki.language as nl

        def double(x):
            out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            nl.store(out, nl.add(nl.load(x), nl.load(x)))
            return out
    return double


def test_a_reference_that_is_no_function_is_refused_by_name():
    with pytest.raises(TypeError, match="the reference must be a function of the kernel's inputs, not int 5"):
        run_kernel(_double(), np.ones((4, 8), np.float32), reference=5)


@pytest.mark.parametrize("kernel", [None, 3, np.ones(2)])
def test_a_kernel_that_is_no_function_is_refused_by_name(kernel):
    with pytest.raises(TypeError, match="the kernel must be an NKI kernel function or 'file.py::func', not "):
        simulate_kernel(kernel, np.ones((4, 8), np.float32))


@pytest.mark.parametrize("call, words", [
    (lambda: __import__("neuronsim.machine.nki", fromlist=["trace"]).trace(None, np.ones(4)), "not NoneType None"),
    (lambda: __import__("neuronsim.machine.nki", fromlist=["trace"]).trace("k.py::f", np.ones(4)), "not str"),
    (lambda: __import__("neuronsim.machine.nki", fromlist=["trace"]).trace(_double(), np.ones((4, 8)), ranks=0),
     "ranks is a positive integer"),
    (lambda: __import__("neuronsim.machine.nki", fromlist=["load_kernel"]).load_kernel(None), "as a str, not NoneType"),
])
def test_trace_and_load_kernel_name_a_wrong_argument(call, words):
    # each was an internal error of neuronsim's, or its own AttributeError (probe_bf)
    with pytest.raises(TypeError, match=words):
        call()
