"""``nisa.nc_matmul(accumulate=None)`` infers the flag per PSUM location, as its reference
says ("first write overwrites, subsequent writes accumulate"): matmuls into different column
blocks of one PSUM tile each start a group of their own (nki-library's TKG down projection,
run by moe_tkg, fills a bank so).  A matmul that says accumulate=True onto columns no matmul
wrote is still found, with its own sentence."""

from __future__ import annotations

import numpy as np

from neuronsim.machine.nki import trace
from neuronsim.verify.nki.findings import nki_findings
from neuronsim.verify.nki.run import run_kernel
from neuronsim_tests.nki_kernels import f32, kernel, run


def _flags(traced) -> list[bool]:
    return [inst.attrs["accumulate"] for inst, _ in traced.program.instructions() if inst.op == "matmul"]


def test_each_column_block_starts_its_own_group():
    lhs, rhs = f32(256, 64), f32(256, 64, seed=1)
    inferred = kernel("moe_family_psum.py::column_groups_inferred")
    traced = trace(inferred, lhs, rhs)
    # contraction tile 0 opens both blocks, tile 1 adds to each (a per-tile rule said [F, T, T, T])
    assert _flags(traced) == [False, False, True, True]
    assert nki_findings(traced.program) == []
    np.testing.assert_allclose(run(inferred, lhs, rhs)["return0"], lhs.T @ rhs, atol=1e-4)


def test_accumulating_onto_columns_nothing_wrote_is_found_in_its_own_words():
    lhs, rhs = f32(256, 64), f32(256, 64, seed=1)
    planted = kernel("moe_family_psum.py::column_groups_second_accumulates")
    traced = trace(planted, lhs, rhs)
    assert _flags(traced) == [False, True, True, True]
    found = nki_findings(traced.program)
    assert [f.kind for f in found] == ["psum-uninitialised"]
    _, report = run_kernel(planted, lhs, rhs)
    problems = report.problems()
    assert problems and "accumulates onto PSUM" in problems[0], problems
    assert not any("race between directly allocated tiles" in line for line in problems), problems
