"""Frictions of a kernel author and a pass author (issue 27.3) and BLAS threads (issue 31.1),
through the library: tolerances and largest errors, BLAS pinning, progress from the start,
tables that keep their numbers, grouped NKI findings, what a fuzzed pass did."""

from __future__ import annotations

from dataclasses import replace

import io
from pathlib import Path

import numpy as np
import pytest
from rich.table import Table
from threadpoolctl import threadpool_info

from neuronsim.machine.formats.program_json import load_program
from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.sim import blas
from neuronsim.machine.sim.simulator import simulate
from neuronsim.machine.sim.tolerance import beyond, largest_errors, plain_number
from neuronsim.machine.sim.trace import TraceSummary, summary_table
from neuronsim.verify.app import progress as progress_module
from neuronsim.verify.fuzz import assert_pass_sound, check_pass
from neuronsim.verify.nki.finding import NkiFinding
from neuronsim.verify.nki.findings import grouped_findings
from neuronsim.verify.app.progress import Progress
from neuronsim.verify.app.console import people_console
from neuronsim.verify.app.scenario_runs import compare_outputs, load_scenario, run_scenario
from neuronsim.verify.strategies import strip_deps

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


# -- tolerances and the largest error -------------------------------------------------------

def test_largest_errors_count_nan_against_a_number_as_infinite_and_skip_zero_references_for_relative():
    errors = largest_errors(np.array([1.0, np.nan, 0.5, np.nan]), np.array([1.0, 2.0, 0.0, np.nan]))
    assert errors.absolute == np.inf and errors.relative == np.inf
    assert errors.to_json() == {"absolute": None, "relative": None}  # strict JSON
    zero_ref = largest_errors(np.array([0.25, 4.0]), np.array([0.0, 2.0]))
    assert (zero_ref.absolute, zero_ref.relative) == (2.0, 1.0)


def test_beyond_is_numpys_isclose_and_zero_tolerance_is_any_difference():
    got, want = np.array([1.0, 1.05, 2.0]), np.array([1.0, 1.0, 1.0])
    assert beyond(got, want, rtol=0.1, atol=0.0).tolist() == [False, False, True]
    assert beyond(got, want, rtol=0.0, atol=0.0).tolist() == [False, True, True]


def test_compare_outputs_prints_plain_numbers_and_the_largest_error():
    [line] = compare_outputs({"y": np.array([-0.5255, 1.0])}, {"y": np.array([-0.25, 1.0])}, 0.01, 0.0)
    assert "np.float64" not in line and "simulated -0.5255, reference -0.25" in line
    assert "largest error 0.2755 (relative 1.102)" in line
    assert plain_number(np.float32(3.5)) == "3.5" and plain_number(np.int64(7)) == "7"


def test_simulate_with_a_tolerance_accepts_what_it_covers_and_records_the_largest_error_either_way():
    racy = load_program(str(EXAMPLES / "matmul_k_loop_racy.json"))
    exact = simulate(racy, seeds=range(6))
    assert exact.differs and exact.errors.absolute > 0
    loose = simulate(racy, seeds=range(6), atol=exact.errors.absolute * 2)
    assert not loose.differs and loose.errors == exact.errors
    assert "np.float64" not in str(exact.first_difference.diffs[0])


def test_run_scenario_takes_tolerances_over_the_scenario_and_runs_timing_only():
    module = load_scenario("matmul_tiled")
    default = run_scenario(module)
    assert (default.rtol, default.atol) == (module.rtol, module.atol) and not default.problems()
    assert default.reference_errors().absolute > 0  # bf16 rounding: printed even when equal
    strict = run_scenario(module, rtol=0.0, atol=0.0)
    assert any("beyond rtol=0.0, atol=0.0" in p for p in strict.problems())
    timing = run_scenario(module, functional=False)
    assert timing.timing_only and not timing.outputs and not timing.problems()
    assert timing.simulation.trace.makespan == default.simulation.trace.makespan


# -- BLAS threads ---------------------------------------------------------------------------

def test_blas_is_held_at_one_thread_inside_a_simulation_and_given_back_after(monkeypatch):
    monkeypatch.delenv(blas.BLAS_THREADS_ENV, raising=False)
    before = _blas_threads()
    seen = []
    simulate(load_program(str(EXAMPLES / "matmul_k_loop.json")), seeds=[None],
             progress=lambda *_: seen.append(_blas_threads()))
    assert seen and all(counts == [1] * len(counts) for counts in seen)
    assert _blas_threads() == before


def test_blas_is_held_at_one_thread_in_the_sequential_runs_too(monkeypatch):
    """The sequential reference runs (a trace's device-value reads, the NKI findings'
    confirming runs) hold BLAS as a simulation does (probe_p: a trace of 60 reads with the
    default threads took twice as long)."""
    from neuronsim.machine.sim import simulator
    from neuronsim.machine.sim.memory import initial_memory
    from neuronsim.machine.sim.plan import build_plan

    monkeypatch.delenv(blas.BLAS_THREADS_ENV, raising=False)
    before, seen = _blas_threads(), []
    begin = simulator.Executor.begin
    monkeypatch.setattr(simulator.Executor, "begin", lambda self, i: seen.append(_blas_threads()) or begin(self, i))
    plan = build_plan(load_program(str(EXAMPLES / "matmul_k_loop.json")))
    simulator.run_sequential(plan, initial_memory(plan.program, plan.spec, 0, {}))
    assert seen and all(counts == [1] * len(counts) for counts in seen)
    assert _blas_threads() == before


