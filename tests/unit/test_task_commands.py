"""``neuronsim check`` / ``simulate`` / ``footprint`` on task programs (told apart by ``format``)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from neuronsim.verify.cli import cli
from neuronsim_tests import ROOT

HOLE = str(ROOT / "examples/tasks/backedge_hole.json")


def _run(*args, input=None):
    return CliRunner().invoke(cli, list(args), input=input)


def _compiled(tmp_path: Path, *extra: str) -> str:
    out = tmp_path / f"compiled{len(extra)}.json"
    result = _run("tasks", HOLE, "-o", str(out), *extra)
    assert result.exit_code == 0, result.output
    return str(out)


def test_the_hole_is_a_race_under_faithful_and_fixed_by_default(tmp_path):
    faithful = _run("check", _compiled(tmp_path, "--faithful"), "--json")
    assert faithful.exit_code == 1
    doc = json.loads(faithful.stdout)
    kinds = {(r["kind"], r["first"]["name"][:7], r["second"]["name"][:7]) for r in doc["races"]}
    assert kinds == {("WAW", "produce", "produce"), ("WAR", "consume", "produce"), ("RAW", "produce", "consume")}
    assert {r["fix"]["carried"] for r in doc["races"]} == {"steps"}  # the loop back-edge the seed never compares
    fixed = _run("check", _compiled(tmp_path), "--json")
    assert fixed.exit_code == 0 and json.loads(fixed.stdout)["race_free"] is True


def test_check_derives_directions_of_a_raw_program_and_reads_stdin():
    plain = _run("check", HOLE)
    assert plain.exit_code == 1 and "directions derived: the all-AUTO program" in plain.stdout
    assert "fix: produce: deps=[tid_c of the previous iteration, carried through loop steps]" in plain.stdout
    piped = _run("check", "-", "--json", input=Path(HOLE).read_text())
    assert piped.exit_code == 1 and json.loads(piped.stdout)["total_races"] == 6


def test_simulate_writes_a_trace_and_reports_witnessed_races(tmp_path):
    trace, plot = tmp_path / "t.json", tmp_path / "t.png"
    racy = _run("simulate", HOLE, "--seeds", "2", "--trace", str(trace), "--plot", str(plot), "--json")
    assert racy.exit_code == 1
    doc = json.loads(racy.stdout)
    assert len(doc["runs"]) == 3 and all(r["races"] == 6 and not r["violations"] for r in doc["runs"])
    assert any(r["witnessed"] for r in doc["runs"])
    assert json.loads(trace.read_text())["traceEvents"] and plot.stat().st_size > 0
    clean = _run("simulate", _compiled(tmp_path))
    assert clean.exit_code == 0 and "no races" in clean.stdout
    refused = _run("simulate", HOLE, "--inputs", str(tmp_path / "x.npz"))
    assert refused.exit_code == 2 and "--inputs" in refused.stderr


def test_footprint_counts_tracking_before_and_after(tmp_path):
    plot = tmp_path / "f.png"
    result = _run("footprint", str(ROOT / "examples/tasks/accumulate.json"), "--json", "--plot", str(plot))
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    stages = {s["stage"]: s for s in doc["stages"]}
    assert stages["given"]["run"] is None
    assert stages["derive-call-directions"]["run"]["lookups"] == 13
    assert stages["materialize-runtime-scopes"]["run"]["lookups"] == 0
    assert doc["saved"]["lookups"] == 13 and doc["saved"]["manual_scopes"] == 1
    assert all(s["races"] == 0 for s in doc["stages"] if s["run"])
    assert plot.stat().st_size > 0
    text = _run("footprint", str(ROOT / "examples/tasks/accumulate.json"), "--no-simulate")
    assert text.exit_code == 0 and "saved per run: 13 lookups" in text.stdout


def test_bad_task_programs_are_one_located_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "neuronsim.tasks/1", "kernels": {}, "function": {"body": [{"submit": "k"}]}}')
    for command in ("check", "simulate", "footprint"):
        result = _run(command, str(bad))
        assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1, (command, result.output)
        assert result.stderr.startswith("error: function.body[0]")


def _nest(depth: int, parallel_from: int | None = None) -> dict:
    body: list = [{"call": "produce", "name": "pp", "args": ["x"]}]
    for level in reversed(range(depth)):
        loop = {"for": f"i{level}", "name": f"l{level}", "stop": 2, "body": body}
        if parallel_from is not None and level >= parallel_from:
            loop["parallel"] = True
        body = [loop]
    return {"format": "neuronsim.tasks/1",
            "kernels": {"produce": {"params": [{"name": "dst", "direction": "out"}], "returns": ["dst"], "cost": 400}},
            "function": {"name": "f", "params": [{"name": "x", "shape": [64, 64], "dtype": "float32"}], "body": body}}


def test_a_nest_deeper_than_the_analysis_walks_is_refused_at_its_loop(tmp_path):
    """Each sequential loop's body is walked twice (iterations i and i + 1), so a nest of them
    2**depth times: twenty loops of two trips ran for minutes with no word (probe_ar)."""
    from neuronsim.passes.tasks.walk import TWICE_NEST_LIMIT

    deep, fits = tmp_path / "deep.json", tmp_path / "fits.json"
    deep.write_text(json.dumps(_nest(20)))
    done = _run("tasks", str(deep), "-o", str(tmp_path / "out.json"))
    assert done.exit_code == 2, done.output
    assert ".body[0]" * (TWICE_NEST_LIMIT + 1) + ":" in done.output and "nest of more than" in done.output
    assert not (tmp_path / "out.json").exists()
    fits.write_text(json.dumps(_nest(TWICE_NEST_LIMIT)))
    assert _run("tasks", str(fits), "-o", str(tmp_path / "out.json")).exit_code == 0
    fits.write_text(json.dumps(_nest(20, parallel_from=TWICE_NEST_LIMIT)))  # the inner loops parallel: walked once
    assert _run("tasks", str(fits), "-o", str(tmp_path / "out.json")).exit_code == 0


def test_fuzzing_a_task_pass_leaves_no_hypothesis_folder(tmp_path):
    """``fuzz --tasks --pass FILE:NAME`` left ``.hypothesis/constants`` in the working folder:
    hypothesis cached the constants of the user's module there (probe_ar)."""
    from neuronsim_tests.bad_inputs import cli_child

    (tmp_path / "mine.py").write_text("LIMIT = 12345\n\n\ndef ident(program):\n    return program\n")
    done = cli_child(tmp_path, "fuzz", "--tasks", "--pass", "mine.py:ident", "--examples", "3", "--workers", "1",
                     timeout=300)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.py"], list(tmp_path.iterdir())


