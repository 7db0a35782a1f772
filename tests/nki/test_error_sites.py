"""Whole-program errors name the kernel's file:line and variable (machine/nki/frontend.py):
a tensor breaking a placement rule at the line that declared it, a non-HBM return value at the
return line, a kernel's arguments at its definition (a callable object's ``__call__``), a
failure with no kernel frame by the kernel's name: never ``<kernel>``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, trace
from neuronsim.machine.nki.errors import NkiInternalError
from neuronsim_tests.nki_kernels import KERNELS, kernel
from neuronsim_tests.nki_kit import GROUP_KERNELS, kernel_module

FILE = "tests/nki/kernels/error_sites.py"


def _line(text: str) -> int:
    with open(f"{KERNELS}/error_sites.py") as source:
        return next(n for n, line in enumerate(source, 1) if text in line)


def _error(func: str) -> str:
    with pytest.raises(NkiError) as err:
        trace(kernel(f"error_sites.py::{func}"), np.ones((128, 8), np.float32))
    return str(err.value)


def test_sbuf_tile_past_the_end_names_its_declaration_and_variable():
    message = _error("tile_past_sbuf_end")
    assert message.startswith(f"{FILE}:{_line('# past the end')}: late (nl.ndarray): bytes [196600, 196632)")


def test_dram_tensor_too_large_names_its_declaration_and_variable():
    message = _error("output_larger_than_dram")
    assert message.startswith(f"{FILE}:{_line('# 4 TiB')}: huge (nl.ndarray): 4398046511104 bytes")


def test_returning_an_sbuf_tile_names_the_return_line():
    assert _error("returns_a_tile").startswith(f"{FILE}:{_line('# an SBUF tile')}: a kernel returns HBM tensors")


def test_a_callable_object_kernel_is_located_at_its_call_method():
    obj = kernel_module(GROUP_KERNELS / "error_sites.py").CallableKernel()
    with pytest.raises(NkiError) as err:
        trace(obj, np.ones((4, 4), np.float32))  # y missing
    assert str(err.value).startswith(f"{FILE}:{_line('def __call__(self, x, y):')}: arguments do not fit")


def test_a_failure_without_kernel_frames_names_the_kernel():
    with pytest.raises(NkiInternalError) as err:
        trace(math.sqrt, np.ones((2, 2), np.float32))
    assert "<kernel>" not in str(err.value) and "kernel sqrt" in str(err.value)
