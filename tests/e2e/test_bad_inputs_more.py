"""Bad input a helper's sweep of every command found escaping the contract (one ``error:``
line, exit 2, no traceback): standard output full or closed, a NaN where a finite number is
due, a user's pass module that does not import or a pass that raises, a text file given as an
``.npz``; and a valid program ``simulate`` failed on (exit 3).  Each case runs the installed
console script from a folder outside the checkout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from neuronsim_tests.bad_inputs import VALID, one_error_line

NEURONSIM = Path(sys.executable).with_name("neuronsim")
TIMEOUT = 120
ENDLESS = '''
import nki
import nki.language as nl


@nki.jit
def endless(x):
    while True:
        pass
'''
RAISING_PASS = '''
class Boom:
    name = "boom"

    def run(self, program):
        raise RuntimeError("my pass exploded")

    def __call__(self, program):
        raise RuntimeError("my pass exploded")


def bare(program):
    raise MemoryError
'''


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "p.json").write_text(json.dumps(VALID))
    (tmp_path / "endless.py").write_text(ENDLESS)
    (tmp_path / "synerr.py").write_text("def f(:\n")
    (tmp_path / "boom.py").write_text(RAISING_PASS)
    (tmp_path / "text.npz").write_text("not an archive\n")
    return tmp_path


def _run(folder: Path, args: list[str], timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run([str(NEURONSIM), *args], cwd=folder, capture_output=True, text=True, timeout=timeout)


def test_a_full_standard_output_is_one_line(folder: Path) -> None:
    with open("/dev/full", "w") as full:
        run = subprocess.run([str(NEURONSIM), "check", "p.json", "--json"], cwd=folder, stdout=full,
                             stderr=subprocess.PIPE, text=True, timeout=TIMEOUT)
    one_error_line(run, "standard output", "No space left")


def test_bad_input_with_standard_error_full_still_exits_2(folder: Path) -> None:
    """The error line cannot be written (``2>/dev/full``): the status still says bad input,
    and under ``--json`` the error document still reaches standard output."""
    (folder / "bad.json").write_text(json.dumps({**VALID, "machine": 7}))
    with open("/dev/full", "w") as full:
        plain = subprocess.run([str(NEURONSIM), "check", "bad.json"], cwd=folder, stdout=subprocess.PIPE,
                               stderr=full, text=True, timeout=TIMEOUT)
        as_json = subprocess.run([str(NEURONSIM), "check", "bad.json", "--json"], cwd=folder,
                                 stdout=subprocess.PIPE, stderr=full, text=True, timeout=TIMEOUT)
    assert plain.returncode == 2 and plain.stdout == ""
    assert as_json.returncode == 2
    document = json.loads(as_json.stdout)
    assert document["format"] == "neuronsim.error/1" and document["path"] == "machine"


def test_a_closed_standard_output_is_refused_before_any_work(folder: Path) -> None:
    run = subprocess.run([str(NEURONSIM), "compile", "p.json", "-o", "out.json"], cwd=folder, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, timeout=TIMEOUT, close_fds=True,
                         preexec_fn=lambda: __import__("os").close(1))
    one_error_line(run, "standard output is closed")
    assert not (folder / "out.json").exists()


@pytest.mark.parametrize("args, fragment", [
    (["nki", "endless.py::endless", "--max-idle", "nan", "-o", "p2.json"], "--max-idle"),
    (["compare", "endless.py::endless", "endless.py::endless", "--rtol", "nan"], "--rtol"),
])
def test_nan_is_not_a_finite_option(folder: Path, args: list[str], fragment: str) -> None:
    one_error_line(_run(folder, args), fragment, "not a finite number")


@pytest.mark.parametrize("spec, fragments", [
    ("synerr:f", ("cannot load the pass 'synerr:f'", "synerr.py:1")),
    ("boom:Boom", ("the pass", "raised RuntimeError: my pass exploded", "boom.py:")),
    ("boom:bare", ("the pass 'boom:bare' raised MemoryError at boom.py:",)),  # (was "MemoryError:  at": a probe)
    ("builtins:int", ("builtins:int: <class 'int'> is a class whose objects have neither apply nor __call__",)),
])
def test_a_users_pass_that_fails_is_the_users_input(folder: Path, spec: str, fragments: tuple[str, ...]) -> None:
    one_error_line(_run(folder, ["compile", "p.json", "-o", "out.json", "--passes", spec]), "--passes", *fragments)


def test_a_text_file_given_as_inputs_is_named_as_not_an_archive(folder: Path) -> None:
    run = _run(folder, ["simulate", "p.json", "--inputs", "text.npz"])
    line = one_error_line(run, "--inputs", "not an .npz archive")
    assert "pickle" not in line


def test_simulate_runs_a_local_gather_into_fewer_partitions(folder: Path) -> None:
    program = {"format": "neuronsim.program/1", "tensors": {
        "a": {"memory": "sbuf", "dtype": "float32", "shape": [128, 64], "partition": 0, "offset": 0},
        "d": {"memory": "sbuf", "dtype": "uint16", "shape": [128, 1], "partition": 0, "offset": 4096},
        "e": {"memory": "sbuf", "dtype": "float32", "shape": [1, 3], "partition": 0, "offset": 8192}},
        "body": [{"name": "x", "engine": "pool", "op": "local_gather", "reads": [{"tensor": "a"}, {"tensor": "d"}],
                  "writes": [{"tensor": "e"}]}]}
    (folder / "g.json").write_text(json.dumps(program))
    run = _run(folder, ["simulate", "g.json"])
    assert run.returncode in (0, 1) and "internal error" not in run.stderr, run.stderr[-2000:]


def test_an_unknown_explain_instruction_leaves_no_output(folder: Path) -> None:
    one_error_line(_run(folder, ["compile", "p.json", "-o", "out.json", "--explain", "nosuch", "load"]), "--explain")
    assert not (folder / "out.json").exists()


def test_fuzz_refuses_a_pass_that_is_not_callable_before_any_example(folder: Path) -> None:
    (folder / "notapass.py").write_text("NOTCALLABLE = 5\n")
    one_error_line(_run(folder, ["fuzz", "--examples", "2", "--pass", "notapass:NOTCALLABLE", "--out", "ff"]),
                   "--pass", "neither a pass nor a function")
    assert not (folder / "ff").exists()


def test_a_grid_of_more_programs_than_the_instance_limit_is_refused_up_front(folder: Path) -> None:
    one_error_line(_run(folder, ["nki", "endless.py::endless", "--grid", "100000000x100000000", "-o", "g.json"],
                        timeout=30), "--grid", "--max-instances")


def test_a_nul_byte_in_a_kernel_file_is_named_at_its_line(folder: Path) -> None:
    (folder / "nul.py").write_bytes(b"import nki\ndef k(x):\x00\n    pass\n")
    one_error_line(_run(folder, ["nki", "nul.py::k", "-o", "n.json"]), "nul.py:2:", "null bytes")


@pytest.mark.parametrize("spec", ["alloc{align=1000000}", "alloc{psum_banks=99999999999}", "alloc{buffers=10000}"])
def test_an_alloc_option_out_of_any_machines_range_is_the_options_error(folder: Path, spec: str) -> None:
    one_error_line(_run(folder, ["compile", "p.json", "-o", "out.json", "--passes", spec]), "--passes.alloc")
    assert not (folder / "out.json").exists()


@pytest.mark.parametrize("args, fragment", [
    (["fuzz", "--examples", "2", "--out", "loop"], "loop is a symbolic link that leads nowhere (Too many levels"),
    (["fuzz", "--examples", "2", "--out", "gone/sub"], "gone is a symbolic link that leads nowhere (No such file"),
    (["run", "matmul_tiled", "--out", "loop"], "loop is a symbolic link that leads nowhere (Too many levels"),
    (["run", "matmul_tiled", "--out", "gone"], "gone is a symbolic link that leads nowhere (No such file"),
    # a folder the system lets no one make, though access() says it may (probe_bad M-F13: after the whole fuzz)
    (["fuzz", "--examples", "2", "--out", "/proc/neuronsim-fz"], "cannot create the folder: No such file"),
])
def test_an_output_folder_that_cannot_be_made_is_refused_before_any_work(folder: Path, args: list[str],
                                                                         fragment: str) -> None:
    """``fuzz --out`` through a loop of links ran to its end and exited 0 when it found nothing
    to write (and would have failed writing the first failure); ``run`` said only "File exists"."""
    (folder / "loop").symlink_to("loop")
    (folder / "gone").symlink_to(folder / "missing" / "target")
    line = one_error_line(_run(folder, args), fragment)
    assert line.startswith(f"error: {args[-1]}: ")
    assert not (folder / "missing").exists() and not (folder / "out").exists()


@pytest.mark.parametrize("command", [["check"], ["simulate"], ["show"], ["footprint"], ["compile", "-o", "c.json"],
                                     ["tasks"]])
@pytest.mark.parametrize("given, kind, spec", [("endless.py::endless", "an NKI kernel", "endless.py::endless"),
                                               ("endless.py", "a Python file", "endless.py::FUNC")])
def test_a_kernel_where_a_program_goes_says_what_to_do_with_it(folder: Path, command: list[str], given: str,
                                                                kind: str, spec: str) -> None:
    """A program command given a kernel said "No such file or directory" or "malformed JSON at
    line 1 column 1" (probe_bad M-F7b): the input was of the wrong kind."""
    line = one_error_line(_run(folder, [command[0], given, *command[1:]]), f"it is {kind}, not a JSON document",
                          f"neuronsim nki {spec} -o PROGRAM.json", f"neuronsim run {spec}")
    assert line.startswith(f"error: {given}: it is ")
    assert not (folder / "c.json").exists()


@pytest.mark.parametrize("command", [["check", "-"], ["simulate", "-"], ["compile", "-", "-o", "c.json"]])
def test_python_source_on_standard_input_says_what_to_do_with_it(folder: Path, command: list[str]) -> None:
    # it was "malformed JSON at line 1 column 1" (probe_ax)
    run = subprocess.run([str(NEURONSIM), *command], cwd=folder, capture_output=True, text=True, timeout=TIMEOUT,
                         input="# a kernel\n\nimport nki\nimport nki.language as nl\n")
    one_error_line(run, "error: -: standard input holds Python source, not a JSON document",
                   "neuronsim nki FILE.py::FUNC -o PROGRAM.json")
    assert not (folder / "c.json").exists()


def test_a_program_whose_name_holds_two_colons_is_a_program(folder: Path) -> None:
    """``k.py::add1.json`` beside a ``k.py`` is a JSON file, not a kernel (probe_re N2)."""
    (folder / "k.py").write_text("x = 1\n")
    (folder / "k.py::add1.json").write_text(json.dumps(VALID))
    done = _run(folder, ["check", "k.py::add1.json"])
    assert done.returncode in (0, 1) and "NKI kernel" not in done.stderr, done.stderr
