"""Sync footprint: the minimum against a brute-force oracle, the counts, and the CLI."""

from __future__ import annotations

import json
from dataclasses import replace

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings

from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.formats.program_json import load_program, save_program
from neuronsim.machine.ir.program import Dep, Instruction, Program
from neuronsim.passes.dep_reduction import dep_reduction
from neuronsim_tests.oracles import brute_races
from neuronsim.verify.cli import cli
from neuronsim.verify.own_races import own_races
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.sync_counts import sync_report, minimum_sync, stage_sync
from neuronsim.verify.strategies import programs, strip_deps
from neuronsim_tests.footprint_kit import _oracle_minimum

SLOW = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
SMALL = dict(max_instructions=7, max_loops=2, max_trip=2)
K_LOOP = "examples/matmul_k_loop.json"






@settings(max_examples=50, **SLOW)
@given(programs(deps="random", **SMALL))
def test_minimum_equals_brute_force_oracle(program):
    minimum = minimum_sync(program)
    _, waits, by_kind = _oracle_minimum(program)
    assert minimum.figures.waits == waits
    assert dict(minimum.figures.by_kind) == by_kind  # each wait's kind: the strongest its bytes give
    assert minimum.figures.same_engine == 0  # rules 1-3 order every same-sequencer pair already


@settings(max_examples=50, **SLOW)
@given(programs(deps="random", **SMALL))
def test_reduction_never_adds_waits_or_semaphores_and_keeps_the_minimum(program):
    before = stage_sync(program, "given", simulate=False)
    after = stage_sync(dep_reduction(program).program, "dep-reduction", simulate=False)
    assert after.minimum == before.minimum
    assert after.figures.waits <= before.figures.waits
    assert after.figures.semaphore_waits <= before.figures.semaphore_waits <= before.figures.cross_engine
    assert after.figures.same_engine == 0  # a same-engine wait is always implied by rule 1


@settings(max_examples=40, **SLOW)
@given(programs(deps="none", max_instructions=9, max_loops=0))
def test_waits_on_every_unordered_conflict_reduce_exactly_to_the_minimum(program):
    """Deps = the minimum's pairs (loop-free, one instance each): the reduction reaches it."""
    kinds = {"RAW": EdgeKind.FLOW, "WAW": EdgeKind.OUTPUT, "WAR": EdgeKind.ANTI}
    names: dict[str, list[Dep]] = {}
    for race in brute_races(program):
        names.setdefault(race[2], []).append(Dep(race[1], kinds[race[0]]))
    with_deps = program.map_instructions(lambda i: replace(i, deps=tuple(names.get(i.name, ()))))
    reduced = stage_sync(dep_reduction(with_deps).program, "r", simulate=False)
    assert reduced.figures.waits == reduced.minimum.figures.waits
    assert reduced.figures.by_kind == reduced.minimum.figures.by_kind
    assert reduced.ratio in (None, 1.0)


def test_semaphores_collapse_waits_on_one_engine():
    body = (Instruction("a", "pe", "x"), Instruction("b", "pe", "x"),
            Instruction("d", "act", "dma_copy", queue="dma1"),
            Instruction("c", "dve", "y", deps=(Dep("a"), Dep("b", EdgeKind.FLOW), Dep("d", EdgeKind.ANTI))),
            Instruction("e", "dve", "y", deps=(Dep("c"),)))
    stage = stage_sync(Program({}, body), "given", simulate=False)
    f = stage.figures
    assert (f.waits, f.same_engine, f.cross_engine, f.semaphore_waits) == (4, 1, 3, 2)
    assert dict(f.by_kind) == {"flow": 1, "anti": 1, "output": 0, "ordered": 2}
    assert stage.minimum is not None and stage.minimum.figures.waits == 0  # nothing conflicts


def test_k_loop_figures():
    program = load_program(K_LOOP)
    report = sync_report([("given", program), ("dep-reduction", dep_reduction(program).program)])
    given, reduced = report.stages
    assert (given.figures.waits, given.figures.semaphore_waits, given.minimum.figures.waits) == (20, 16, 16)
    assert given.ratio == 1.25
    # mm0 -> ld_x / ld_w are needed at k=0 only: the reduction keeps them there alone
    assert reduced.figures.waits == reduced.minimum.figures.waits == 16
    assert given.makespan_ns is not None and given.makespan_ns > 0


def _run(*args):
    return CliRunner().invoke(cli, ["footprint", *args], catch_exceptions=False)


def test_cli_json_document(tmp_path):
    result = _run(K_LOOP, "--json", "--passes", "expand-scheduling-units,dep-reduction", "--no-simulate")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["format"] == "neuronsim.footprint/1" and doc["machine"] == "trn1"
    assert [s["stage"] for s in doc["stages"]] == ["given", "expand-scheduling-units", "dep-reduction"]
    last = doc["stages"][-1]
    assert (last["waits"], last["minimum"]["waits"], last["ratio"]) == (16, 16, 1.0)
    assert [p["pass"] for p in doc["passes"]] == ["expand-scheduling-units", "dep-reduction"]


