"""The programs of an SPMD grid race on HBM bytes they share (verify/nki/core_races.py): the
``nl.nc`` / ``spmd_dim`` pages leave a grid's distribution over NeuronCores to the annotations
or the compiler, so nothing orders one program's accesses before another's.  Kernels:
tests/nki/kernels/grid_programs.py."""

from __future__ import annotations

from neuronsim.verify.nki.findings import nki_findings
from neuronsim_tests.nki_kit import GROUP_KERNELS, kernel_module, line_of, trace_file

KERNELS = GROUP_KERNELS / "grid_programs.py"


def _findings(func: str, grid=(2,)):
    traced = trace_file(KERNELS, func, kernel_module(KERNELS).inputs(0), grid=grid)
    return [f for f in nki_findings(traced.program, traced.run_inputs) if f.kind == "programs"]


def test_programs_storing_into_the_same_rows_are_an_error_naming_both_programs() -> None:
    (found,) = _findings("same_rows")
    line = line_of(KERNELS, "nl.store(o, value=")
    assert (found.severity, found.dependence) == ("error", "WAW")
    assert found.first.endswith(f"grid_programs.py:{line} (program 0)")
    assert found.second.endswith(f"grid_programs.py:{line} (program 1)")
    assert "an order the programs may take changes return0 (the programs in reverse order)" in found.describe()


def test_programs_on_their_own_slices_share_nothing() -> None:
    assert _findings("own_slices") == [] and _findings("own_slices", grid=(1,)) == []


def test_the_same_values_written_by_every_program_are_a_warning() -> None:
    found = _findings("same_zeros")
    assert found and {f.severity for f in found} == {"warning"}
    assert ("none of the 2 orders run changes the outputs on these inputs: the programs in reverse order and the "
            "programs' instructions interleaved") in found[0].describe()


def test_a_grid_of_one_is_no_grid() -> None:
    assert _findings("same_rows", grid=(1,)) == []


def test_a_big_grid_s_findings_say_when_they_start_and_stay_linear() -> None:
    """A grid whose programs all store the same rows: its findings stage announces itself (it ran
    in silence, for minutes at 10,000 programs) and names a bounded number of pairs (every pair
    of programs was one: probe_bc)."""
    import io

    from neuronsim.verify.app.progress import Progress
    from neuronsim.verify.nki.core_races import MAX_PAIRS
    from neuronsim.verify.nki.run import run_traced

    traced = trace_file(KERNELS, "same_rows", kernel_module(KERNELS).inputs(0), grid=(300,))
    out = io.StringIO()
    with Progress(live=False, stream=out, summary_min=500, announce=True) as progress:
        report = run_traced(traced, "same_rows", progress=progress, seeds=(None,), functional=False)
    assert "nki findings: started (" in out.getvalue()
    races = [f for f in report.findings if f.kind == "programs"]
    assert 0 < len(races) <= MAX_PAIRS
