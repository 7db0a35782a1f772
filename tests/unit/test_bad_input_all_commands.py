"""Acceptance of issue #13: every bad input through every command.

Each bad input of :mod:`tests.bad_inputs` (and each bad flag, output path and over-large
program below) is fed to every command that reads a program.  Every run must exit 2 with
exactly one line on standard error, no traceback, and under ``--json`` one
``neuronsim.error/1`` document; no output file may be created or changed (bytes and
modification times of pre-existing outputs are compared, and the output folder's listing).

Most runs go through click's test runner in process (the same group ``main`` the console
script runs); a few run the real console script: the exit statuses, Ctrl-C, an injected
internal error, a closed pipe and the guard on a loop of a billion iterations.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from neuronsim.machine.ir.errors import printable
from neuronsim_tests.bad_inputs import BAD_INPUTS, VALID, valid_text
from neuronsim.verify.cli import cli

SCRIPT = shutil.which("neuronsim", path=os.path.dirname(sys.executable)) or "neuronsim"
#: The commands that read a program, each with the outputs it may write.
COMMANDS: dict[str, list[str]] = {
    "check": ["check", "{p}"],
    "compile": ["compile", "{p}", "-o", "{out}/compiled.json"],
    "simulate": ["simulate", "{p}", "--trace", "{out}/trace.json", "--plot", "{out}/plot.png"],
    "footprint": ["footprint", "{p}", "--plot", "{out}/plot.png"],
    "show": ["show", "{p}"],
    "loops": ["loops", "{p}"],
}
OUTPUTS = ("compiled.json", "trace.json", "plot.png")
OLD = 1_000_000_000  # a modification time far in the past (2001), set on every pre-existing output


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """An output folder holding old outputs, each of which must survive untouched."""
    folder = tmp_path / "out"
    folder.mkdir()
    for name in OUTPUTS:
        (folder / name).write_bytes(f"old {name}\n".encode())
        os.utime(folder / name, ns=(OLD * 10**9, OLD * 10**9))
    return folder


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


def _args(command: str, program: Path, out: Path, *extra: str) -> list[str]:
    return [a.format(p=program, out=out) for a in COMMANDS[command]] + list(extra)


def _assert_one_error_line(stderr: str, *fragments: str) -> str:
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def _invoke(args: list[str]):
    return CliRunner().invoke(cli, args)


def _rejected(args: list[str], out: Path, *fragments: str) -> None:
    """``args`` exits 2 with one located line, plain and under --json, and changes no file."""
    before = _snapshot(out)
    plain = _invoke(args)
    assert plain.exit_code == 2, (plain.exit_code, plain.output, plain.exception)
    assert plain.stdout == ""
    _assert_one_error_line(plain.stderr, *fragments)
    as_json = _invoke([*args, "--json"])
    assert as_json.exit_code == 2, as_json.output
    line = _assert_one_error_line(as_json.stderr, *fragments)
    doc = json.loads(as_json.stdout)
    assert doc["format"] == "neuronsim.error/1" and doc["internal"] is False
    assert line == f"error: {doc['path'] + ': ' if doc['path'] else ''}{doc['message']}"
    assert _snapshot(out) == before


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("good") / "good.json"
    path.write_text(valid_text())
    return path


def test_the_valid_program_runs_through_every_command(good, out):
    for command in COMMANDS:
        result = _invoke(_args(command, good, out, *(["--no-simulate"] if command == "footprint" else [])))
        assert result.exit_code == 0, (command, result.output, result.exception)


@pytest.mark.parametrize("bad", BAD_INPUTS, ids=[b.id for b in BAD_INPUTS])
def test_every_bad_input_through_every_command(bad, tmp_path, out):
    program = tmp_path / "bad.json"
    program.write_bytes(bad.data)
    where = f"{printable(bad.path)}: " if bad.path else ""
    for command in COMMANDS:
        _rejected(_args(command, program, out), out, f"error: {where}", bad.fragment)


BAD_FLAGS = [
    ("negative-interleaving-seed", "simulate", ["--seed", "-1"], "--seed"),
    ("negative-data-seed", "simulate", ["--data-seed", "-1"], "--data-seed"),
    ("zero-seeds", "simulate", ["--seeds", "0"], "--seeds"),
    ("zero-max-instances", "check", ["--max-instances", "0"], "--max-instances"),
    ("bad-max-memory", "compile", ["--max-memory", "lots"], "--max-memory"),
    ("negative-max-races", "check", ["--max-races", "-1"], "--max-races"),
    ("unknown-option", "show", ["--colour"], "No such option"),
    ("option-missing-its-value", "simulate", ["--seed"], "simulate --help)"),
    ("unknown-pass", "compile", ["--passes", "no-such-pass"], "no-such-pass"),
    ("plot-is-a-folder", "simulate", ["--plot", "{out}"], "it is a directory"),
    ("plot-without-image-extension", "footprint", ["--plot", "{out}/plot.txt"], "not an image format"),
    ("output-is-a-folder", "compile", ["-o", "{out}"], "it is a directory"),
    ("output-in-a-missing-folder", "compile", ["-o", "{out}/no/such/compiled.json"], "does not exist"),
    ("trace-in-a-missing-folder", "simulate", ["--trace", "{out}/no/trace.json"], "does not exist"),
]


@pytest.mark.parametrize(("command", "extra", "fragment"), [c[1:] for c in BAD_FLAGS], ids=[c[0] for c in BAD_FLAGS])
def test_bad_flags_and_output_paths(command, extra, fragment, good, out):
    args = _args(command, good, out, *(a.format(out=out) for a in extra))  # a repeated option: the last one counts
    _rejected(args, out, fragment)


def _big_loop(tmp_path: Path, trips: int) -> Path:
    doc = json.loads(valid_text())
    doc["body"][0]["trip_count"] = trips
    path = tmp_path / f"loop{trips}.json"
    path.write_text(json.dumps(doc))
    return path


def test_the_instance_guard_stops_every_command_that_unrolls(tmp_path, out):
    program = _big_loop(tmp_path, 10**9)
    for command in ("check", "compile", "simulate", "footprint", "loops"):
        _rejected(_args(command, program, out), out, "3,000,000,000 instances", "--max-instances")
    shown = _invoke(["show", str(program)])  # the listing never unrolls: any trip count shows
    assert shown.exit_code == 0 and "loop k x1000000000" in shown.stdout


def test_the_limits_are_options(tmp_path, out):
    program = _big_loop(tmp_path, 1000)
    _rejected(_args("check", program, out, "--max-instances", "2999"), out, "3,000 instances", "the limit is 2,999")
    assert _invoke(_args("check", program, out, "--max-instances", "3000")).exit_code == 0
    _rejected(_args("simulate", program, out, "--seeds", "2", "--max-instances", "8999"), out,
              "3 simulated runs of 3,000 instances are 9,000 instance runs", "simulate fewer runs")
    _rejected(_args("simulate", program, out, "--max-memory", "1M"), out, "simulated SBUF, PSUM and DRAM",
              "the limit is 1.0 MiB (--max-memory)")


def test_simulated_memory_beyond_the_machine_is_refused(tmp_path, out):
    doc = json.loads(valid_text())  # a DRAM tensor of 16 GiB fits the DRAM; four copies do not fit this machine
    doc["machine"] = {"base": "trn1", "dram_bytes": 2**40}
    doc["tensors"]["big"] = {"memory": "dram", "dtype": "uint8", "shape": [2**39], "address": 2**20}
    program = tmp_path / "big.json"
    program.write_text(json.dumps(doc))
    _rejected(_args("simulate", program, out), out, "512.0 GiB of simulated", "this machine's memory", "--max-memory")


def test_race_lists_are_capped_but_counted(tmp_path):
    doc = json.loads(valid_text())
    for node in doc["body"][0]["body"]:
        node.pop("deps", None)
    program = tmp_path / "racy.json"
    program.write_text(json.dumps(doc))
    full = json.loads(_invoke(["check", str(program), "--json"]).stdout)
    capped = _invoke(["check", str(program), "--json", "--max-races", "2"])
    assert capped.exit_code == 1
    doc = json.loads(capped.stdout)
    assert doc["total_races"] == full["total_races"] == len(full["races"]) > 2
    assert doc["races"] == full["races"][:2]
    text = _invoke(["check", str(program), "--max-races", "2"]).stdout
    assert text.startswith(f"{full['total_races']} race(s); the first 2 listed (--max-races)")


SCENARIOS = [
    ("syntax-error", "def build(:\n", "cannot load", "SyntaxError"),
    ("build-raises", "def build():\n    raise ValueError('no kernel')\ndef inputs(s):\n    return {}\n"
                     "def reference(i):\n    return {}\n", "build() raised ValueError: no kernel", ""),
    ("build-returns-a-dict", "def build():\n    return {}\ndef inputs(s):\n    return {}\n"
                             "def reference(i):\n    return {}\n", "returned a dict, not a Program", ""),
    ("build-returns-a-bad-program",
     "from neuronsim.machine.formats.program_json import loads_program\nimport json\n"
     "from neuronsim_tests.bad_inputs import VALID\n"
     "def build():\n    d = json.loads(json.dumps(VALID))\n"
     "    d['body'][0]['body'][2]['writes'] = [{'tensor': 'y', 'pattern': [[1, 4]]}]\n"
     "    return loads_program(json.dumps(d), validate=False)\n"
     "def inputs(s):\n    return {}\ndef reference(i):\n    return {}\n", "body[0].body[2].writes[0]",
     "the counts must agree"),
]


@pytest.mark.parametrize(("source", "fragment", "more"), [c[1:] for c in SCENARIOS], ids=[c[0] for c in SCENARIOS])
def test_run_rejects_bad_scenario_files(source, fragment, more, tmp_path, out):
    path = tmp_path / "my_kernel.py"
    path.write_text(source)
    _rejected(["run", str(path), "--out", str(out), "--plot", str(out / "plot.png")], out, fragment, more)


def test_an_internal_error_exits_3_with_one_line(good, monkeypatch):
    # the module (the package exports the command)
    check_module = importlib.import_module("neuronsim.verify.cli.cmd_check")

    def broken(*args, **kwargs):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(check_module, "check_waits", broken)
    plain = _invoke(["check", str(good)])
    assert plain.exit_code == 3 and plain.stdout == ""
    lines = plain.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("internal error: RuntimeError: boom (a bug in neuronsim")
    as_json = _invoke(["check", str(good), "--json"])
    doc = json.loads(as_json.stdout)
    assert as_json.exit_code == 3 and doc["format"] == "neuronsim.error/1" and doc["internal"] is True
    monkeypatch.setenv("NEURONSIM_TRACEBACK", "1")  # developers get the traceback, and still exit 3 (was 1)
    shown = _invoke(["check", str(good)])
    assert shown.exit_code == 3 and shown.stderr.startswith("Traceback (most recent call last):")
    assert "RuntimeError: boom" in shown.stderr and shown.stderr.splitlines()[-1].startswith("internal error: ")
    for off in ("0", "no", "False"):
        monkeypatch.setenv("NEURONSIM_TRACEBACK", off)
        assert "Traceback" not in _invoke(["check", str(good)]).stderr


# -- the real console script ----------------------------------------------------------------
def _script(*args: str, **options) -> subprocess.CompletedProcess:
    return subprocess.run([SCRIPT, *args], capture_output=True, text=True, timeout=120, **options)


def test_console_script_exit_statuses(tmp_path, good):
    bad = tmp_path / "bad.json"
    bad.write_bytes(BAD_INPUTS[0].data)
    run = _script("check", str(bad), "--json")
    assert run.returncode == 2 and "Traceback" not in run.stderr and len(run.stderr.splitlines()) == 1
    assert json.loads(run.stdout)["format"] == "neuronsim.error/1"
    flag = _script("simulate", str(good), "--seed", "-1")
    assert flag.returncode == 2 and flag.stderr.startswith("error: --seed: ") and len(flag.stderr.splitlines()) == 1
    injected = subprocess.run(
        [sys.executable, "-c", "import importlib\ns = importlib.import_module('neuronsim.verify.cli.cmd_show')\n"
         "s.render_listing = lambda p: 1 / 0\nfrom neuronsim.verify.cli import main\nmain()", "show", str(good)],
        capture_output=True, text=True, timeout=120)
    assert injected.returncode == 3 and injected.stderr.startswith("internal error: ZeroDivisionError")
    assert len(injected.stderr.splitlines()) == 1


def test_work_that_outgrows_its_estimate_ends_in_one_line_not_a_kill(good):
    """The console script caps its address space at --max-memory (or the memory available):
    a command that allocates past it (injected: 2 GiB in one piece) gets a MemoryError, exit 2."""
    run = subprocess.run(
        [sys.executable, "-c", "import importlib\ns = importlib.import_module('neuronsim.verify.cli.cmd_show')\n"
         "s.render_listing = lambda p: str(len(bytearray(2**31)))\nfrom neuronsim.verify.cli import main\nmain()",
         "show", str(good), "--max-memory", "100M"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stdout == "", run.stderr
    assert run.stderr.startswith("error: --max-memory: ran out of memory") and len(run.stderr.splitlines()) == 1


def test_a_billion_iterations_are_refused_at_once(tmp_path):
    program = _big_loop(tmp_path, 10**9)
    started = time.perf_counter()
    run = _script("check", str(program))
    seconds = time.perf_counter() - started
    print(f"guard on a loop of 1e9 iterations: exit {run.returncode} in {seconds:.2f} s")
    assert run.returncode == 2 and "--max-instances" in run.stderr and len(run.stderr.splitlines()) == 1
    assert seconds < 10  # a loose bound (the start of the interpreter included); bench/bench_guard.py times it


@pytest.mark.parametrize(("signum", "status", "line"), [(signal.SIGINT, 130, "interrupted"),
                                                        (signal.SIGTERM, 143, "terminated")], ids=["ctrl-c", "sigterm"])
def test_a_signal_ends_with_one_line_and_leaves_outputs_alone(tmp_path, out, signum, status, line):
    program = _big_loop(tmp_path, 20_000)  # 60,000 instances: a simulation of many seconds
    before = _snapshot(out)
    proc = subprocess.Popen([SCRIPT, "simulate", str(program), "--seeds", "3", "--trace", str(out / "trace.json")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3.0)
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == status, stderr
    assert stderr.splitlines() == [line] and stdout == ""
    assert _snapshot(out) == before


def test_a_closed_pipe_is_quiet(good):
    """``neuronsim show BIG | head``: the reader goes away; exit 141 as a shell reports a
    SIGPIPE, nothing on standard error (the write that fails is injected: whether a kernel
    reports a closed pipe on a large write depends on the machine)."""
    run = subprocess.run(
        [sys.executable, "-c", "import importlib\ns = importlib.import_module('neuronsim.verify.cli.cmd_show')\n"
         "def closed(p):\n    raise BrokenPipeError(32, 'Broken pipe')\n"
         "s.render_listing = closed\nfrom neuronsim.verify.cli import main\nmain()", "show", str(good)],
        capture_output=True, text=True, timeout=120)
    assert run.returncode == 141 and run.stderr == ""


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["check", "--help"]])
def test_help_and_version_into_a_closed_pipe_are_141_as_the_commands(args):
    """click ends a closed pipe under its own help or the version with status 1, the status of
    a finding (probe_aj N3); it is the commands' 141 now, nothing on standard error."""
    read, write = os.pipe()
    os.close(read)
    try:
        run = subprocess.run([SCRIPT, *args], stdout=write, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert run.returncode == 141 and run.stderr == ""


def test_the_guard_reads_no_program_bigger_than_its_text(tmp_path):
    """The estimate walks nodes, never instances: a valid nest of a huge product answers at once."""
    doc = json.loads(json.dumps(VALID))
    inner = doc["body"][0]
    for k in range(40):
        inner = {"loop": f"o{k}", "trip_count": 2**62, "body": [inner]}
    doc["body"] = [inner]
    program = tmp_path / "nest.json"
    program.write_text(json.dumps(doc))
    result = _invoke(["check", str(program)])
    assert result.exit_code == 2 and "about 10^" in result.stderr


def test_a_closed_pipe_under_a_table_is_the_commands_141_not_riches_1():
    """rich ends the process with status 1 when its write finds the reader gone, which to
    ``run`` means a check failed (``neuronsim run K | head`` exited 1); the people's console
    raises BrokenPipeError instead, which every command ends with 141 (the test above)."""
    from rich.table import Table

    from neuronsim.verify.app.console import people_console

    class Gone(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

    table = Table("check", "result")
    table.add_row("races", "0")
    with pytest.raises(BrokenPipeError):
        people_console(Gone()).print(table)


@pytest.mark.parametrize("unbuffered", ["1", ""], ids=["PYTHONUNBUFFERED", "buffered"])
def test_a_reader_gone_after_a_line_is_141_even_unbuffered(tmp_path, unbuffered):
    """``neuronsim show BIG | head -1`` (probe_r F3): under ``PYTHONUNBUFFERED`` Python wrote the
    listing straight to the pipe and dropped what the pipe did not take, silently: exit 0, as
    if the listing were whole.  Standard output is buffered by the command now."""
    doc = json.loads(json.dumps(VALID))
    doc["body"] = [{"name": f"fill{k}", "engine": "dve", "op": "memset", "writes": [{"tensor": "xs"}],
                    "attrs": {"value": 0.0}} for k in range(6000)]  # a listing of about 500 KB
    program = tmp_path / "big.json"
    program.write_text(json.dumps(doc))
    env = {**os.environ, "PYTHONUNBUFFERED": unbuffered}
    proc = subprocess.Popen([SCRIPT, "show", str(program)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout.readline()
    proc.stdout.close()
    assert proc.wait(timeout=120) == 141 and proc.stderr.read() == b""


def test_bad_input_under_json_into_a_closed_pipe_keeps_its_exit_2(tmp_path):
    """The error document meets a reader that has gone: its one line is already on standard
    error and its status stands (it was 1, the status of a finding: probe_ad)."""
    proc = subprocess.Popen([SCRIPT, "check", str(tmp_path / "nope.json"), "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    proc.stdout.close()
    stderr = proc.stderr.read()
    proc.wait(timeout=120)
    assert proc.returncode == 2 and stderr.splitlines() == [f"error: {tmp_path / 'nope.json'}: cannot read it: No "
                                                            "such file or directory"], stderr