def test_cli_default_pipeline_builds_deps_first(tmp_path):
    path = tmp_path / "nodeps.json"
    save_program(strip_deps(load_program(K_LOOP)), str(path))
    doc = json.loads(_run(str(path), "--json", "--no-simulate").stdout)
    assert doc["stages"][0]["waits"] == 0 and doc["stages"][-1]["stage"] == "dep-reduction"
    assert doc["stages"][-1]["waits"] >= doc["stages"][-1]["minimum"]["waits"] > 0


def test_cli_plot_and_table(tmp_path):
    png = tmp_path / "fp.png"
    result = _run(K_LOOP, "--plot", str(png), "--no-simulate")
    assert result.exit_code == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "minimum (the spec's" in result.stdout and "16 waits" in result.stdout
    assert "needed at some iterations only were restricted to them" in result.stdout


def test_cli_unusable_input_exits_2(tmp_path):
    bad = _run(K_LOOP, "--json", "--passes", "no-such-pass")
    assert bad.exit_code == 2
    assert json.loads(bad.stdout)["format"] == "neuronsim.error/1"
    missing = _run(str(tmp_path / "missing.json"))
    assert missing.exit_code == 2
    unwritable = _run(K_LOOP, "--no-simulate", "--plot", str(tmp_path / "no" / "dir" / "x.png"))
    assert unwritable.exit_code == 2 and "--plot" in unwritable.stderr


RACY = "examples/async_load_then_fill.json"
RACY_LOOP = "examples/matmul_k_loop_racy.json"


def test_cli_warns_when_the_programs_own_deps_race():
    result = _run(RACY, "--no-simulate")
    assert result.exit_code == 0  # a warning: the figures stand
    assert "warning: the program's own deps leave 1 race(s); the first: WAW load / fill  sbuf p[0,32) b[0,256)" \
        in result.stderr
    assert 'fix: fill waits for load: add {"on": "load"} to its deps' in result.stderr
    assert "the minimum already orders these pairs" in result.stderr
    assert "sync footprint" in result.stdout and "warning" not in result.stdout


def test_cli_json_lists_the_own_races_located():
    result = _run(RACY_LOOP, "--json", "--no-simulate")
    assert result.exit_code == 0
    own = json.loads(result.stdout)["own_races"]
    assert (own["stage"], own["checked"], own["total_races"]) == ("given", True, 3)
    first = own["races"][0]
    assert (first["kind"], first["first"], first["second"], first["memory"]) == ("WAR", "mm[0]", "ld_x[1]", "sbuf")
    assert (first["partitions"], first["bytes"]) == ([0, 128], [0, 256])
    assert first["fix"] == {"waiter": "ld_x", "dep": {"on": "mm", "loop_carried": True}}
    assert "3 race(s)" in result.stderr and "2 more" in result.stderr


def test_cli_race_free_program_does_not_warn():
    result = _run(K_LOOP, "--json", "--no-simulate")
    assert result.exit_code == 0 and "warning" not in result.stderr
    assert json.loads(result.stdout)["own_races"] == {"stage": "given", "checked": True, "total_races": 0,
                                                      "races": []}
    text = _run(K_LOOP, "--no-simulate")
    assert "warning" not in text.stderr + text.stdout


def test_cli_program_without_deps_is_not_checked(tmp_path):
    path = tmp_path / "nodeps.json"
    save_program(strip_deps(load_program(RACY)), str(path))  # its load and fill race: the pipeline orders them
    result = _run(str(path), "--json", "--no-simulate")
    own = json.loads(result.stdout)["own_races"]
    assert own["checked"] is False and "no deps" in own["reason"]
    assert "warning" not in result.stderr


def test_own_race_check_stops_at_a_count_and_says_so():
    program = load_program(RACY_LOOP)  # 3 races, the later instances ld_x[1], ld_x[2], ld_x[2]
    whole = check_program(program)
    stopped = check_program(program, stop_after=1)
    assert stopped.instances < whole.instances and stopped.total_races == 1
    assert stopped.races == whole.races[:1]
    found = own_races(program, stop_after=1)
    assert not found.complete and found.total_races == 1 and found.checked_instances == stopped.instances
    doc = found.to_json()
    assert (doc["complete"], doc["instances_checked"], doc["instances"]) == (False, stopped.instances, 14)
    assert "at least 1 race(s) (the check stopped after" in found.warning()[0]
    assert own_races(program).complete and "complete" not in own_races(program).to_json()


def test_a_stage_with_the_same_instructions_takes_the_loads_and_spills_of_the_one_before(monkeypatch):
    """The compiled and the reduced program differ in deps alone: their loads and spills (and
    their minimum) are counted once."""
    import neuronsim.verify.sync_counts as counts
    from neuronsim.passes import compile_program
    from neuronsim.passes.load_elim import load_count
    from neuronsim.verify.app.scenario_runs import get_scenario

    compiled = compile_program(get_scenario("matmul_tiled").build())[0]
    reduced = dep_reduction(compiled).program
    calls = []
    monkeypatch.setattr(counts, "load_count", lambda p: calls.append(p) or load_count(p))
    report = sync_report([("compiled", compiled), ("reduced", reduced)], simulate=False)
    assert calls == [compiled]
    assert report.stages[1].loads == report.stages[0].loads == load_count(reduced) > 0
    assert (report.stages[1].spill_transfers, report.stages[1].spill_bytes) == counts.spill_traffic(reduced)
