"""``neuronsim compile``: output file, loops and names kept, --explain, --json, exit statuses."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from neuronsim.machine.formats.program_json import dumps_program, load_program
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.strategies import strip_deps

EXAMPLE = "examples/matmul_k_loop.json"


CLI = [sys.executable, "-c", "from neuronsim.verify.cli import main; main()"]


def neuronsim(*args, stdin: str | None = None):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, input=stdin, timeout=120)


@pytest.fixture(scope="module")
def stripped(tmp_path_factory):
    path = tmp_path_factory.mktemp("compile") / "stripped.json"
    path.write_text(dumps_program(strip_deps(load_program(EXAMPLE))))
    return path


def test_compile_writes_a_race_free_program_with_its_loops(stripped, tmp_path):
    out = tmp_path / "out.json"
    run = neuronsim("compile", str(stripped), "-o", str(out))
    assert run.returncode == 0, run.stderr
    assert "anti-deps" in run.stdout and "deps:" in run.stdout
    compiled = load_program(str(out))
    original = load_program(EXAMPLE)
    assert ([(n.name, type(n).__name__) for n, _ in compiled.walk()]
            == [(n.name, type(n).__name__) for n, _ in original.walk()])
    assert check_program(compiled).races == ()
    lc = {(i.name, d.on) for i, _ in compiled.instructions() for d in i.deps if d.loop_carried}
    assert ("ld_x", "mm") in lc  # the single input buffer is protected across iterations


def test_explain_says_which_rule_and_which_bytes(stripped, tmp_path):
    run = neuronsim("compile", str(stripped), "-o", str(tmp_path / "o.json"), "--explain", "ld_x", "mm")
    assert run.returncode == 0, run.stderr
    text = run.stdout
    assert "Explaining why ld_x and mm interfere:" in text
    assert "ld_x waits for mm (anti, loop-carried); rules: anti:war" in text
    assert "WAR mm[0] -> ld_x[1]: sbuf partitions [0,128) bytes [0,256)" in text


def test_json_report(stripped, tmp_path):
    run = neuronsim("compile", str(stripped), "-o", str(tmp_path / "o.json"), "--json", "--explain", "drain", "mm")
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["format"] == "neuronsim.compile/1"
    assert [p["pass"] for p in doc["passes"]] == ["alloc", "build-fdeps", "remove-redundancies", "anti-deps",
                                                  "dep-reduction"]
    assert doc["deps"]["deps"] == sum(len(i.deps) for i, _ in load_program(str(tmp_path / "o.json")).instructions())
    assert doc["explain"]["deps"][0] == {"waiter": "drain", "on": "mm", "kind": "flow", "loop_carried": False,
                                         "rules": ["fdeps:raw"]}


def test_standard_input_and_output(stripped):
    run = neuronsim("compile", "-", "-o", "-", stdin=stripped.read_text())
    assert run.returncode == 0, run.stderr
    assert check_program(load_program(__import__("io").StringIO(run.stdout))).races == ()
    assert "deps:" in run.stderr  # the summary goes to standard error when the program takes stdout


@pytest.mark.parametrize("args, needle", [
    (["--passes", "alloc,frobnicate"], "unknown pass 'frobnicate'"),
    (["--passes", "anti-deps{early_stop=later}"], "early_stop"),
    (["--explain", "ld_x", "nobody"], "unknown instruction 'nobody'"),
])
def test_unusable_input_exits_2_with_a_located_message(stripped, tmp_path, args, needle):
    run = neuronsim("compile", str(stripped), "-o", str(tmp_path / "o.json"), *args, "--json")
    assert run.returncode == 2
    assert needle in run.stderr
    assert json.loads(run.stdout)["format"] == "neuronsim.error/1"


def test_a_failed_compile_leaves_no_output(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "neuronsim.program/1", "tensors": {}, "body": [{"name": 1}]}')
    out = tmp_path / "out.json"
    run = neuronsim("compile", str(bad), "-o", str(out))
    assert run.returncode == 2 and not out.exists()
    assert "body[0].name" in run.stderr
