"""Issue #27 part 2: the failure classes of the fourth bad-input round, one reproducer each.

Every bad input must exit 2 with exactly one located line on standard error (no ``internal
error``, no traceback), write nothing, and be refused before the work it guards (the size
guards run in well under the time the work took: minutes, or a hang).  The two valid
programs of the round (a one-element stride past numpy's range, a scalar iter_arg used
after its loop) must simply work.  Runs go through click's test runner, the group ``main``
the console script runs; tests/e2e/ has the console-script runs (signals, standard input).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from neuronsim.verify.cli import cli
from neuronsim_tests.bad_inputs import TASKS, VALID
from neuronsim_tests.bad_inputs import refused_in_one_line as _refused



def _program(edit) -> dict:
    doc = copy.deepcopy(VALID)
    edit(doc)
    return doc


def _tasks(body: list, **changes) -> dict:
    doc = copy.deepcopy(TASKS)
    doc["function"]["body"] = body
    doc.update(changes)
    return doc


def _write(tmp_path: Path, doc: dict | str, name: str = "p.json") -> str:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)




def _works(args: list[str]) -> str:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, (result.exit_code, result.output, result.exception)
    return result.stdout


# -- valid programs that crashed -------------------------------------------------------------------
@pytest.mark.parametrize("where", ["partitions", "pattern"])
def test_a_one_element_stride_past_numpy_simulates(tmp_path: Path, where: str) -> None:
    def edit(d: dict) -> None:
        scale = d["body"][0]["body"][1]
        for access in (scale["reads"][0], scale["writes"][0]):
            access.update(partitions=[0, 1, 2**63 - 1]) if where == "partitions" else \
                access.update(pattern=[[2**62, 1], [1, 16]])

    out = _works(["simulate", _write(tmp_path, _program(edit))])
    assert "equal the sequential reference in 1 of 1 runs" in out


def test_a_scalar_iter_arg_is_usable_after_its_loop(tmp_path: Path) -> None:
    body = [{"for": "i", "name": "L", "stop": "n", "iter_args": [{"name": "acc", "init": "n"}],
             "body": [{"let": "acc2", "scalar": "acc + i"}], "yield": ["acc2"], "returns": ["total"]},
            {"for": "j", "name": "M", "stop": "total", "body": [
                {"submit": "produce", "name": "p", "args": ["x", "j"], "task_id": "t"}]}]
    out = _works(["check", _write(tmp_path, _tasks(body))])
    assert "10 task instances" in out  # n + 0 + 1 + 2 + 3 = 10 calls


# -- located refusals ------------------------------------------------------------------------------
def test_report_refuses_an_oversized_program_up_front(tmp_path: Path) -> None:
    doc = _program(lambda d: d.update(body=[{"loop": "outer", "trip_count": 2**32,
                                             "body": [dict(d["body"][0], trip_count=2**32)]}]))
    _refused(["report", _write(tmp_path, doc), "-o", str(tmp_path / "r.html")], "--max-instances")
    assert not (tmp_path / "r.html").exists()


def test_a_task_dtype_given_as_a_list_is_located(tmp_path: Path) -> None:
    doc = _tasks(TASKS["function"]["body"])
    doc["function"]["params"][0]["dtype"] = ["float32"]
    _refused(["check", _write(tmp_path, doc)], "function.params[0].dtype", "unknown dtype")


def test_a_max_memory_of_400_digits_is_a_usage_error(tmp_path: Path) -> None:
    _refused(["simulate", _write(tmp_path, VALID), "--max-memory", "1" + "0" * 400], "--max-memory", "2**63")


def test_a_squared_scalar_in_a_while_stops_at_int64(tmp_path: Path) -> None:
    body = [{"while": "s > 0", "name": "W", "iter_args": [{"name": "s", "init": 2}],
             "body": [{"let": "s2", "scalar": "s * s"}], "yield": ["s2"], "returns": ["sf"]}]
    _refused(["check", _write(tmp_path, _tasks(body))], "function.body[0].body[0]", "64-bit")


def test_tasks_refuses_50000_straight_calls_before_the_passes(tmp_path: Path) -> None:
    body = [{"submit": "produce", "name": f"p{i}", "args": ["x", i], "task_id": f"t{i}"} for i in range(50_000)]
    out = tmp_path / "compiled.json"
    _refused(["tasks", _write(tmp_path, _tasks(body)), "-o", str(out)], "--max-pairs", "50,000 calls", seconds=60)
    assert not out.exists()


def test_ten_million_calls_are_refused_before_the_walk(tmp_path: Path) -> None:
    body = [{"for": "i", "name": "L", "stop": "n * 2500000", "body": [
        {"submit": "produce", "name": "p", "args": ["x", "i"], "task_id": "t"}]}]
    path = _write(tmp_path, _tasks(body))
    for command in ("check", "simulate", "footprint"):
        _refused([command, path], "--max-instances", "10,000,000 task instances", seconds=15)


def test_a_billion_worker_cores_are_refused_at_load(tmp_path: Path) -> None:
    doc = _tasks(TASKS["function"]["body"], runtime={"cores": 10**9})
    _refused(["simulate", _write(tmp_path, doc)], "runtime.cores", "4,096")


def test_a_billion_seeds_are_refused_before_any_run(tmp_path: Path) -> None:
    _refused(["simulate", _write(tmp_path, VALID), "--seeds", "1000000000"], "--seeds", "--max-instances", seconds=10)


@pytest.mark.parametrize("figure, value", [("dma_engine_bytes_per_ns", 1e-300), ("dma_fixed_ns", 1e308),
                                           ("act_ghz", 5e-324)])
def test_machine_figures_that_overflow_simulated_time_are_refused(tmp_path: Path, figure: str, value: float) -> None:
    doc = _program(lambda d: d.update(machine={"base": "trn1", figure: value}))
    trace = tmp_path / "t.json"
    _refused(["simulate", _write(tmp_path, doc), "--json", "--trace", str(trace)], f"machine.{figure}")
    assert not trace.exists()


def test_every_trace_written_is_strict_json(tmp_path: Path) -> None:
    doc = _program(lambda d: d.update(machine={"base": "trn1", "dma_engine_bytes_per_ns": 1e-6}))
    trace = tmp_path / "t.json"
    result = CliRunner().invoke(cli, ["simulate", _write(tmp_path, doc), "--json", "--trace", str(trace)])
    assert result.exit_code == 0, result.output
    for text in (trace.read_text(), result.stdout):
        json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in a JSON output"))


def test_a_1e400_extension_in_a_task_program_is_refused_at_load(tmp_path: Path) -> None:
    text = json.dumps(dict(TASKS, **{"x-big": "@"})).replace('"@"', "1e400")
    out = tmp_path / "compiled.json"
    _refused(["tasks", _write(tmp_path, text), "-o", str(out)], "1e400", "beyond the range of a double")
    assert not out.exists()


def test_a_fan_in_on_a_later_loop_is_located(tmp_path: Path) -> None:
    body = [{"let": "inv", "task_invalid": True},
            {"submit": "produce", "name": "first", "args": ["x", 0], "task_id": "t0",
             "compiler_deps": [{"on": "ret", "loop": "L", "calls": ["c2"]}]},
            {"for": "i", "name": "L", "stop": 2, "iter_args": [{"name": "tid", "init": "inv"}], "body": [
                {"submit": "produce", "name": "c2", "args": ["x", "i"], "task_id": "t2"}],
             "yield": ["t2"], "returns": ["ret"]}]
    _refused(["check", _write(tmp_path, _tasks(body))], "function.body[1].compiler_deps[0].loop", "comes after")


@pytest.mark.parametrize("param, fragment", [
    ({"name": "x", "shape": [64, 64], "dtype": "float32", "direction": "out",
      "memref": {"base": "hbm", "offset": "n", "size": 16384}}, "memref offset is -64"),
    ({"name": "x", "shape": ["n", 64], "dtype": "float32", "direction": "out"}, "dimension 0 is -64"),
])
def test_negative_runtime_memref_offsets_and_dimensions_are_located(tmp_path: Path, param: dict,
                                                                    fragment: str) -> None:
    doc = _tasks(TASKS["function"]["body"])
    doc["function"]["params"] = [{"name": "n", "scalar": "int", "value": -64}, param]
    _refused(["check", _write(tmp_path, doc)], "function.params[1]", fragment)


def test_a_negative_runtime_window_dimension_is_located(tmp_path: Path) -> None:
    body = [{"let": "w", "slice": "x", "shape": ["0 - n", 8], "offset": [8, 0]},
            {"submit": "produce", "name": "p", "args": ["w", 1], "task_id": "t"}]
    _refused(["check", _write(tmp_path, _tasks(body))], "function.body[0].shape[0]", "is -4")


@pytest.mark.parametrize("machine", [None, {"base": None}])
def test_a_null_machine_is_refused(tmp_path: Path, machine) -> None:
    _refused(["check", _write(tmp_path, _program(lambda d: d.update(machine=machine)))], "machine")


def test_fuzz_refuses_an_unknown_pass_to_replace(tmp_path: Path) -> None:
    line = _refused(["fuzz", "--pass", "neuronsim.passes:DepReduction", "--replace", "no-such-pass", "--examples", "2",
                     "--workers", "1", "--out", str(tmp_path / "failures")], "--replace", "no-such-pass")
    assert "dep-reduction" in line  # the passes it could have named
    assert not (tmp_path / "failures").exists()
