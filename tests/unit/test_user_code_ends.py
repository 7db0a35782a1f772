"""A user's code that neuronsim runs besides the kernel (a ``--reference``, its module, a
scenario file, a fuzzed pass) ends the process, loops for ever or returns what no output holds:
one located ``error:`` line and exit 2 (a fuzzed pass's exit: a failure found, exit 1), never
a run that ends 0 with nothing said, never a wait for ever.  The cases where the process would
end run in a child process: a regression there must not end the test run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from neuronsim_tests.bad_inputs import cli_child, one_error_line, refused_in_one_line, valid_text

KERNEL = '''import nki
import nki.language as nl


@nki.jit
def add1(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(x), 1.0))
    return out
'''
MAIN = "from neuronsim.verify.cli import main; main()"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "k.py").write_text(KERNEL)
    np.savez(tmp_path / "in.npz", x=np.ones((128, 64), np.float32))
    return tmp_path


_child = cli_child


def _run(folder: Path, reference: str, *more: str) -> list[str]:
    return ["run", f"{folder / 'k.py'}::add1", "--inputs", str(folder / "in.npz"), "--reference", reference,
            "--out", str(folder / "out"), *more]


@pytest.mark.parametrize("body, call", [("import sys\nsys.exit(0)\n", "sys.exit(0)"),
                                        ("import os\nos._exit(0)\n", "os._exit(0)")])
def test_a_scenario_file_that_ends_the_process_as_it_loads(folder, body, call):
    (folder / "scen.py").write_text(body)
    one_error_line(_child(folder, "run", "scen.py"), "scen.py:2: the scenario file exits", call)


@pytest.mark.parametrize("body, call", [("import sys\nsys.exit(0)\n\ndef ref(x):\n    return x + 1\n", "sys.exit(0)"),
                                        ("import os\n\n\ndef ref(x):\n    os._exit(0)\n", "os._exit(0)")])
def test_a_reference_that_ends_the_process(folder, body, call):
    (folder / "ref.py").write_text(body)
    line = one_error_line(_child(folder, *_run(folder, "ref.py:ref")), "ref.py:", call)
    assert "exits" in line


def test_a_fuzzed_pass_that_ends_the_process_is_a_failure_found(folder):
    (folder / "quits.py").write_text("import os\n\n\ndef p(program):\n    os._exit(0)\n")
    done = _child(folder, "fuzz", "--pass", "quits:p", "--examples", "3", "--workers", "1", "--out", "found")
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    assert "ends the process (os._exit(0)) at quits.py:5" in done.stdout + done.stderr


def test_a_pass_module_that_exits_as_it_loads(folder):
    (folder / "quits.py").write_text("import sys\nsys.exit(0)\n")
    one_error_line(_child(folder, "fuzz", "--pass", "quits:p", "--examples", "3", "--workers", "1"),
                   "--pass", "ends the process (sys.exit(0))")


@pytest.mark.parametrize("where, body, what", [
    ("ref.py:ref", "def ref(x):\n    while True:\n        pass\n", "the reference ran"),
    ("ref.py:ref", "while True:\n    pass\n\n\ndef ref(x):\n    return x\n", "the reference's module ran"),
])
def test_a_reference_that_never_returns_is_stopped_at_its_line(folder, where, body, what):
    (folder / "ref.py").write_text(body)
    one_error_line(_child(folder, *_run(folder, where, "--max-idle", "1")), "ref.py:", what, "--max-idle")
    # compare ran the reference unwatched: it hung, --max-idle or not (probe_bad F1)
    compare = ["compare", "k.py::add1", "k.py::add1", "--inputs", "in.npz", "--reference", where, "--max-idle", "1"]
    one_error_line(_child(folder, *compare), "ref.py:", what, "--max-idle")


def test_a_scenario_file_that_never_finishes_loading_is_stopped(folder):
    (folder / "scen.py").write_text("x = 0\nwhile True:\n    x += 1\n")
    one_error_line(_child(folder, "run", "scen.py", "--max-idle", "1"), "scen.py:", "the scenario file ran")


@pytest.mark.parametrize("value, dtype", [('{"return0": "hello"}', "<U5"),
                                         ("np.ones((128, 64), np.complex64)", "complex64")])
def test_a_reference_returning_what_no_output_holds(folder, monkeypatch, value, dtype):
    (folder / "ref.py").write_text(f"import numpy as np\n\n\ndef ref(x):\n    return {value}\n")
    monkeypatch.chdir(folder)
    refused_in_one_line(_run(folder, "ref.py:ref"), "--reference ref", f"an array of {dtype}")


def test_a_kernel_file_run_without_its_kernel_says_how(folder, monkeypatch):
    monkeypatch.chdir(folder)
    refused_in_one_line(["run", "k.py"], "k.py imports nki", "k.py::FUNCTION")


def test_a_grid_past_nki_s_limit_is_the_option_s_mistake(folder, monkeypatch):
    monkeypatch.chdir(folder)
    refused_in_one_line(["run", "k.py::add1", "--inputs", "in.npz", "--grid", str(2**31)], "--grid", "below 2**31")


def test_more_dma_engines_than_partitions_is_named_in_the_machine(tmp_path):
    doc = json.loads(valid_text())
    doc["machine"] = {"base": "trn1", "dma_engines": 2**62}
    (tmp_path / "p.json").write_text(json.dumps(doc))
    refused_in_one_line(["check", str(tmp_path / "p.json")], "machine.dma_engines", "one DMA engine per SBUF partition")


def test_a_tensor_name_a_program_cannot_hold_is_refused_at_its_line(folder, monkeypatch):
    (folder / "named.py").write_text(KERNEL.replace("buffer=nl.shared_hbm)", "buffer=nl.shared_hbm, name='a\\nb')"))
    monkeypatch.chdir(folder)
    refused_in_one_line(["nki", "named.py::add1", "--inputs", "in.npz", "-o", "p.json"], "named.py:7",
                        "control character U+000A")


def test_a_kernel_that_replaces_json_dumps_leaves_the_command_s_output_whole(folder):
    """The command writes its JSON with the standard library's writer as it was when neuronsim
    loaded: a kernel module's ``json.dumps = None`` gave exit 1 and three tracebacks."""
    (folder / "patched.py").write_text("import json\njson.dumps = None\njson.dump = None\n\n" + KERNEL)
    done = _child(folder, "run", "patched.py::add1", "--inputs", "in.npz", "--out", "out", "--json")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert json.loads(done.stdout)["format"] == "neuronsim.run/1"
    assert sorted(p.name for p in (folder / "out").iterdir()) == ["add1.footprint.json", "add1.trace.json"]