def _tree(depth: int) -> dict:
    """Sequential loops, each holding two, ``depth`` levels, a call in each innermost one."""
    counter = iter(range(10**6))

    def level(d: int) -> list:
        if d == depth:
            return [{"call": "produce", "name": f"pp{next(counter)}", "args": ["x"]}]
        return [{"for": f"i{d}_{k}_{next(counter)}", "name": f"l{d}_{k}_{next(counter)}", "stop": 2,
                 "body": level(d + 1)} for k in range(2)]
    program = _nest(0)
    program["function"]["body"] = level(0)
    return program


def test_a_tree_of_sequential_loops_past_the_analysis_s_budget_is_refused(tmp_path):
    """Each loop holding two: the nest limit is never reached, and seven levels compared about
    two million pairs of accesses, eight ran for minutes (probe_av)."""
    from neuronsim.passes.tasks.walk import WALK_BUDGET

    deep = tmp_path / "tree.json"
    deep.write_text(json.dumps(_tree(7)))
    done = _run("tasks", str(deep), "-o", str(tmp_path / "out.json"))
    assert done.exit_code == 2 and f"compares more than {WALK_BUDGET:,} pairs" in done.output, done.output
    assert done.output.startswith("error: function.body[") and not (tmp_path / "out.json").exists()
    deep.write_text(json.dumps(_tree(4)))
    assert _run("tasks", str(deep), "-o", str(tmp_path / "out.json")).exit_code == 0
