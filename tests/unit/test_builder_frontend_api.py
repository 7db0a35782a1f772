"""The builder's API for a frontend (what the NKI tracer uses instead of its private fields):
amending a tensor's extras, marks in the open body, moving emitted nodes out of loops, and a
trial whose declarations and instructions are undone."""

from __future__ import annotations

import pytest

from neuronsim.machine.build.builder import DRAM_ALIGN, KernelBuilder
from neuronsim.machine.ir.program import Loop


def _kernel() -> tuple[KernelBuilder, object, object]:
    kb = KernelBuilder("k")
    x = kb.dram_input("x", (128, 4), "float32")
    t = kb.sbuf("t", (128, 4), "float32")
    return kb, x, t


def test_amended_extras_are_the_declaration_and_the_view_is_read_only():
    kb, _x, _t = _kernel()
    kb.amend_extras("t", {"x-a": 1})
    tensor = kb.amend_extras("t", {"x-b": 2, "x-a": 3})
    assert dict(tensor.extras) == {"x-a": 3, "x-b": 2} and kb.tensors["t"] is tensor
    assert kb.program().tensors["t"].extras == tensor.extras
    with pytest.raises(TypeError):
        kb.tensors["t"] = tensor  # type: ignore[index]


def test_marks_see_what_was_emitted_and_move_it_out_of_the_loops_opened_since():
    kb, x, t = _kernel()
    assert kb.depth == 1
    with kb.loop("i", 3):
        assert kb.depth == 2 and kb.name_taken("i") and not kb.name_taken("j")
        start = kb.mark()
        kb.memset(t, 0.0, name="zero")
        kb.dma_copy(t, x, name="load")
        assert [node.name for node in kb.emitted_since(start)] == ["zero", "load"]
        kb.replace_since(start, list(reversed(kb.emitted_since(start))))
        moved = kb.mark() - 1  # the memset, now last
        kb.move_since(moved, 1)
        with pytest.raises(ValueError, match="no body open at depth 3"):
            kb.move_since(moved, 3)
    zero, loop = kb.program().body  # moved before the loop: it runs once
    assert isinstance(loop, Loop) and [node.name for node in loop.body] == ["load"] and zero.name == "zero"


def test_a_trial_is_undone_and_leaves_the_next_addresses_as_they_were():
    kb, x, t = _kernel()
    kb.dma_copy(t, x, name="load")
    before = (dict(kb.tensors), kb.draft().body)
    with kb.trial():
        probe = kb.dram_output("probe", (128, 4), "float32")
        kb.dma_copy(probe, t, name="store")
        draft = kb.draft()
        assert "probe" in draft.tensors and [n.name for n in draft.body] == ["load", "store"]
    assert (dict(kb.tensors), kb.draft().body) == before and not kb.name_taken("store")
    out = kb.dram_output("y", (128, 4), "float32")
    assert out.tensor.address == DRAM_ALIGN  # where "probe" was: its bytes were given back
    assert kb.next_dram_address(10) == 2 * DRAM_ALIGN and kb.next_dram_address(1) == 3 * DRAM_ALIGN


def test_nested_trials_undo_their_own_changes_only_and_the_outer_one_everything_since_it_began():
    kb, x, t = _kernel()
    kb.dma_copy(t, x, name="load")
    before = (dict(kb.tensors), kb.draft().body, kb.write_count("t"), kb.emitted)
    with kb.trial():
        kb.amend_extras("t", {"x-a": 1})
        kb.memset(t, 0.0)  # a generated name: "memset0"
        with kb.trial():
            kb.amend_extras("t", {"x-a": 2})
            kb.sbuf("u", (128, 4), "float32")
            kb.memset(t, 1.0)
            assert kb.write_count("t") == 3 and kb.name_taken("memset1")
        assert dict(kb.tensors["t"].extras) == {"x-a": 1} and "u" not in kb.tensors
        assert kb.write_count("t") == 2 and kb.name_taken("memset0") and not kb.name_taken("memset1")
        assert kb.memset(t, 2.0) == "memset1"  # the inner trial's name is free again
    assert (dict(kb.tensors), kb.draft().body, kb.write_count("t"), kb.emitted) == before
    assert not kb.writes_tensor("u") and kb.memset(t, 0.0) == "memset0"
    with pytest.raises(ValueError, match="declared twice"):  # what was declared before a trial stays
        with kb.trial():
            kb.sbuf("t", (128, 4), "float32")
    assert "t" in kb.tensors and kb.tensors["t"].extras == before[0]["t"].extras