def test_a_thread_of_the_kernel_that_raises_is_one_warning_line(folder):
    (folder / "threads.py").write_text(KERNEL.replace(
        "    out = nl.ndarray", "    def boom():\n        raise RuntimeError('thread boom')\n\n"
        "    import threading\n    worker = threading.Thread(target=boom)\n    worker.start()\n    worker.join()\n"
        "    out = nl.ndarray"))
    done = _child(folder, "run", "threads.py::add1", "--inputs", "in.npz", "--out", "out")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert [line for line in done.stderr.splitlines() if "thread boom" in line] == [
        f"warning: {folder / 'threads.py'}:8: Thread-1 (boom) raised RuntimeError: thread boom"]


def test_an_exit_hook_of_the_kernel_prints_after_the_one_document(folder):
    (folder / "hooked.py").write_text("import atexit\natexit.register(lambda: print('bye'))\n\n" + KERNEL)
    done = _child(folder, "run", "hooked.py::add1", "--inputs", "in.npz", "--out", "out", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["format"] == "neuronsim.run/1"  # one document, nothing after it
    assert done.stderr.splitlines()[-1] == "bye"


def test_a_kernel_that_forks_is_refused_at_its_line(folder):
    """Its child went on with the command: two runs, two documents on standard output."""
    (folder / "forks.py").write_text(KERNEL.replace("    out = nl.ndarray", "    import os\n    os.fork()\n"
                                                                             "    out = nl.ndarray"))
    one_error_line(_child(folder, "run", "forks.py::add1", "--inputs", "in.npz", "--out", "out", "--json"),
                   "forks.py:8", "os.fork()")


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_fuzzed_pass_that_never_returns_is_a_failure_found(folder, workers):
    (folder / "spins.py").write_text("def p(program):\n    while True:\n        pass\n")
    done = _child(folder, "fuzz", "--pass", "spins:p", "--examples", "3", "--workers", workers, "--max-idle", "1",
                  "--out", "found")
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    assert "ran 1 s on one program without returning" in done.stdout + done.stderr
    assert "spins.py:2" in done.stdout + done.stderr


@pytest.fixture
def program(folder: Path) -> Path:
    done = _child(folder, "nki", "k.py::add1", "--inputs", "in.npz", "-o", "prog.json")
    assert done.returncode == 0, done.stderr[-2000:]
    (folder / "spins.py").write_text("def p(program):\n    while True:\n        pass\n")
    return folder / "prog.json"


@pytest.mark.parametrize("command", [["compile", "-o", "out.json"], ["footprint"], ["report", "-o", "r.html"]])
def test_a_pass_of_the_command_line_that_never_returns_is_stopped_at_its_line(program, command):
    """``--passes`` runs a user's pass by its address in every command that takes it: a pass that
    loops for ever is stopped at its line after ``--max-idle`` (it hung ``compile``), and nothing
    is written."""
    folder = program.parent
    compiled = _child(folder, "compile", "prog.json", "-o", "compiled.json")  # (report notes a program without deps)
    assert compiled.returncode == 0, compiled.stderr[-2000:]
    one_error_line(_child(folder, command[0], "compiled.json", *command[1:], "--passes", "spins.py:p",
                          "--max-idle", "1"),
                   "--passes", "ran 1 s on one program without returning", "spins.py:2")
    assert not (folder / "out.json").exists() and not (folder / "r.html").exists()


def test_a_pass_given_by_its_file_runs_and_a_missing_one_is_named(program):
    folder = program.parent
    (folder / "keeps.py").write_text("def p(program):\n    return program\n")
    done = _child(folder, "compile", "prog.json", "-o", "out.json", "--passes", "alloc,keeps.py:p")
    assert done.returncode == 0 and (folder / "out.json").exists(), done.stderr[-2000:]
    one_error_line(_child(folder, "compile", "prog.json", "-o", "o2.json", "--passes", "alloc,gone.py:p"),
                   "--passes", "no such file gone.py")
    one_error_line(_child(folder, "compile", "prog.json", "-o", "o2.json", "--passes", "alloc,keeps.py:q"),
                   "--passes", "keeps.py defines no 'q'")


@pytest.mark.parametrize("where, change, named", [
    ("top", "import sys\nsys.path.clear()", "sys.path"),
    ("body", "import numpy\n    numpy.asarray = None", "numpy.asarray"),
    ("top", "import builtins\nbuiltins.len = None", "builtins.len"),
    ("top", "import click\nclick.echo = None", "click.echo"),  # (exit 3: click was not watched)
    ("body", "import sys\n    sys.stdout.close()", "sys.stdout (closed)"),
    # (exit 3 until these were watched, and str = bytes broke the handler itself: probe_ar)
    ("top", "import re\nre.compile = None", "re.compile"),
    ("top", "import sys\nsys.modules['numpy'] = None", "sys.modules['numpy']"),
    ("top", "import sys\nsys.path_hooks.clear()", "sys.path_hooks"),
    ("body", "import builtins\n    builtins.str = bytes", "builtins.str"),
    ("top", "import heapq\nheapq.heappush = None", "heapq.heappush"),  # (the simulator's queue: probe_av)
])
def test_a_kernel_that_breaks_the_interpreter_is_its_failure(folder, where, change, named):
    """A kernel that empties ``sys.path``, replaces numpy's functions or a builtin breaks
    neuronsim's next step in the same interpreter: exit 2 naming what it replaced, not an
    internal error (exit 3, "a bug in neuronsim")."""
    kernel = (KERNEL.replace("@nki.jit", change + "\n\n\n@nki.jit") if where == "top" else
              KERNEL.replace("    out = nl.ndarray", "    " + change + "\n    out = nl.ndarray"))
    (folder / "breaks.py").write_text(kernel)
    one_error_line(_child(folder, "run", "breaks.py::add1", "--inputs", "in.npz", "--out", "out"),
                   "the user's code this command ran", f"replaced {named}")


def test_a_kernel_that_changes_folder_as_it_loads_leaves_the_command_s_paths_alone(folder, tmp_path_factory):
    """``--out out`` is the command line's folder: a kernel's ``os.chdir`` at import sent the
    files elsewhere (the write then failed, exit 2)."""
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (folder / "moves.py").write_text(f"import os\nos.chdir({str(elsewhere)!r})\n" + KERNEL)
    done = _child(folder, "run", "moves.py::add1", "--inputs", "in.npz", "--out", "out")
    assert done.returncode == 0, done.stderr[-2000:]
    assert (folder / "out" / "add1.trace.json").is_file() and not (elsewhere / "out").exists()


@pytest.mark.parametrize("change", ["import sys\nsys.setrecursionlimit(60)",
                                    "import io, sys\nsys.stdout = io.StringIO()"])
def test_what_a_kernel_changes_of_the_interpreter_as_it_loads_is_the_command_s_again(folder, change):
    """A kernel that lowers the recursion limit or takes ``sys.stdout`` as it loads: the
    command runs and prints as it would (it failed as "the program nests too deeply", or
    printed nothing at all, exit 0)."""
    (folder / "takes.py").write_text(KERNEL.replace("@nki.jit", change + "\n\n\n@nki.jit"))
    done = _child(folder, "run", "takes.py::add1", "--inputs", "in.npz", "--out", "out")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "makespan" in done.stdout and (folder / "out" / "add1.trace.json").is_file()


@pytest.mark.parametrize("body, fragment", [
    ("    for i in nl.affine_range(2**64):\n        nl.store(out, value=nl.load(x))\n", "traces to more than"),
    ("    big = nl.ndarray((1,) * 40 + (128, 64), dtype=x.dtype, buffer=nl.shared_hbm)\n",
     "42 dimensions; a tensor has at most 32"),
])
def test_a_kernel_past_what_a_program_holds_is_refused_at_its_line(folder, body, fragment):
    """A loop of 2**64 iterations, a tensor of 42 dimensions: one located line, exit 2 (they
    were internal errors: ``len`` of the range overflowed, numpy's 32-dimension limit)."""
    (folder / "past.py").write_text(KERNEL.replace("    nl.store(out,", body + "    nl.store(out,"))
    one_error_line(_child(folder, "run", "past.py::add1", "--inputs", "in.npz", "--out", "out"), "past.py:", fragment)


def test_an_argument_of_more_dimensions_than_a_tensor_has_is_refused(folder):
    np.savez(folder / "deep.npz", x=np.ones((1,) * 38 + (128, 64), np.float32))
    one_error_line(_child(folder, "run", "k.py::add1", "--inputs", "deep.npz", "--out", "out"),
                   "k.py:", "argument x: 40 dimensions")


@pytest.mark.parametrize("source, name, fragment", [
    ("h = int\n", "h", "is <class 'int'>, not a kernel function"),
    ("import functools\nh = functools.partial(max, 1)\n", "h", "not a kernel function"),
    ("def __getattr__(name):\n    raise RuntimeError('no ' + name)\n", "h",
     "looking up 'h' in the kernel file: RuntimeError"),
    # an NKI call's stand-in was traced, its error placed in neuronsim's own source (probe_ax)
    ("import neuronxcc.nki.language as nl\n", "nl.load", "names.py: 'nl.load' in the kernel file is <function load"),
    ("import neuronxcc.nki as nki\n", "nki.jit", "not a kernel function"),
    # a library's function was traced, and failed inside the library or neuronsim (probe_az)
    ("import numpy as np\n", "np.linalg.norm", "'np.linalg.norm' in the kernel file is <function norm"),
    ("import functools\n", "functools.wraps", "'functools.wraps' in the kernel file is <function wraps"),
])
def test_a_kernel_name_that_is_no_kernel_function_is_refused(folder, source, name, fragment):
    (folder / "names.py").write_text(source)
    one_error_line(_child(folder, "run", f"names.py::{name}", "--inputs", "in.npz", "--out", "out"), fragment)


def test_an_nki_error_inside_eval_is_placed_at_the_kernel_line_that_ran_it(folder):
    # it was "<string>:1", no file (probe_ax)
    (folder / "ev.py").write_text(KERNEL.replace("value=nl.add(nl.load(x), 1.0)", 'value=eval("nl.load(x[0:256, :])")'))
    one_error_line(_child(folder, "run", "ev.py::add1", "--inputs", "in.npz", "--out", "out"),
                   "ev.py:8: partition dimension 256")


def test_an_nki_error_inside_generated_code_is_placed_at_the_line_that_ran_it(folder):
    # any pseudo file name, not only eval's "<string>": it was "<generated>:1" (probe_az)
    (folder / "gen.py").write_text(KERNEL.replace(
        "value=nl.add(nl.load(x), 1.0)", 'value=eval(compile("nl.load(x[0:256, :])", "<generated>", "eval"))'))
    one_error_line(_child(folder, "run", "gen.py::add1", "--inputs", "in.npz", "--out", "out"),
                   "gen.py:8: partition dimension 256")


def test_a_kernel_defined_by_exec_keeps_its_pseudo_file_name(folder):
    # with no real file around it, the generated code's own line is the best place there is
    body = KERNEL.split("@nki.jit\n", 1)[1].replace("nl.load(x)", "nl.load(x[0:256, :])")
    source = "@nki.jit\n" + body
    (folder / "made.py").write_text(f"import nki\nimport nki.language as nl\n\nexec({source!r})\n")
    one_error_line(_child(folder, "run", "made.py::add1", "--inputs", "in.npz", "--out", "out"),
                   "<string>:4: partition dimension 256")


def test_a_finaliser_of_the_kernel_that_raises_is_one_warning_line(folder):
    (folder / "dels.py").write_text("class D:\n    def __del__(self):\n        raise RuntimeError('del')\n\n\n"
                                    + KERNEL.replace("    out = nl.ndarray", "    D()\n    out = nl.ndarray"))
    done = _child(folder, "run", "dels.py::add1", "--inputs", "in.npz", "--out", "out")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    assert "dels.py:3: a finaliser raised RuntimeError: del" in done.stderr


def test_two_outputs_of_one_command_on_one_file_are_refused(program):
    folder = program.parent
    one_error_line(_child(folder, "simulate", "prog.json", "--trace", "t.json", "--outputs", "t.json"),
                   "the --outputs file is also the --trace file")
    one_error_line(_child(folder, "run", "k.py::add1", "--inputs", "in.npz", "--out", "o",
                          "--report", "o/add1.footprint.json"), "the --report file is also the --out file")
    assert not (folder / "t.json").exists() and not (folder / "o").exists()


def test_outputs_beside_a_bad_environment_and_a_long_name(program):
    """``MPLBACKEND`` naming no backend (matplotlib refused it as it loaded: an internal error
    on ``--plot``), and an output name of 245 characters, legal, whose temporary name was not."""
    folder = program.parent
    done = subprocess.run([sys.executable, "-c", MAIN, "footprint", "prog.json", "--plot", "fp.png"], cwd=folder,
                          capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH="", MPLBACKEND="nonexistent"))
    assert done.returncode == 0 and (folder / "fp.png").is_file(), done.stderr[-2000:]
    name = "a" * 245 + ".json"
    done = _child(folder, "compile", "prog.json", "-o", name)
    assert done.returncode == 0 and (folder / name).is_file(), done.stderr[-2000:]


