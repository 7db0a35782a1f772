"""PSUM banks shared by two kernel tensors, and PSUM tiles more than the banks hold
(``tests/nki/kernels/direct_alloc_round4b.py``).

The compiler builds its deps after allocation, on addresses: a bank handed from one directly
allocated tensor to another once the first is dead is ordered, no race (``attn_fwd_v9`` /
``attn_fwd_v10``); written over while the first is still live it is a clobber, reported at
both kernel lines.  Auto-allocated PSUM tiles that do not fit the eight banks together are
spilled to SBUF and back (``attn_fwd_v3``), counted, with the right outputs.
"""

from __future__ import annotations

import numpy as np

from neuronsim.machine.ir.program import MemoryKind
from neuronsim.passes import PassContext, run_pipeline
from neuronsim.passes.alloc_spill import PSUM_SPILL_KEY
from neuronsim.verify.nki.findings import nki_findings
from neuronsim_tests.nki_kit import GROUP_KERNELS, kernel_module, line_of, run_program, trace_file

KERNEL = GROUP_KERNELS / "direct_alloc_round4b.py"
NAME = "tests/nki/kernels/direct_alloc_round4b.py"


def _handoff(evict_late: bool):
    module = kernel_module(KERNEL)
    return module, trace_file(KERNEL, "bank_handoff", module.handoff_inputs(0), evict_late=evict_late)


def _banks_of(program, prefix: str) -> set[int]:
    return {t.bank for name, t in program.tensors.items() if t.memory == MemoryKind.PSUM and name.startswith(prefix)}


def test_a_bank_handed_to_another_tensor_once_dead_is_no_finding_and_computes_right():
    module, traced = _handoff(evict_late=False)
    assert _banks_of(traced.program, "tp_") == {0, 1} and _banks_of(traced.program, "mm_") == {0}  # shared bank 0
    assert [f.describe() for f in nki_findings(traced.program)] == []
    inputs = {n: v for n, v in traced.inputs.items() if not n.startswith("out")}
    wanted = module.handoff_reference(inputs["x"])
    run = run_program("bank_handoff", traced.program, inputs, lambda _v: wanted, 1e-4, 1e-4)
    assert run.problems() == [], run.problems()[:3]


def test_a_bank_written_over_while_its_tile_is_live_is_a_clobber_at_both_lines():
    _module, traced = _handoff(evict_late=True)
    found = nki_findings(traced.program)
    assert [(f.kind, f.dependence) for f in found] == [("allocation", "clobber")], [f.describe() for f in found]
    write = line_of(KERNEL, "# over tp[0] before its eviction")
    read = line_of(KERNEL, "t_sb = nisa.tensor_copy(tp[g]")
    assert found[0].first.startswith(f"nisa.nc_matmul at {NAME}:{write}")
    assert found[0].second.startswith(f"nisa.tensor_copy at {NAME}:{read}")
    assert {t.rsplit("_", 2)[0] for t in found[0].tensors} == {"tp", "mm"}


def test_more_psum_tiles_live_than_banks_are_spilled_to_sbuf_and_back():
    module = kernel_module(KERNEL)
    arrays = module.banks_inputs(n=12)
    traced = trace_file(KERNEL, "many_banks", arrays)
    ctx = PassContext(verify=False)
    placed = run_pipeline(traced.program, "alloc", ctx)
    spilled = ctx.stats["alloc"]["psum-spills"]
    copies = [i for i, _ in placed.instructions() if i.extras and PSUM_SPILL_KEY in i.extras]
    assert 4 <= spilled <= 12 and len(copies) == 2 * spilled  # twelve banks' worth live, eight banks
    assert {i.engine for i in copies} == {"act"}
    assert all(t.bank is not None and t.bank < 8 for t in placed.tensors.values() if t.memory == MemoryKind.PSUM)
    inputs = {n: v for n, v in traced.inputs.items() if n != "out"}
    wanted = module.banks_reference(inputs["a"], inputs["b"])
    run = run_program("many_banks", traced.program, inputs, lambda _v: wanted, 1e-4, 1e-4)
    assert run.problems() == [], run.problems()[:3]


def test_tiles_that_fit_the_banks_are_not_spilled():
    module = kernel_module(KERNEL)
    traced = trace_file(KERNEL, "many_banks", module.banks_inputs(n=6))
    ctx = PassContext(verify=False)
    placed = run_pipeline(traced.program, "alloc", ctx)
    assert "psum-spills" not in ctx.stats["alloc"]
    assert not any(i.extras and PSUM_SPILL_KEY in i.extras for i, _ in placed.instructions())
    assert np.unique([t.bank for t in placed.tensors.values() if t.memory == MemoryKind.PSUM]).size == 6


def _nine_banks(in_loop: bool):
    """Nine full-bank PSUM tiles written one after another, then all read: one more than the
    banks, at top level (gaps to spill over) or inside one kept loop (none)."""
    from neuronsim_tests.passes_kit import ins, loop, prog, ps, sb

    tiles = [ps(f"t{k}", bank=None, free=512) for k in range(9)]
    body = [ins(f"w{k}", "pe", "matmul", reads=["src", "src"], writes=[f"t{k}"]) for k in range(9)]
    body += [ins(f"r{k}", "act", "activation", reads=[f"t{k}"], writes=["out"]) for k in range(9)]
    tensors = [*tiles, sb("out", free=512, offset=0), sb("src", offset=4096)]
    return prog(tensors, loop("i", 2, *body)) if in_loop else prog(tensors, *body)


def test_psum_tiles_with_no_gap_to_spill_over_are_refused_at_the_tile():
    from neuronsim.machine.ir.errors import ProgramError

    placed = run_pipeline(_nine_banks(in_loop=False), "alloc", PassContext(verify=False))
    assert sorted({t.bank for t in placed.tensors.values() if t.memory == MemoryKind.PSUM}) == list(range(8))
    try:
        run_pipeline(_nine_banks(in_loop=True), "alloc", PassContext(verify=False))
    except ProgramError as err:
        assert err.path.startswith("tensors.t") and "no PSUM bank has room" in err.message
        assert "no tile live with it has a gap in its uses" in err.message
    else:
        raise AssertionError("nine banks live inside one loop were placed")
