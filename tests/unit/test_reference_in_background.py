"""The user's numpy reference runs on a thread of its own while the scenario compiles and
simulates (issue 31): on its own copy of the inputs, its errors still located and raised, its
result the same as when it ran last."""

from __future__ import annotations

import threading
from types import ModuleType

import numpy as np
import pytest

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.verify.app.scenario_runs import get_scenario, in_background, run_scenario


def _with_reference(name: str, reference) -> ModuleType:
    shipped = get_scenario(name)
    module = ModuleType(f"with_reference_{name}")
    module.__file__ = shipped.__file__
    module.__doc__ = shipped.__doc__
    for attr in ("build", "inputs", "rtol", "atol"):
        if hasattr(shipped, attr):
            setattr(module, attr, getattr(shipped, attr))
    module.reference = reference
    return module


def test_the_reference_runs_on_another_thread_on_a_copy_of_the_inputs():
    shipped = get_scenario("matmul_tiled")
    seen = {}

    def mutating(values):
        seen["thread"] = threading.current_thread()
        answer = shipped.reference({k: v.copy() for k, v in values.items()})
        for array in values.values():  # a reference that scribbles on its inputs
            array[...] = 0
        return answer

    plain = run_scenario(shipped)
    run = run_scenario(_with_reference("matmul_tiled", mutating))
    assert seen["thread"] is not threading.main_thread()
    assert all(np.array_equal(run.inputs[k], v) for k, v in shipped.inputs(0).items())  # the run's own untouched
    assert run.outputs.keys() == plain.outputs.keys()
    assert all(np.array_equal(run.outputs[k], plain.outputs[k]) for k in plain.outputs)
    assert all(np.array_equal(run.reference[k], plain.reference[k]) for k in plain.reference)
    assert run.summary() == plain.summary() and not run.problems()


def test_the_inputs_are_copied_on_the_references_thread_not_the_runs(monkeypatch):
    """The run's thread hands the reference thread its own arrays and goes on: the copy (64 MB
    for a 4096^2 bf16 matmul's inputs, every page touched afresh) is made there."""
    import neuronsim.verify.app.scenario_runs as scenario_runs

    shipped = get_scenario("matmul_tiled")
    received = {}

    def reference(values):
        received.update(values)
        received["thread"] = threading.current_thread()
        return shipped.reference(values)

    handed = []
    real_background = scenario_runs.in_background

    def recording(fn, *args):
        handed.append(args)
        return real_background(fn, *args)

    monkeypatch.setattr(scenario_runs, "in_background", recording)
    inputs = shipped.inputs(0)
    module = _with_reference("matmul_tiled", reference)
    module.inputs = lambda seed: inputs
    run = run_scenario(module)
    assert not run.problems() and received["thread"] is not threading.main_thread()
    (_scenario, values), = handed
    assert all(values[k] is inputs[k] for k in inputs)  # the run's own arrays: no copy on its thread
    assert all(received[k] is not inputs[k] and np.array_equal(received[k], inputs[k]) for k in inputs)


@pytest.mark.parametrize("why", ["two BLAS threads", "inputs too large to copy"])
def test_the_reference_runs_where_it_did_with_blas_pools_of_several_threads_or_large_inputs(why, monkeypatch):
    """Two BLAS pools of two threads at once would take more cores than a 2-core machine has,
    and a large copy of the inputs costs more memory than the overlap is worth: then the
    reference runs after the simulation, on the calling thread, as before."""
    import neuronsim.verify.app.scenario_runs as scenario_runs

    seen = []
    shipped = get_scenario("matmul_tiled")

    def recording(values):
        seen.append(threading.current_thread())
        return shipped.reference(values)

    if why == "two BLAS threads":
        monkeypatch.setenv("NEURONSIM_BLAS_THREADS", "2")
    else:
        monkeypatch.setattr(scenario_runs, "BACKGROUND_REFERENCE_INPUT_BYTES", 1024)
    run = run_scenario(_with_reference("matmul_tiled", recording))
    assert seen == [threading.main_thread()] and not run.problems()


def test_a_reference_that_raises_is_a_located_error_of_the_scenario():
    def broken(_values):
        raise KeyError("lhsT")

    with pytest.raises(ProgramError) as err:
        run_scenario(_with_reference("matmul_tiled", broken))
    # located at the line of the scenario's own code that raised (the scenario file's, here this one's)
    raised_at = broken.__code__.co_firstlineno + 1
    assert err.value.path.endswith(f"test_reference_in_background.py:{raised_at}"), err.value.path
    assert "reference() raised KeyError" in str(err.value)


def test_in_background_hands_back_the_value_or_the_error():
    assert in_background(lambda a, b: a + b, 2, 3).result(timeout=30) == 5
    failed = in_background(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        failed.result(timeout=30)


def test_a_reference_may_work_in_place_on_read_only_inputs(monkeypatch):
    """The command line's inputs are read-only (a trace keeps them without a copy): a reference
    that works in place on them, on the calling thread, gets arrays it may write, and the run's
    own inputs stay as they were."""
    import neuronsim.verify.app.scenario_runs as scenario_runs

    shipped = get_scenario("matmul_tiled")
    given = shipped.inputs(0)
    for array in given.values():
        array.flags.writeable = False

    def in_place(values):
        answer = shipped.reference({k: v.copy() for k, v in values.items()})
        for array in values.values():
            array -= 1  # raises on a read-only array
        return answer

    module = _with_reference("matmul_tiled", in_place)
    module.inputs = lambda _seed: given
    monkeypatch.setattr(scenario_runs, "BACKGROUND_REFERENCE_INPUT_BYTES", 1024)  # on the calling thread
    run = run_scenario(module)
    assert not run.problems()
    assert all(np.array_equal(run.inputs[k], v) for k, v in shipped.inputs(0).items())