def test_a_kernel_file_python_cannot_parse_for_memory_says_so(folder):
    """CPython's parser gives up on a deeply nested expression with a ``MemoryError`` and no
    message: the line said what that means (it ended "MemoryError: " with nothing after)."""
    (folder / "deep.py").write_text(KERNEL.replace("    out = nl.ndarray", "    y = " + "-" * 100_000 + "1\n"
                                                   "    out = nl.ndarray"))
    one_error_line(_child(folder, "run", "deep.py::add1", "--inputs", "in.npz", "--out", "out"),
                   "deep.py", "MemoryError: out of memory, or an expression nested too deeply")


def _scenario(folder: Path, tail: str) -> str:
    """The shipped softmax scenario, copied beside the test with ``tail`` appended (a later
    definition replaces the scenario's own)."""
    import neuronsim.scenarios.softmax as softmax

    (folder / "mine.py").write_text(Path(softmax.__file__).read_text() + "\n\n" + tail)
    return "mine.py"


@pytest.mark.parametrize("tail, fragment", [
    ("def inputs(seed):\n    return None\n", "mine.inputs() returned NoneType None; expected a dict of arrays"),
    ("def inputs(seed):\n    return {'x': np.ones((256, 512), np.complex64)}\n", "an array of complex64"),
    ("def reference(inputs):\n    return [1, 2, 3]\n", "mine.reference() returned list"),
    ("rtol = -1.0\n", "mine.rtol is -1.0; a tolerance is a finite number, 0 or more"),
    ("atol = 'abc'\n", "mine.atol is 'abc'"),
])
def test_a_scenario_file_s_values_of_the_wrong_kind_are_its_error(folder, tail, fragment):
    """What a scenario file's ``inputs()`` or ``reference()`` returns, and its ``rtol`` / ``atol``,
    are checked where they are used: each was an internal error, or a tolerance of -1 a failed
    comparison (exit 1)."""
    one_error_line(_child(folder, "run", _scenario(folder, tail), "--out", "out"), "SCENARIO", fragment)
    assert not (folder / "out").exists()


