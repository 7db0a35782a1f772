"""A DMA queue the machine does not have, in a program built in code, is one located error."""

from __future__ import annotations

import pytest

from neuronsim.machine.formats.validate import validate_program
from neuronsim.machine.ir.errors import ProgramError
from neuronsim_tests.passes_kit import dr, ins, prog, sb


def _load(queue, op="dma_copy", engine="sp"):
    tensors = [sb("t"), dr("a", 0, 128 * 64)]
    return prog(tensors, ins("ld", engine, op, reads=["a"] if op == "dma_copy" else ["t"], writes=["t"], queue=queue))


def test_an_unknown_queue_is_refused_at_its_path():
    with pytest.raises(ProgramError) as err:
        validate_program(_load("q0"))
    assert err.value.path == "body[0].queue" and "'q0'" in str(err.value) and "dma0" in str(err.value)


def test_a_queue_on_a_compute_op_is_refused_at_its_path():
    with pytest.raises(ProgramError) as err:
        validate_program(_load("dma0", op="tensor_copy", engine="dve"))
    assert err.value.path == "body[0].queue" and "only DMA ops" in str(err.value)


def test_the_machines_queues_and_none_pass():
    validate_program(_load("dma2"))
    validate_program(_load(None))