def test_blas_threads_come_from_the_environment(monkeypatch):
    monkeypatch.setenv(blas.BLAS_THREADS_ENV, "default")
    assert blas.blas_threads() is None
    monkeypatch.setenv(blas.BLAS_THREADS_ENV, "2")
    with blas.blas_limited():
        assert set(_blas_threads()) == {2}
    monkeypatch.setenv(blas.BLAS_THREADS_ENV, "many")
    with pytest.raises(ProgramError) as err:
        blas.blas_threads()
    assert err.value.path == blas.BLAS_THREADS_ENV


# -- progress and tables --------------------------------------------------------------------

def test_an_announcing_progress_says_when_a_big_stage_starts_and_when_a_small_one_was_slow(monkeypatch):
    monkeypatch.setattr(progress_module, "SLOW_SECONDS", 0.0)
    out = io.StringIO()
    with Progress(live=False, stream=out, summary_min=1000, announce=True) as progress:
        with progress.stage("simulate", 5, unit="run", size=5000):
            assert out.getvalue() == "simulate: 5 runs (5,000 in all) ...\n"  # before the work, not after
        with progress.stage("trace", None):
            pass
    lines = out.getvalue().splitlines()
    assert lines[1].startswith("simulate: 5 runs in ") and lines[2].startswith("trace: done in ")


def test_a_table_off_a_terminal_keeps_every_digit():
    stream = io.StringIO()
    table = Table()
    for column in ("what", "figure"):
        table.add_column(column)
    for k in range(8):
        table.add_row(f"a long label for row {k} that takes room", f"{12_917_500_123_456 + k:,} ns")
    people_console(stream).print(table)
    assert "12,917,500,123,463 ns" in stream.getvalue() and "…" not in stream.getvalue()


def test_the_engine_table_folds_rather_than_cuts_on_a_narrow_terminal():
    from rich.console import Console

    from neuronsim.machine.sim.trace import ComponentFigures

    row = ComponentFigures(name="dma0", instances=123_456_789, busy_ns=12_917_500_000.5, wait_ns=9_999_999_999.5,
                           bytes=123_456_789_012)
    stream = io.StringIO()
    summary = TraceSummary(makespan_ns=13e9, components=(row,), dma_bytes=123_456_789_012)
    Console(file=stream, width=60).print(summary_table(summary))
    assert "…" not in stream.getvalue()


# -- NKI findings grouped -------------------------------------------------------------------

def test_alike_findings_on_one_pair_of_lines_are_one_line_with_a_count():
    alike = [NkiFinding(kind="carried", dependence="RAW", first=f"add at k.py:9 [i={i}]",
                        second=f"mul at k.py:12 [i={i + 1}]", loop="i", distance=1, tensors=(f"t{i}",))
             for i in range(4)]
    other = NkiFinding(kind="carried", dependence="RAW", first="add at k.py:9 [i=0]", second="mul at k.py:14 [i=1]",
                       loop="i", distance=1)
    lines = grouped_findings([*alike, other])
    assert len(lines) == 2 and lines[0].endswith("(4 findings of this kind on these lines)")
    assert "k.py:14" in lines[1] and "findings of this kind" not in lines[1]


# -- what a fuzzed pass did -----------------------------------------------------------------

def test_a_pass_that_changes_nothing_is_vacuous_not_sound():
    result = check_pass(lambda program: program, replace="dep-reduction", examples=6, seed=0)
    assert result.ok and result.vacuous and result.changed == 0
    assert result.effect_text("dep-reduction").startswith("vacuous:")
    with pytest.raises(AssertionError, match="^vacuous: your pass"):
        assert_pass_sound(lambda program: program, replace="dep-reduction", examples=6, seed=0)


def test_a_pass_appended_after_the_pipeline_is_judged_on_its_own_work():
    # without --replace the pass runs after the whole pipeline: its input is dep-reduction's
    # output (the effect was read from dep-reduction's slot: an identity pass "dropped deps")
    result = check_pass(lambda program: program, examples=20, seed=0)
    assert result.ok and result.vacuous and result.changed == 0 and result.dropped == 0


def test_the_fix_line_of_a_race_across_iterations_adds_a_loop_carried_dep():
    # a pass that drops every loop-carried dep leaves only races across iterations: the fix
    # line said add {"on": ...} without loop_carried, which the loader refuses (a probe)
    def drop_carried(program):
        return program.map_instructions(
            lambda inst: replace(inst, deps=tuple(d for d in inst.deps if not d.loop_carried)))

    result = check_pass(drop_carried, replace="dep-reduction", examples=200, seed=0, shrink=False)
    assert not result.ok and result.failure.check == "races", result.failure
    fix = result.failure.fix
    assert result.failure.race["loop_carried"] and "(previous iteration)" in fix, fix
    assert fix.startswith("your pass dropped") or '"loop_carried": true' in fix, fix


def test_assert_pass_sound_leads_with_the_fix_line_and_the_saved_file(tmp_path):
    with pytest.raises(AssertionError) as err:
        assert_pass_sound(strip_deps, replace="dep-reduction", examples=30, seed=0, shrink=False,
                          folder=str(tmp_path))
    lines = str(err.value).splitlines()
    assert lines[0].startswith("your pass ") and "needed for this" in lines[0]  # the fix line first
    saved = lines[1].removeprefix("saved: ").split(" (")[0]
    assert lines[1].startswith("saved: ") and Path(saved).is_file() and Path(saved).parent == tmp_path
    assert len(lines) <= 5 and '"tensors"' not in str(err.value)  # no program dumped into the message
    counted = check_pass(strip_deps, replace="dep-reduction", examples=30, seed=0, shrink=False)
    assert counted.changed >= 1 and counted.dropped >= 1 and counted.added == 0