@pytest.mark.parametrize("source, fragment", [
    ("def build_tasks():\n    return 5\n", "t.build_tasks() returned a int, not a TaskProgram"),
    ("def build_tasks():\n    raise ValueError('tb bug')\n", "t.py:2: t.build_tasks() raised ValueError: tb bug"),
    ("import sys\n\n\ndef build_tasks():\n    sys.exit(0)\n", "t.build_tasks() exits (sys.exit(0))"),
    ("def build_tasks():\n    while True:\n        pass\n", "ran 1 s of Python without returning"),
])
def test_a_task_scenario_file_s_build_is_the_user_s_code(folder, source, fragment):
    """A task scenario file's ``build_tasks()`` raising, exiting, looping or returning what is
    no task program: one located line, exit 2 (internal errors, a silent exit 0 and a hang
    before)."""
    (folder / "t.py").write_text(source)
    one_error_line(_child(folder, "run", "t.py", "--out", "out", "--max-idle", "1"), fragment)
    assert not (folder / "out").exists()


def test_a_scenario_file_s_build_that_never_returns_is_stopped(folder):
    one_error_line(_child(folder, "run", _scenario(folder, "def build():\n    while True:\n        pass\n"),
                          "--out", "out", "--max-idle", "1"), "mine.build() ran 1 s of Python without returning")


