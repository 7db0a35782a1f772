"""The fuzz harness: it passes the real pipeline, finds every planted bug within the default
budget, shrinks and saves failures, and runs the same from the CLI, locally or on Dask."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest

from neuronsim.testing.planted import (
    AntiDepsFirstPartition,
    DropPsumAccumulation,
    OneFifoReduction,
    ProgramOrderFoldReduction,
    simulator_ignoring_one_wait,
)
from neuronsim.testing import planted
from neuronsim.verify.cli.cmd_fuzz import plan_chunks
from neuronsim.verify.fuzz import check_pass
from neuronsim.verify.strategies import strip_deps

#: ``neuronsim fuzz``'s default number of examples.
DEFAULT_BUDGET = 500


def _swap_first_two(program):
    """Planted: the first two top-level nodes change places (deps untouched)."""
    body = list(program.body)
    body[:2] = body[1::-1]
    return program.with_body(tuple(body))


def _one_iteration_fewer(program):
    """Planted: every top-level loop of more than one iteration runs one fewer."""
    from neuronsim.machine.ir.program import Loop

    return program.with_body(tuple(Loop(n.name, n.trip_count - 1, n.body, n.extras)
                                   if isinstance(n, Loop) and n.trip_count > 1 else n for n in program.body))


def test_the_real_pipeline_passes():
    result = check_pass(None, examples=60, seed=0)
    assert result.failure is None
    assert result.examples == 60


@pytest.mark.parametrize(("planted", "options", "checks"), [
    (DropPsumAccumulation(), {"replace": "build-fdeps"}, {"flow", "labels", "races"}),
    (AntiDepsFirstPartition(), {"replace": "anti-deps"}, {"labels", "races"}),
    (ProgramOrderFoldReduction(), {"replace": "dep-reduction"}, {"races"}),
    (OneFifoReduction(), {"replace": "dep-reduction"}, {"races"}),
    (None, {"simulator": simulator_ignoring_one_wait}, {"outputs", "trace"}),
    # a pass that changes what the program computes, not its deps: the compiled program was
    # checked against its own reference, and these ran clean (probe_ao)
    (_swap_first_two, {"replace": "dep-reduction"}, {"structure"}),
    (_one_iteration_fewer, {"replace": "dep-reduction"}, {"structure"}),
], ids=["fdeps-drops-psum-accumulation", "anti-deps-ignores-partitions", "reduction-program-order-fold",
        "reduction-one-fifo-for-every-queue", "simulator-ignores-a-wait", "reorders-instructions",
        "cuts-a-loops-trips"])
def test_planted_bug_is_found_within_the_default_budget(planted, options, checks):
    result = check_pass(planted, examples=DEFAULT_BUDGET, seed=0, shrink=False, **options)
    assert result.failure is not None, "the fuzzer missed the planted bug"
    assert result.failure.check in checks, result.failure.message
    assert result.first_failure_at <= DEFAULT_BUDGET


@pytest.mark.parametrize("latest_first", [False, True])
def test_the_planted_reductions_fold_is_sound_without_its_mistakes(latest_first):
    """The two planted reductions share one fold: without the mistakes it passes, so what the
    fuzzer finds in them is the planted bug, not the fold."""
    def sound(program):
        return planted._fold_reduction(program, triggered_is_done=False, one_fifo=False, latest_first=latest_first)

    assert check_pass(sound, replace="dep-reduction", examples=150, seed=0, shrink=False).failure is None


def test_a_failure_is_shrunk_and_saved(tmp_path):
    result = check_pass(strip_deps, examples=50, seed=3, folder=str(tmp_path))
    failure = result.failure
    assert failure is not None and failure.check == "races"
    saved = json.loads(open(failure.saved).read())
    # shrunk: a race needs two instructions, and hypothesis gets it down to (about) that
    assert len(saved["body"]) <= 3
    report = json.loads(open(failure.saved[:-5] + ".report.json").read())
    assert report["report"]["races"]


def test_chunks_do_not_depend_on_workers():
    assert plan_chunks(60, 5, None, None, None) == plan_chunks(60, 5, None, None, None)
    assert [c.examples for c in plan_chunks(60, 5, None, None, None)] == [25, 25, 10]


def _cli(*args):
    return subprocess.run([sys.executable, "-c", "from neuronsim.verify.cli import main; main()", "fuzz", *args],
                          capture_output=True, text=True, timeout=600)


def _signatures(doc: dict) -> list[tuple]:
    """Each failure without where it was saved, with a digest of every file saved for it."""
    out = []
    for failure in doc["failures"]:
        stem = failure["saved"][:-5]
        files = sorted(f for f in os.listdir(os.path.dirname(stem)) if f.startswith(os.path.basename(stem)))
        digests = [hashlib.sha256(open(os.path.join(os.path.dirname(stem), f), "rb").read()).hexdigest() for f in files]
        out.append((failure["chunk"], failure["seed"], failure["check"], failure["message"], tuple(files),
                    tuple(digests)))
    return out


@pytest.mark.parametrize("user_pass", [None, "neuronsim.verify.strategies:strip_deps"],
                         ids=["pipeline", "failing-pass"])
def test_cli_results_do_not_depend_on_workers(tmp_path, user_pass):
    """Examples run, failures found and the saved programs (digests) are equal for 1 and 2 workers;
    a failing user pass exits 1 and saves its shrunk programs."""
    docs = {}
    for workers in (1, 2):
        args = ["--examples", "30", "--seed", "1", "--workers", str(workers), "--out", str(tmp_path / f"w{workers}"),
                "--json"] + (["--pass", user_pass] if user_pass else [])
        run = _cli(*args)
        assert run.returncode == (1 if user_pass else 0), run.stderr
        docs[workers] = json.loads(run.stdout)
    one, two = docs[1], docs[2]
    assert one["examples"] == two["examples"] == (30 if user_pass is None else one["examples"])
    assert _signatures(one) == _signatures(two)
    if user_pass:
        assert len(one["failures"]) == 2   # both chunks (25 + 5 examples) fail, each shrunk and saved
        assert all(f["check"] == "races" and os.path.exists(f["saved"]) for f in one["failures"])
    else:
        assert one["failures"] == []


def test_cli_bad_pass_address_exits_2():
    run = _cli("--pass", "no.such.module:thing", "--json")
    assert run.returncode == 2
    assert json.loads(run.stdout)["path"] == "--pass"


def test_cli_on_a_dask_cluster():
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        run = _cli("--examples", "30", "--seed", "2", "--scheduler", cluster.scheduler_address, "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["examples"] == 30


def test_the_api_draws_the_commands_programs_and_more_examples_test_more():
    # one hypothesis run of 200 examples drew simpler programs than 8 of 25: the writing-a-pass
    # page's own CollapseWaits was "vacuous" at examples=200, changing 3 of 25 (probe_ao)
    from neuronsim.examples.collapse_waits import CollapseWaits
    from neuronsim.verify.fuzz import CHUNK, chunk_seed

    whole = check_pass(CollapseWaits(), replace="dep-reduction", examples=2 * CHUNK, seed=3, shrink=False)
    parts = [check_pass(CollapseWaits(), replace="dep-reduction", examples=CHUNK, seed=chunk_seed(3, k), chunk=k,
                        shrink=False) for k in range(2)]
    assert whole.changed == sum(p.changed for p in parts) and whole.examples == 2 * CHUNK
    counts = [check_pass(CollapseWaits(), replace="dep-reduction", examples=n, seed=0, shrink=False).changed
              for n in (CHUNK, 8 * CHUNK)]
    assert 0 < counts[0] < counts[1]
