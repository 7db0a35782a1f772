"""Progress on long work: a live bar on a terminal, one summary line per long stage otherwise."""

from __future__ import annotations

import io
import json
import time

import pytest
from click.testing import CliRunner

from neuronsim.machine.formats.program_json import loads_program
from neuronsim.machine.sim.simulator import simulate
from neuronsim.passes import parse_pipeline, run_pipeline
from neuronsim_tests.bad_inputs import valid_text
from neuronsim.verify.cli import cli
from neuronsim.verify.app.progress import Progress, pass_progress


def test_off_a_terminal_a_long_stage_says_what_it_did():
    out = io.StringIO()
    with Progress(live=False, stream=out, summary_min=100) as progress:
        with progress.stage("check", 500, unit="instance") as update:
            update(250)
            update(500)
        with progress.stage("small", 99, unit="instance") as update:
            update(99)
        with progress.stage("stopped", 500, unit="example") as update:
            update(30)
    lines = out.getvalue().splitlines()
    assert [line.split(" in ")[0] for line in lines] == ["check: 500 instances", "stopped: 30 of 500 examples"]


def test_a_failing_stage_prints_nothing():
    out = io.StringIO()
    with pytest.raises(ValueError):
        with Progress(live=False, stream=out, summary_min=0) as progress, progress.stage("check", 10) as update:
            update(5)
            raise ValueError("bad input")
    assert out.getvalue() == ""


def test_a_stage_an_exception_ends_still_counts_its_seconds():
    """``run`` catches a compile that found no room and compiles a retrace: the stage line adds both."""
    with Progress(live=False, stream=io.StringIO()) as progress:
        with pytest.raises(ValueError), progress.stage("compile", None):
            time.sleep(0.02)
            raise ValueError("no room")
        with progress.stage("compile", None):
            pass
    assert progress.seconds["compile"] >= 0.02


def test_on_a_terminal_the_bar_is_transient():
    out = io.StringIO()
    with Progress(live=True, stream=out, summary_min=0) as progress:
        with progress.stage("compile", 3, unit="pass") as update:
            update(1, "anti-deps")
    assert "compile" in out.getvalue() and "compile: 3 passes in" not in out.getvalue()


def test_the_pass_hook_names_the_pass_that_runs_next():
    seen = []
    program = loads_program(valid_text())
    passes = parse_pipeline("build-fdeps,dep-reduction")
    run_pipeline(program, passes, after_pass=pass_progress(lambda done, name=None: seen.append((done, name)), passes))
    assert seen == [(0, "build-fdeps"), (1, "dep-reduction"), (2, None)]


def test_a_hook_that_reads_no_program_is_given_none_and_the_pipeline_writes_none():
    """Writing a state's deps into a whole program after every pass is what a progress bar
    must not pay for: a hook marked ``program_unread`` gets None, any other the program."""
    from neuronsim.machine.ir.program import Program
    from neuronsim.passes.base import program_unread

    program = loads_program(valid_text())
    passes = parse_pipeline("build-fdeps,remove-redundancies,dep-reduction")
    given, counted = [], []
    run_pipeline(program, passes, after_pass=lambda p, prog, _ctx: given.append(type(prog)))
    run_pipeline(program, passes, after_pass=program_unread(lambda p, prog, _ctx: counted.append(prog)))
    assert given == [Program] * 3
    assert counted == [None] * 3


def test_the_simulator_reports_the_reference_then_each_run():
    steps = []
    simulate(loads_program(valid_text()), seeds=[None, 1, 2], progress=lambda done, total: steps.append((done, total)))
    assert steps == [(1, 4), (2, 4), (3, 4), (4, 4)]


def test_commands_print_summaries_only_for_long_work(tmp_path):
    doc = json.loads(valid_text())
    doc["body"][0]["trip_count"] = 40_000  # 120,000 instances: past the summary threshold
    big = tmp_path / "big.json"
    big.write_text(json.dumps(doc))
    small = tmp_path / "small.json"
    small.write_text(valid_text())
    quiet = CliRunner().invoke(cli, ["check", str(small)])
    assert quiet.exit_code == 0 and quiet.stderr == ""
    loud = CliRunner().invoke(cli, ["check", str(big), "--json"])
    assert loud.exit_code == 0 and json.loads(loud.stdout)["races"] == []
    assert [line.split(":")[0] for line in loud.stderr.splitlines()] == ["unroll", "check"]