@pytest.mark.parametrize("args, fragment", [
    (["--arg", "n=1", "--arg", "n=2"], "--arg: n is given twice"),
    (["--arg", "n=" + "-" * 100_000 + "1"], "--arg: n: its value nests too deeply"),
    # a literal mistyped was taken as its text and refused at the kernel's line, or not at all
    (["--arg", "n=[1,"], "--arg: n: '[1,' is not a Python literal"),
    (["--arg", "n==1"], "--arg: n: '=1' is not a Python literal"),
    (["--arg", "n=" + "9" * 5000], "--arg: n: an integer of 5,000 digits; Python reads at most"),
    (["-o", "-", "--json"], "-o: --json writes its report to standard output"),
])
def test_nki_options_that_cannot_hold(folder, args, fragment):
    done = _child(folder, "nki", "k.py::add1", "--inputs", "in.npz", *(["-o", "p.json"] if "-o" not in args else []),
                  *args)
    one_error_line(done, fragment)


@pytest.mark.parametrize("args, fragment", [
    (["run", "softmax", "--out", ""], "--out: an empty folder name"),
    (["run", "softmax", "--ranks", "2"], "--ranks: --ranks is for kernels"),
    (["run", "matmul_tiled", "--target", "trn2"], "--target: --target is for kernels"),  # (ran on trn1: probe_ax)
    (["run", "k.py::add1", "--list"], "--list: --list lists the shipped scenarios and runs none"),
    # a task scenario ran to the end past --max-instances (probe_ax)
    (["run", "gemm_splitk", "--out", "o", "--max-instances", "1"], "--max-instances: the program submits"),
    (["run", "gemm_splitk", "--passes", "derive-call-directions"], "--passes is for kernels and instruction scenarios"),
    (["fuzz", "--examples", "2", "--out", ""], "--out: an empty folder name"),
    (["run", "k.py::add1", "--inputs", "in.npz", "--out", "o", "--plot", ""], "the path is empty"),
    # a kernel's reference was dropped without a word (a scenario's was refused)
    (["run", "k.py::add1", "--inputs", "in.npz", "--out", "o", "--reference", "k:add1", "--timing-only"],
     "--timing-only: --timing-only computes no value to compare with --reference"),
    (["run", "softmax", "--out", "o", "--plot", "t.pgf"], "the extension .pgf is not an image format"),
    # options about values beside --timing-only were ignored without a word (probe_ax)
    (["run", "k.py::add1", "--inputs", "in.npz", "--out", "o", "--timing-only", "--rtol", "0.5"],
     "--rtol: --rtol is about values; --timing-only computes none"),
    (["simulate", "prog.json", "--timing-only", "--compare", "all"], "--compare: --compare is about values"),
    (["simulate", "prog.json", "--timing-only", "--data-seed", "5"], "--data-seed: --data-seed is about values"),
    (["run", "softmax", "--out", "o", "--blas-threads", "\u00b2"], "expected a number of threads from 1 to 999999"),
    (["compare", "k.py::add1", "k.py::add1", "--inputs", "in.npz", "--reference", ""], "expected MODULE:FN"),
    (["fuzz", "--examples", "2", "--out", "k.py/sub"], "k.py is a file, not a folder"),
])
def test_run_and_fuzz_options_named_at_once(folder, args, fragment):
    """An empty ``--out`` was named nowhere (fuzz said so after its whole run); ``--ranks`` on a
    scenario was ignored; a file where ``--out``'s parent folder should be was "not writable"."""
    (folder / "prog.json").write_text(valid_text())
    one_error_line(_child(folder, *args), fragment)


