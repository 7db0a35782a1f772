"""Every construct neuronsim refuses stops the trace with one line naming it and its kernel line."""

from __future__ import annotations

import re

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, load_kernel, trace
from neuronsim_tests.nki_kernels import kernel

LINE = re.compile(r"^tests/nki/kernels/unsupported\.py:(\d+): [^\n]+$")

REFUSED = [
    ("two_core_sendrecv", "nisa.sendrecv is not supported (two-core kernels"),
    ("two_core_barrier", "nisa.core_barrier is not supported (two-core kernels"),
    ("collective", "nki.collectives.all_reduce is not supported (collectives"),
    ("register_loop", "a register's value is known only on the device: loop over it with nl.dynamic_range"),
    ("unknown_name", "nl.cumsum: no such name in nki.language (did you mean nl.sum?)"),
    ("misspelt_module", "nki.langauge: no such name in nki (did you mean nki.language?)"),
    ("rmw_dma", "nisa.dma_copy(dst_rmw_op=multiply) is not supported (the ISA adds only"),
    ("partition_and_free_reduce", "a reduction over the partition axis is not supported"),
    ("mx_matmul", "nisa.nc_matmul_mx: dst must be in PSUM"),
    ("wide_dtype", "nl.int64 is not supported (64-bit data types)"),
    ("grid_inside", "launching an SPMD grid from inside a kernel is not supported (run the launched kernel itself "
                    "at top level: tests/nki/kernels/unsupported.py::grid_inside --grid 2)"),
    ("data_dependent_branch", "a tile's value used in Python control flow is not supported (data-dependent"),
]


def _error(func: str) -> str:
    with pytest.raises(NkiError) as info:
        trace(kernel(f"unsupported.py::{func}"), np.zeros((128, 64), np.float32))
    message = str(info.value)
    assert LINE.match(message), message  # one line, located in the kernel file
    return message


def _line_of(func: str, text: str) -> int:
    source = open("tests/nki/kernels/unsupported.py").read().splitlines()
    start = next(k for k, line in enumerate(source) if line.startswith(f"def {func}("))
    return next(k + 1 for k in range(start, len(source)) if text in source[k])


@pytest.mark.parametrize("func, expected", REFUSED)
def test_refused_with_the_construct_and_line(func, expected):
    message = _error(func)
    assert expected in message, message


def test_refusal_names_the_exact_line():
    assert _error("two_core_sendrecv").startswith(
        f"tests/nki/kernels/unsupported.py:{_line_of('two_core_sendrecv', 'nisa.sendrecv')}:")


def test_kernel_bug_is_located_not_a_traceback():
    message = _error("python_bug")
    line = _line_of("python_bug", 't + "one"')
    assert message.startswith(f"tests/nki/kernels/unsupported.py:{line}:")
    assert message.endswith("expected a tile or tensor, got str 'one'"), message


def test_hardware_rule_is_located_at_the_kernel_line():
    message = _error("pe_reads_psum")
    assert message.startswith(f"tests/nki/kernels/unsupported.py:{_line_of('pe_reads_psum', 'again, acc, acc')}:")
    assert "nisa.nc_matmul" in message


def test_too_many_partitions():
    assert "exceeds 128" in _error("too_many_partitions")


LEGACY_BRANCH = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def branch(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    if nl.max(t, axis=1) > 0:
        nl.store(out, t)
    return out
'''


def test_a_legacy_kernel_branching_on_a_tile_is_shown_what_its_api_has(tmp_path, monkeypatch):
    """neuronxcc.nki has no nisa.scalar_load or nl.if_else (the nki package's): a legacy kernel
    branching on a tile's contents (a public MoE kernel's ``if expert_id < 0``) is pointed to
    the element-wise choice it has, nl.where."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "legacy.py").write_text(LEGACY_BRANCH)
    with pytest.raises(NkiError) as info:
        trace(load_kernel("legacy.py::branch"), np.zeros((128, 64), np.float32))
    message = str(info.value)
    assert message.startswith("legacy.py:9: a tile's value used in Python control flow"), message
    assert "choose element by element with nl.where" in message, message
