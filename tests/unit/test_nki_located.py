"""x-source: kept through every pass and the loader, and named by every report."""

from __future__ import annotations

import json
from dataclasses import replace

from click.testing import CliRunner

import io

from neuronsim.machine.formats.program_json import load_program, program_to_json, save_program
from neuronsim.machine.ir.program import frozen_mapping
from neuronsim.machine.sim.export import chrome_trace
from neuronsim.machine.sim.simulator import simulate
from neuronsim.machine.ir.source import source_of, source_text
from neuronsim.passes import ALL_PASSES, DEFAULT_PIPELINE, PassContext, run_pipeline
from neuronsim.passes.analysis.explain import explain
from neuronsim_tests.nki_programs import copy_program, loop_program
from neuronsim_tests import ROOT
from neuronsim.verify.cli import cli
from neuronsim.verify.app.html_report import build_report, render_html
from neuronsim.verify.own_races import own_races
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.race_report import describe_race, render_report
from neuronsim.machine.order.unroll import unroll

RACY = str(ROOT / "examples/matmul_k_loop_racy.json")
LINES = {"ld_x": (61, "nl.load"), "ld_w": (62, "nl.load"), "mm": (88, "nisa.nc_matmul")}


def _located_racy():
    """The racy K loop with the lines of a made-up attention.py on its instructions."""

    def locate(inst):
        line, call = LINES.get(inst.name, (99, "nl.copy"))
        indices = {"k": "k"} if inst.name in LINES else {}
        source = {"file": "attention.py", "line": line, "call": call, "indices": indices}
        return replace(inst, extras=frozen_mapping({**inst.extras, "x-source": source}))

    return load_program(RACY).map_instructions(locate)


def _sources(program):
    return {inst.name: source_of(inst) for inst, _ in program.instructions()}


def test_default_pipeline_keeps_every_instruction_source():
    for program in (_located_racy(), loop_program(), copy_program()):
        before = _sources(program)
        compiled = run_pipeline(program, DEFAULT_PIPELINE, PassContext())
        after = _sources(compiled)
        assert set(after) == set(before) and all(after[name] == before[name] for name in before)
        assert all(after.values())


def test_every_pass_keeps_the_source_and_unrolling_binds_the_indices():
    program = _located_racy()
    for name in ALL_PASSES:
        out = run_pipeline(program, name, PassContext())
        sources = _sources(out)
        assert all(sources.values()), name
        # schedule unrolls through expand-scheduling-units: its instances are the unroller's
        if name in ("expand-scheduling-units", "schedule"):
            assert sources["mm[2]"].text() == "nisa.nc_matmul at attention.py:88 [k=2]", name
            assert sources == _unrolled_sources(program), name
        else:
            assert sources == _sources(program), name


def _unrolled_sources(program):
    """The sources of the racy K loop unrolled (3 iterations): ``NAME[k]`` binds ``k``."""
    sources = {}
    for name, source in _sources(program).items():
        if name in LINES:
            sources.update({f"{name}[{k}]": replace(source, indices=(("k", k),)) for k in range(3)})
        else:
            sources[name] = source
    return sources


def test_loader_round_trips_source(tmp_path):
    program = _located_racy()
    path = tmp_path / "p.json"
    save_program(program, str(path))
    again = load_program(str(path))
    assert _sources(again) == _sources(program)
    doc = program_to_json(again)
    assert doc["body"][3]["body"][2]["x-source"] == {"file": "attention.py", "line": 88, "call": "nisa.nc_matmul",
                                                     "indices": {"k": "k"}}
    assert load_program(io.StringIO(json.dumps(doc))).instruction_map()["mm"].extras["x-source"]["line"] == 88


def test_check_names_the_kernel_lines():
    program = _located_racy()
    unrolled = unroll(program)
    text = render_report(check_program(program), unrolled)
    assert ("WAR: nisa.nc_matmul at attention.py:88 [k=0] / nl.load at attention.py:61 [k=1], "
            "sbuf p[0,128) b[0,256)") in text
    assert "fix: ld_x (nl.load at attention.py:61) waits for mm (nisa.nc_matmul at attention.py:88)" in text


def test_programs_without_source_print_as_before():
    program = load_program(RACY)
    race = check_program(program).races[0]
    assert describe_race(race, unroll(program)) == describe_race(race) == "WAR mm[0] / ld_x[1]  sbuf p[0,128) b[0,256)"
    assert "fix: ld_x waits for mm (previous iteration)" in render_report(check_program(program), unroll(program))


def test_show_lists_the_line_of_each_instruction():
    result = CliRunner().invoke(cli, ["show", "-"], input=json.dumps(program_to_json(_located_racy())))
    assert result.exit_code == 0, result.output
    line = next(text for text in result.output.splitlines() if text.strip().startswith("mm "))
    assert line.endswith("@ nisa.nc_matmul at attention.py:88 [k=k]")


def test_footprint_warning_and_json_name_the_lines():
    found = own_races(_located_racy())
    assert found.sources[0] == ("nisa.nc_matmul at attention.py:88 [k=0]", "nl.load at attention.py:61 [k=1]")
    assert found.to_json()["races"][0]["first_source"] == "nisa.nc_matmul at attention.py:88 [k=0]"
    assert "WAR: nisa.nc_matmul at attention.py:88 [k=0] / nl.load at attention.py:61 [k=1]" in found.warning()[0]
    assert "first_source" not in own_races(load_program(RACY)).to_json()["races"][0]


def test_explain_names_the_lines():
    note = explain(_located_racy(), "mm", "ld_x")
    text = note.render()
    assert "  mm: nisa.nc_matmul at attention.py:88 [k=k]" in text
    assert "[nisa.nc_matmul at attention.py:88 [k=0] / nl.load at attention.py:61 [k=2]]" in text
    assert note.to_json()["a_source"] == "nisa.nc_matmul at attention.py:88 [k=k]"


def test_perfetto_slices_carry_the_source():
    trace = simulate(_located_racy(), functional=False).trace
    slices = [e for e in chrome_trace(trace)["traceEvents"] if e.get("ph") == "X" and e["name"].startswith("mm[")]
    assert [e["args"]["source"] for e in slices] == [f"nisa.nc_matmul at attention.py:88 [k={k}]" for k in range(3)]
    plain = simulate(load_program(RACY), functional=False).trace
    assert all("source" not in e.get("args", {}) for e in chrome_trace(plain)["traceEvents"])


def test_html_report_names_the_lines():
    report = build_report(_located_racy(), "racy", passes="dep-reduction")
    group = report.race_groups[0]
    assert (group.first_source, group.second_source) == ("nisa.nc_matmul at attention.py:88 [k=k]",
                                                         "nl.load at attention.py:61 [k=k]")
    html = render_html(report)
    assert "nl.load at attention.py:61 [k=1]" in html
    assert "kernel lines" not in render_html(build_report(load_program(RACY), "racy", passes="dep-reduction"))


def test_malformed_source_is_carried_not_trusted():
    inst = copy_program().body[0]
    bad = replace(inst, extras=frozen_mapping({"x-source": {"file": 3, "line": "ten"}}))
    assert source_of(bad) is None and source_text(bad) is None


def test_check_json_carries_the_lines():
    result = CliRunner().invoke(cli, ["check", "-", "--json"], input=json.dumps(program_to_json(_located_racy())))
    assert result.exit_code == 1
    race = json.loads(result.stdout)["races"][0]
    assert (race["first_source"], race["second_source"]) == ("nisa.nc_matmul at attention.py:88 [k=0]",
                                                             "nl.load at attention.py:61 [k=1]")