def test_a_kernel_s_umask_does_not_reach_the_command_s_files(folder):
    """A kernel's ``os.umask(0o777)`` wrote the trace and footprint with mode 0 (probe_bad M-F9)."""
    (folder / "m.py").write_text(KERNEL.replace("def add1(x):\n", "def add1(x):\n    import os\n    os.umask(0o777)\n"))
    done = _child(folder, "run", "m.py::add1", "--inputs", "in.npz", "--out", "out")
    assert done.returncode == 0, done.stderr
    written = sorted((folder / "out").iterdir())
    assert written and all(path.stat().st_mode & 0o400 for path in written), [oct(p.stat().st_mode) for p in written]


def test_a_huge_exception_message_is_one_short_line(folder):
    """A kernel's 2 MB exception message was one 2 MB line (probe_bad M-F12); the line keeps its
    location, start and end, and the --json document the whole message."""
    raising = "def add1(x):\n    raise ValueError('a' * 2_000_000 + 'END')\n"
    (folder / "h.py").write_text(KERNEL.replace("def add1(x):\n", raising))
    line = one_error_line(_child(folder, "nki", "h.py::add1", "--inputs", "in.npz", "-o", "p.json"),
                          "h.py:", "characters left out", "END")
    assert len(line) < 2100
    doc = json.loads(_child(folder, "nki", "h.py::add1", "--inputs", "in.npz", "-o", "p.json", "--json").stdout)
    assert len(doc["message"]) > 2_000_000


