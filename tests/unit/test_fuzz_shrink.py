"""Issue 23, part 4: fuzz failures that are small, found fast, and name the dropped wait.

The acceptance run: a planted bug (:class:`neuronsim.testing.planted.AntiDepsFirstPartition` in the
``anti-deps`` slot) fuzzed by the console script finds and saves its failure, shrunk to at
most 4 instructions, with the pass's input and output and the fix line.  (The subprocess
timeout is a guard against a hang, not a speed test: ``bench/bench_fuzz_shrink.py`` prints the
times.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from neuronsim.machine.formats.program_json import loads_program
from neuronsim.testing.planted import DropPsumAccumulation
from neuronsim.verify.cli import cli
from neuronsim.verify.fuzz import check_pass
from neuronsim.verify.shrink import instruction_count

ROOT = Path(__file__).resolve().parents[2]


def test_a_planted_bug_is_found_shrunk_and_explained_by_the_console_script(tmp_path):
    out = tmp_path / "failures"
    run = subprocess.run([sys.executable, "-c", "from neuronsim.verify.cli import main; main()", "fuzz", "--pass",
                          "neuronsim.testing.planted:AntiDepsFirstPartition", "--replace", "anti-deps",
                          "--examples", "100", "--seed", "0", "--workers", "1", "--fail-fast", "--out", str(out)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stderr
    assert "fuzz: shrinking a races failure of" in run.stderr and "shrunk to" in run.stderr
    saved = sorted(out.glob("failure-*.json"))
    program = next(p for p in saved if p.name.count(".") == 1)
    assert instruction_count(loads_program(program.read_text())) <= 4
    stem = str(program)[:-5]
    report = json.loads(Path(stem + ".report.json").read_text())
    assert report["fix"].startswith("your pass dropped `") and report["fix"].endswith("needed for this " +
                                                                                       report["race"]["kind"])
    assert report["race"]["waiter"] in report["fix"] and report["race"]["on"] in report["fix"]
    given = loads_program(Path(stem + ".pass-input.json").read_text())
    returned = loads_program(Path(stem + ".pass-output.json").read_text())
    waiter, on = report["race"]["waiter"], report["race"]["on"]
    deps = {i.name: {d.on for d in i.deps} for i, _ in returned.instructions()}
    assert on not in deps[waiter]  # the pass's output lacks the wait the line names ...
    assert instruction_count(given) == instruction_count(returned)
    assert f"fix: {report['fix']}" in run.stdout  # ... and the summary says it


def test_the_header_counts_the_examples_run_of_those_asked(tmp_path):
    result = CliRunner().invoke(cli, ["fuzz", "--pass", "neuronsim.testing.planted:AntiDepsFirstPartition", "--replace",
                                      "anti-deps", "--examples", "30", "--workers", "1", "--no-shrink",
                                      "--out", str(tmp_path)])
    assert result.exit_code == 1
    assert "of 30 examples (a chunk stops at its first failure)" in result.stdout


def test_check_pass_shrinks_to_a_small_program_and_names_the_fix():
    # An accumulating matmul after an earlier PSUM writer is about one draw in a hundred (the MX
    # dtypes joined the draws and moved them, and so did the fan-in of loads); Hypothesis also
    # sizes its draws by the budget: at the default 500 seed 0 meets one at example 178, at 400
    # it meets none.
    result = check_pass(DropPsumAccumulation(), replace="build-fdeps", examples=500, seed=0)
    failure = result.failure
    assert failure is not None and failure.check in ("flow", "races", "labels")
    assert instruction_count(loads_program(failure.program)) <= 4
    assert failure.fix and "your pass dropped `" in failure.fix
    assert failure.pass_input is not None and failure.pass_output is not None


def test_check_json_carries_a_fix_per_race():
    result = CliRunner().invoke(cli, ["check", str(ROOT / "examples" / "matmul_k_loop_racy.json"), "--json"])
    doc = json.loads(result.stdout)
    assert [r["fix"] for r in doc["races"]] == [{"waiter": "ld_x", "dep": {"on": "mm", "loop_carried": True}}] * 3
