"""``nisa.exponential`` (tests/nki/kernels/exponential_v4.py): NeuronCore-v4's Vector Engine
computes ``exp(src - max_value)`` and keeps the row sums in its accumulator; the op costs a
quarter of ACT's exp (the Trainium3 guide's "4x the throughput")."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.model.cost import instruction_cost
from neuronsim.machine.model.presets import resolve_machine
from neuronsim.machine.nki import NkiError, trace
from neuronsim.verify.nki.findings import call_findings
from neuronsim_tests.nki_kernels import f32, kernel, run


def test_the_guides_softmax_in_one_exponential():
    x = 4 * f32(128, 256)
    out = run(kernel("exponential_v4.py::softmax_rows"), x)["return0"]
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    program = trace(kernel("exponential_v4.py::softmax_rows"), x).program
    [exp] = [inst for inst, _ in program.instructions() if inst.op == "exponential"]
    assert exp.engine == "dve" and len(exp.writes) == 2  # the row sums written by the same instruction


def test_the_accumulator_chains_as_reduce_cmd_says():
    x = f32(128, 64, seed=1)
    sums = run(kernel("exponential_v4.py::chained_sums"), x)["return0"]
    np.testing.assert_allclose(sums[:, 0], np.exp(x - 1.0).sum(axis=1), rtol=1e-5)  # reset_reduce, then reduce
    np.testing.assert_allclose(sums[:, 1], 2.0 + np.exp(x[:, :32]).sum(axis=1), rtol=1e-5)  # load_reduce from 2


def test_reduce_init_without_load_reduce_is_refused_at_the_line():
    with pytest.raises(NkiError, match=r"exponential_v4.py:\d+: nisa.exponential: reduce_init is given with "
                                       r"reduce_cmd=load_reduce only"):
        trace(kernel("exponential_v4.py::init_without_load"), f32(128, 8))


def test_an_earlier_target_is_warned_and_runs():
    x = f32(128, 8)
    traced = trace(kernel("exponential_v4.py::on_trn1"), x)
    assert [f.kind for f in call_findings(traced)] == ["generation"]
    np.testing.assert_allclose(run(kernel("exponential_v4.py::on_trn1"), x)["return0"], np.exp(x), rtol=1e-6)


def test_a_quarter_of_acts_exp_on_trn3():
    spec = resolve_machine("trn3")
    program = trace(kernel("exponential_v4.py::softmax_rows"), f32(128, 2048)).program
    [exp] = [inst for inst, _ in program.instructions() if inst.op == "exponential"]
    cost = instruction_cost(exp, program.tensors, spec)
    assert cost.cycles == pytest.approx(2048 / 4)  # N / 4, where ACT's exp of the row is N