@pytest.mark.parametrize("tamper, outcome", [("os.replace = None", None),  # (bound as neuronsim loads)
                                             ("time.perf_counter = None", "time.perf_counter"),
                                             ("tempfile.mkstemp = None", "tempfile.mkstemp"),
                                             ("sys.meta_path.clear()", None),
                                             ("sys.exit = None", None),  # (probe_re N6: 3 tracebacks)
                                             ("sys.excepthook = None", "sys.excepthook")])  # (probe_ad: exit 3)
def test_a_kernel_that_breaks_what_neuronsim_writes_with_is_the_kernel_s_input(folder, tamper, outcome):
    """Replacing a function neuronsim writes or times with was an exit 3, "a bug in neuronsim"
    (probe_bad F4); clearing the import finders failed the removal of neuronsim's own."""
    body = f"def add1(x):\n    import os, sys, tempfile, time\n    {tamper}\n"
    (folder / "t.py").write_text(KERNEL.replace("def add1(x):\n", body))
    done = _child(folder, "run", "t.py::add1", "--inputs", "in.npz", "--out", "out")
    if outcome is None:
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    else:
        one_error_line(done, f"replaced {outcome}", "which neuronsim uses in the same interpreter")


def test_a_kernel_that_makes_os_replace_do_nothing_does_not_lose_the_outputs(folder):
    """neuronsim puts its files in place with os.replace, bound as it loads: a kernel's no-op
    replacement left temporary files and a report naming files never written (probe_re N5)."""
    (folder / "r.py").write_text(KERNEL.replace("def add1(x):\n",
                                                "def add1(x):\n    import os\n    os.replace = lambda a, b: None\n"))
    done = _child(folder, "run", "r.py::add1", "--inputs", "in.npz", "--out", "out")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (folder / "out").iterdir()) == ["add1.footprint.json", "add1.trace.json"]


