"""The seventh bad-input sweep of round 4 (every command, every input): each class it found,
one reproducer.  Each exits 2 with one located line and writes nothing, or (a user's print)
keeps the command's document whole:

* loops nested 64 deep stopped the dependence passes on an internal error (numpy's arrays hold
  64 dimensions): refused at the loop that passes the limit;
* a task program nested 250 deep said "nests too deeply" with no place;
* ``--report`` over the ``--reference MODULE:FN`` module replaced the user's file with HTML;
* a user's pass that prints wrote into ``--json``'s document;
* a user's pass returning a program whose machine is None, or whose extras hold a set, was
  written out for the next command to refuse, or stopped the save on an internal error; with
  ``--no-verify`` a dep on no instruction was an internal error;
* a fuzzed pass raising ``KeyboardInterrupt`` in a worker killed it and the pool waited for ever.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from neuronsim.verify.cli import cli
from neuronsim_tests.bad_inputs import COPY_KERNEL, VALID
from neuronsim_tests.bad_inputs import refused_in_one_line as _refused


def _program(tmp_path: Path, depth: int) -> str:
    """VALID's loop wrapped in ``depth - 1`` more loops of one iteration."""
    doc = copy.deepcopy(VALID)
    loop = doc["body"][0]
    for k in range(depth - 1):
        loop = {"loop": f"l{k}", "trip_count": 1, "body": [loop]}
    doc["body"][0] = loop
    path = tmp_path / f"deep{depth}.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_loops_nested_past_the_limit_are_refused_at_the_loop(tmp_path):
    out = tmp_path / "c.json"
    line = _refused(["compile", _program(tmp_path, 64), "-o", str(out)], "loops nest 49 deep here", "takes 48 at most")
    assert line.startswith("error: body[0]" + ".body[0]" * 48 + ".loop: ")
    assert not out.exists()
    assert CliRunner().invoke(cli, ["compile", _program(tmp_path, 48), "-o", str(out)]).exit_code == 0


def test_a_task_program_nested_past_the_walk_is_located(tmp_path):
    doc = json.loads((Path(__file__).resolve().parents[2] / "examples" / "tasks" / "backedge_hole.json").read_text())
    body = doc["function"]["body"]
    for k in range(250):
        body = [{"for": f"v{k}", "name": f"L{k}", "stop": 1, "body": body}]
    doc["function"]["body"] = body
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    line = _refused(["tasks", str(path)], "the task program nests", "at line 1 column")
    assert "deeper than neuronsim's walk of it follows" in line


def test_the_report_is_not_written_over_the_reference_module(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.py").write_text(COPY_KERNEL)
    (tmp_path / "refmod.py").write_text("def good(x):\n    return {'return0': x}\n")
    np.savez(tmp_path / "in.npz", x=np.ones((4, 8), np.float32))
    before = (tmp_path / "refmod.py").read_text()
    _refused(["run", "k.py::cp", "--inputs", "in.npz", "--reference", "refmod:good", "--report", "refmod.py"],
             "the --report file is refmod.py, which this command reads")
    assert (tmp_path / "refmod.py").read_text() == before


def test_a_users_pass_that_prints_keeps_the_json_document_whole(tmp_path):
    program = tmp_path / "p.json"
    program.write_text(json.dumps(VALID))
    (tmp_path / "loud.py").write_text("def p(program):\n    print('hello from pass')\n    return program\n")
    result = CliRunner().invoke(cli, ["compile", str(program), "-o", str(tmp_path / "c.json"), "--passes",
                                      f"alloc,{tmp_path / 'loud.py'}:p", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["format"] == "neuronsim.compile/1"
    assert "hello from pass" in result.stderr


def test_a_users_pass_result_is_checked_where_the_checks_between_passes_do_not_look(tmp_path):
    program = tmp_path / "p.json"
    program.write_text(json.dumps(VALID))
    passes = {"machine": "def p(program):\n    return replace(program, machine=None)\n",
              "extras": "def p(program):\n    return replace(program, extras={'x-a': {1, 2}})\n",
              "dep": "from neuronsim.machine.ir.program import Dep\n\ndef p(program):\n"
                     "    return program.map_instructions(lambda i: replace(i, deps=i.deps + (Dep(on='nowhere'),)))\n"}
    words = {"machine": "whose machine None is none neuronsim knows", "extras": "whose extras cannot be written",
             "dep": "the program the passes made is malformed, and --no-verify skipped the checks"}
    for name, body in passes.items():
        (tmp_path / f"{name}.py").write_text("from dataclasses import replace\n" + body)
        out = tmp_path / f"{name}.json"
        args = ["compile", str(program), "-o", str(out), "--passes", f"alloc,{tmp_path / name}.py:p"]
        _refused(args + (["--no-verify"] if name == "dep" else []), "--passes: ", words[name])
        assert not out.exists()


def test_a_fuzzed_pass_raising_keyboard_interrupt_in_a_worker_is_its_failure(tmp_path):
    (tmp_path / "kbi.py").write_text("def p(program):\n    raise KeyboardInterrupt\n")
    done = subprocess.run([sys.executable, "-m", "neuronsim.verify.cli", "fuzz", "--examples", "4", "--workers", "2",
                           "--pass", f"{tmp_path / 'kbi.py'}:p", "--out", str(tmp_path / "f")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])  # a finding, not a hang
    assert "KeyboardInterrupt raised by the pass, not by a signal" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