def test_a_kernel_that_closes_standard_output_is_named_in_the_one_line(folder):
    """The run's table then has nowhere to go; the line said only "Bad file descriptor"
    (probe_re U5), now which stream it is."""
    (folder / "c.py").write_text(KERNEL.replace("def add1(x):\n", "def add1(x):\n    import os\n    os.close(1)\n"))
    done = _child(folder, "run", "c.py::add1", "--inputs", "in.npz", "--out", "out")
    one_error_line(done, "standard output (descriptor 1, closed while the command ran)", "Bad file descriptor")


def test_a_pass_that_forks_is_refused_at_its_line(program):
    """A pass given by its address that forks made ``compile`` run twice, both writing ``-o``,
    and ``fuzz`` multiply itself, leaving orphans (probe_ar); a kernel's fork was refused."""
    folder = program.parent
    (folder / "forks.py").write_text("import os\n\n\ndef p(program):\n    os.fork()\n    return program\n")
    one_error_line(_child(folder, "compile", "prog.json", "-o", "out.json", "--passes", "alloc,forks.py:p"),
                   "--passes", "the pass 'forks.py:p' raised UserFork: os.fork()", "at forks.py:5")
    assert not (folder / "out.json").exists()
    done = _child(folder, "fuzz", "--pass", "forks:p", "--examples", "3", "--workers", "1", "--out", "found")
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    assert (done.stdout + done.stderr).count("no failure") == 0 and "os.fork()" in done.stdout + done.stderr


@pytest.mark.parametrize("source", ["import os\n\n\ndef ref(x):\n    os.fork()\n    return x + 1\n",
                                    "from os import fork\n\n\ndef ref(x):\n    fork()\n    return x + 1\n"])
def test_a_reference_that_forks_is_not_called_the_kernel(folder, source):
    """probe_av: a --reference's fork was told as "the kernel forks the process"."""
    (folder / "ref_fork.py").write_text(source)
    line = one_error_line(_child(folder, "run", "k.py::add1", "--inputs", "in.npz", "--reference", "ref_fork.py:ref",
                                 "--out", "o"), "ref_fork.py:5", "os.fork()")
    assert "the kernel forks" not in line, line


@pytest.mark.parametrize("timer", [
    "signal.setitimer(signal.ITIMER_PROF, 0.01, 0.01)\n",  # no handler: not started
    # a handler, the timer, then the default action again: the timer stops (probe_av)
    "signal.signal(signal.SIGPROF, lambda *_: None)\nsignal.setitimer(signal.ITIMER_PROF, 0.001, 0.001)\n"
    "signal.signal(signal.SIGPROF, signal.SIG_DFL)\n",
    # a handler that raises, left running: stopped when the kernel's code ends (probe_av)
    "def tick(*_):\n    raise RuntimeError('tick')\n\n\nsignal.signal(signal.SIGPROF, tick)\n"
    "signal.setitimer(signal.ITIMER_PROF, 0.5, 0.001)\n",
], ids=["no-handler", "default-again", "raising-handler"])
def test_a_kernel_s_profiling_timer_does_not_end_the_command(folder, timer):
    """``signal.setitimer(ITIMER_PROF, ...)`` with no SIGPROF handler ended the command by the
    signal, exit 155, nothing said (probe_ar)."""
    source = KERNEL.replace("import nki\n", "import nki\nimport signal\n\n" + timer)
    (folder / "k.py").write_text(source)
    done = _child(folder, "run", "k.py::add1", "--inputs", "in.npz", "--out", "o")
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
