"""The sixth bad-input sweep of round 4: each class it found, one reproducer.

Every bad input exits 2 with one located line (no ``internal error``, no traceback) and
writes nothing: MX ops missing their lane types or with scales that do not fit, access
patterns beyond numpy's views, an archive member that is no array, an output path that is
one of the command's inputs, a kernel raising a ``BaseException`` of its own or an exception
whose message fails, a grid whose instances are past the instance limit (refused after one
instance, not traced for hours).  Runs go through click's test runner, as in
``test_bad_inputs_round4.py``.
"""

from __future__ import annotations

import copy
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from neuronsim.verify.cli import cli
from neuronsim_tests.bad_inputs import VALID
from neuronsim_tests.bad_inputs import refused_in_one_line as _refused

_TILE = {"memory": "sbuf", "partition": 0}
MX_TENSORS = {
    "src": {**_TILE, "dtype": "float32", "shape": [32, 16], "offset": 0},
    "data": {**_TILE, "dtype": "uint32", "shape": [32, 4], "offset": 4096},
    "sc": {**_TILE, "dtype": "uint8", "shape": [32, 4], "offset": 8192},
    "w": {**_TILE, "dtype": "uint32", "shape": [32, 4], "offset": 12288},
    "ws": {**_TILE, "dtype": "uint8", "shape": [32, 4], "offset": 16384},
    "thin": {**_TILE, "dtype": "uint8", "shape": [32, 1], "offset": 20480},
    "ps": {"memory": "psum", "dtype": "float32", "shape": [4, 4], "partition": 0, "bank": 0},
}
QUANTIZE = {"name": "q", "engine": "dve", "op": "quantize_mx", "reads": [{"tensor": "src"}],
            "writes": [{"tensor": "data"}, {"tensor": "sc"}], "attrs": {"dtype": "float8_e4m3fn_x4"}}
MATMUL = {"name": "m", "engine": "pe", "op": "matmul_mx", "reads": [{"tensor": t} for t in ("w", "data", "ws", "sc")],
          "writes": [{"tensor": "ps"}], "attrs": {"stationary_dtype": "float8_e4m3fn_x4",
                                                  "moving_dtype": "float8_e4m3fn_x4"}}


def _mx(tmp_path: Path, *body: dict) -> str:
    path = tmp_path / "mx.json"
    path.write_text(json.dumps({"format": "neuronsim.program/1", "machine": "trn3", "tensors": MX_TENSORS,
                                "body": list(body)}))
    return str(path)


def _with(instruction: dict, **changes) -> dict:
    out = copy.deepcopy(instruction)
    for key, value in changes.items():
        if key == "drop":
            del out["attrs"][value]
        elif key in ("reads", "writes"):
            out[key] = value
        else:
            out["attrs"][key] = value
    return out




def test_valid_mx_ops_simulate(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["simulate", _mx(tmp_path, QUANTIZE, dict(MATMUL, deps=[{"on": "q"}]))])
    assert result.exit_code == 0, (result.output, result.exception)


@pytest.mark.parametrize("instruction, where, words", [
    (_with(QUANTIZE, drop="dtype"), "body[0].attrs.dtype", "needs attrs.dtype"),
    (_with(MATMUL, drop="moving_dtype"), "body[0].attrs.moving_dtype", "needs attrs.moving_dtype"),
    (_with(QUANTIZE, writes=[{"tensor": "data"}, {"tensor": "thin"}]), "body[0].writes[1]", "a scale per data element"),
    (_with(QUANTIZE, writes=[{"tensor": "w", "pattern": [[1, 2]]}, {"tensor": "sc"}]), "body[0].writes[0]",
     "packed data of a [32, 16] source is 512 bytes"),
    (_with(MATMUL, stationary_scale_start=10**6), "body[0].attrs.stationary_scale_start", "scale rows 1000000"),
    (_with(MATMUL, moving_scale_start=-1), "body[0].attrs.moving_scale_start", "moving_scale_start -1"),
])
def test_mx_ops_that_cannot_be_computed_are_located(tmp_path: Path, instruction: dict, where: str, words: str) -> None:
    _refused(["simulate", _mx(tmp_path, instruction)], where, words)


@pytest.mark.parametrize("pattern, words", [
    ([[0, 1]] * 40, "40 [stride, count] pairs: at most 32"),
    ([[0, 2**31], [0, 2**31]], "the pattern walks 4,611,686,018,427,387,904 elements"),
])
def test_patterns_beyond_any_value_view_are_located(tmp_path: Path, pattern: list, words: str) -> None:
    doc = copy.deepcopy(VALID)
    doc["body"][0]["body"][1]["reads"][0]["pattern"] = pattern
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    for command in ("check", "simulate"):
        _refused([command, str(path)], "body[0].body[1].reads[0].pattern", words)


def test_an_archive_member_that_is_no_array_is_located(tmp_path: Path) -> None:
    program = tmp_path / "p.json"
    program.write_text(json.dumps(VALID))
    archive = tmp_path / "in.npz"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("x.npy", b"not the .npy magic at all")
    _refused(["simulate", str(program), "--inputs", str(archive)], "--inputs", "x: not an .npy array")


def test_a_complex_array_is_refused_not_cast(tmp_path: Path) -> None:
    program = tmp_path / "p.json"
    program.write_text(json.dumps(VALID))
    archive = tmp_path / "in.npz"
    np.savez(archive, x=np.ones((128, 16), np.complex64))  # numpy would drop the imaginary parts, warning
    _refused(["simulate", str(program), "--inputs", str(archive)], "--inputs",
             "x: an array of complex64 in the archive; tensors hold real numbers")


def test_an_array_header_claiming_more_than_the_archive_holds_is_located(tmp_path: Path) -> None:
    import io

    program = tmp_path / "p.json"
    program.write_text(json.dumps(VALID))
    member = io.BytesIO()
    np.lib.format.write_array_header_1_0(member, {"descr": "<f4", "fortran_order": False, "shape": (10**11,)})
    member.write(b"\0" * 16)
    archive = tmp_path / "in.npz"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("x.npy", member.getvalue())
    _refused(["simulate", str(program), "--inputs", str(archive)], "--inputs",
             "x: its header says (100000000000,) float32 (400,000,000,000 bytes)", seconds=10.0)


@pytest.mark.parametrize("command", [
    lambda p, i: ["report", p, "-o", p],
    lambda p, i: ["simulate", p, "--trace", p],
    lambda p, i: ["simulate", p, "--inputs", i, "--outputs", i],
    lambda p, i: ["compile", p, "-o", str(Path(p).parent / "." / Path(p).name)],
])
def test_an_output_that_is_an_input_is_refused_and_the_input_kept(tmp_path: Path, command) -> None:
    program = tmp_path / "p.json"
    program.write_text(json.dumps(VALID))
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.ones((128, 16), np.float32))
    before = program.read_bytes(), inputs.read_bytes()
    _refused(command(str(program), str(inputs)), "which this command reads")
    assert (program.read_bytes(), inputs.read_bytes()) == before


KERNEL = '''\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


class Stop(BaseException):
    pass


class Mute(Exception):
    def __str__(self):
        raise RuntimeError("no message")


@nki.jit
def raises_base(x):
    raise Stop("done here")


@nki.jit
def raises_mute(x):
    raise Mute()


@nki.jit
def copy(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(x))
    return out
'''


def _kernel_file(tmp_path: Path, name: str, source: str, out: str = "traced.json",
                 x: np.ndarray | None = None) -> tuple[str, str, str]:
    """``(kernel file, inputs archive of x, output path)`` of ``source`` written to ``name``."""
    path = tmp_path / name
    path.write_text(source)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.ones((128, 16), np.float32) if x is None else x)
    return str(path), str(inputs), str(tmp_path / out)


@pytest.fixture
def kernel(tmp_path: Path) -> tuple[str, str, str]:
    return _kernel_file(tmp_path, "k.py", KERNEL)


@pytest.mark.parametrize("func, line, words", [
    ("raises_base", 16, "Stop: done here"),
    ("raises_mute", 21, "Mute: (its message could not be made: __str__ raised RuntimeError)"),
])
def test_a_kernel_exception_of_any_kind_is_its_located_error(kernel, func: str, line: int, words: str) -> None:
    path, inputs, out = kernel
    _refused(["nki", f"{path}::{func}", "--inputs", inputs, "-o", out], f"k.py:{line}: {words}")
    assert not Path(out).exists()


def test_the_kernel_file_is_no_output(kernel) -> None:
    path, inputs, _out = kernel
    before = Path(path).read_text()
    _refused(["nki", f"{path}::copy", "--inputs", inputs, "-o", path], "which this command reads")
    assert Path(path).read_text() == before


def test_a_grid_past_the_instance_limit_is_refused_up_front(kernel) -> None:
    # before any program is traced (it was refused after one instance, 27-44 s on a loaded
    # machine for 1e8 x 1e8, the progress line naming a line of neuronsim's own)
    path, inputs, out = kernel
    _refused(["nki", f"{path}::copy", "--inputs", inputs, "-o", out, "--grid", "100000x100000"],
             "--grid", "10,000,000,000 programs", "--max-instances", seconds=5.0)


# -- the kernel author's own code (the NKI sweep) ----------------------------------------------------
KERNEL_MORE = '''\
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def closes_generator(x):
    raise GeneratorExit("x")


@nki.jit
def axis_out_of_range(x):
    out = nl.ndarray((128, 1), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.sum(nl.load(x), axis=5, keepdims=True))
    return out


@nki.jit
def step_zero(x):
    for i in nl.affine_range(0, 4, 0):
        nl.store(x, value=nl.load(x))


@nki.jit
def ten_billion_empty_iterations(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.static_range(10**10):
        pass
    nl.store(out, value=nl.load(x))
    return out


@nki.jit
def numpy_sum_of_a_tile(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=t * np.sum(t))
    return out


@nki.jit
def numpy_scalar_times_a_tile(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=np.float32(2.0) * t - np.float64(1.0))
    return out


@nki.jit
def prints(x):
    print("tracing", x.shape)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(x))
    return out


@nki.jit
def huge_kept_loop(x):
    for i in nl.sequential_range(10**12):
        nl.store(x, value=nl.load(x))


def reference_exits(x):
    import sys
    sys.exit(0)


class Stop(BaseException):
    pass


def reference_stops(x):
    raise Stop("stopped")


def reference_prints(x):
    print("a line of the reference's")
    return 2 * x - 1
'''


@pytest.fixture
def more(tmp_path: Path) -> tuple[str, str, str]:
    return _kernel_file(tmp_path, "m.py", KERNEL_MORE, out="out")


def _line(needle: str) -> int:
    return next(n for n, text in enumerate(KERNEL_MORE.splitlines(), 1) if needle in text)


@pytest.mark.parametrize("func, needle, words", [
    ("closes_generator", 'raise GeneratorExit("x")', "GeneratorExit: x"),
    ("axis_out_of_range", "axis=5", "axis 5: a 2-D tile has axes 0..1 (or -2..-1)"),
    ("step_zero", "nl.affine_range(0, 4, 0)", "affine_range with step 0: a loop that never ends"),
    ("ten_billion_empty_iterations", "nl.static_range(10**10)", "more than 5,000,000 instructions"),
    ("numpy_sum_of_a_tile", "np.sum(t)", "numpy's add.reduce of t_"),
])
def test_a_kernel_mistake_is_located_at_its_line(more, func: str, needle: str, words: str) -> None:
    path, inputs, out = more
    _refused(["run", f"{path}::{func}", "--inputs", inputs, "--out", out], f"m.py:{_line(needle)}: ", words,
             seconds=20.0)


def test_a_numpy_scalar_on_the_left_of_a_tile_computes(more) -> None:
    path, inputs, out = more
    result = CliRunner().invoke(cli, ["run", f"{path}::numpy_scalar_times_a_tile", "--inputs", inputs, "--out", out,
                                      "--reference", f"{path}:reference_prints"])
    assert result.exit_code == 0, (result.output, result.exception)


@pytest.mark.parametrize("reference, words", [
    ("reference_exits", "the reference reference_exits exits (sys.exit(0))"),
    ("reference_stops", "the reference reference_stops raised Stop: stopped"),
])
def test_a_reference_that_exits_or_stops_is_located(more, reference: str, words: str) -> None:
    path, inputs, out = more
    needle = "sys.exit(0)" if reference == "reference_exits" else 'raise Stop("stopped")'
    _refused(["run", f"{path}::prints", "--inputs", inputs, "--out", out, "--reference", f"{path}:{reference}"],
             f"m.py:{_line(needle)}: ", words)


def test_prints_of_the_kernel_and_reference_leave_the_json_whole(more) -> None:
    path, inputs, out = more
    result = CliRunner().invoke(cli, ["run", f"{path}::prints", "--inputs", inputs, "--out", out, "--json",
                                      "--reference", f"{path}:reference_prints"])
    doc = json.loads(result.stdout)  # one JSON document: the prints went to standard error
    assert doc["format"] == "neuronsim.run/1" and "tracing" in result.stderr and "reference's" in result.stderr


def test_a_kept_loop_past_the_limit_is_refused_before_the_findings(more) -> None:
    path, inputs, out = more
    _refused(["run", f"{path}::huge_kept_loop", "--inputs", inputs, "--out", out, "--max-instances", "1000"],
             "--max-instances", "2,000,000,000,000 instances", seconds=20.0)


ARGUMENTS = '''\
import copy

import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def dtype_named_wrong(x):
    t = nl.ndarray((128, 16), dtype="bfloat", buffer=nl.sbuf)
    nl.store(x, value=t)


@nki.jit
def dtype_complex(x):
    nl.store(x, value=nl.load(x, dtype=np.complex64))


@nki.jit
def program_id_of_a_string(x):
    nl.store(x, value=nl.load(x) * nl.program_id("a"))


@nki.jit
def axis_a_float(x):
    nl.store(x[:, 0:1], value=nl.sum(nl.load(x), axis=1.0, keepdims=True))


@nki.jit
def shape_of_no_dimension(x):
    t = nl.ndarray((), dtype=x.dtype, buffer=nl.sbuf)
    nl.store(x, value=t)


@nki.jit
def pattern_of_a_string(x):
    nl.store(x, value=nl.load(x.ap(pattern="abc")))


@nki.jit
def pattern_stepping_back(x):
    nl.store(x, value=nl.load(x.ap(pattern=[[16, 128], [-1, 16]], offset=15)))


@nki.jit
def reshape_to_letters(x):
    nl.store(x, value=nl.load(x.reshape(("a",))))


@nki.jit
def name_a_number(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm, name=42)
    nl.store(out, value=nl.load(x))
    return out


@nki.jit
def load_a_numpy_array(x):
    nl.store(x, value=nl.load(np.ones((128, 16), np.float32)))


@nki.jit
def copied_tile(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=copy.copy(nl.load(x)))
    return out
'''


@pytest.mark.parametrize("func, needle, words", [
    ("dtype_named_wrong", 'dtype="bfloat"', "dtype 'bfloat' is not supported"),
    ("dtype_complex", "np.complex64", "dtype complex64 is not supported"),
    ("program_id_of_a_string", 'program_id("a")', "nl.program_id(str 'a'): the axis is an integer"),
    ("axis_a_float", "axis=1.0", "axis=float 1.0: an axis is an integer"),
    ("shape_of_no_dimension", "nl.ndarray((),", "a tensor of shape (): a tensor has one dimension at least"),
    ("pattern_of_a_string", 'pattern="abc"', "pattern=str 'abc': an access pattern is a list of [step, count]"),
    ("pattern_stepping_back", "[-1, 16]", "a negative step in an access pattern is not supported"),
    ("reshape_to_letters", '("a",)', "reshape to ('a',): a shape is a tuple of integers"),
    ("name_a_number", "name=42", "nl.ndarray: name=int 42; a tensor's name is a string"),
    ("load_a_numpy_array", "nl.load(np.ones", "nl.load of ndarray: it loads a tensor in HBM"),
])
def test_a_bad_argument_to_an_nki_call_is_the_kernels_error(tmp_path: Path, func: str, needle: str,
                                                            words: str) -> None:
    line = next(n for n, text in enumerate(ARGUMENTS.splitlines(), 1) if needle in text)
    path, inputs, out = _kernel_file(tmp_path, "a.py", ARGUMENTS, out="out")
    _refused(["run", f"{path}::{func}", "--inputs", inputs, "--out", out], f"a.py:{line}: {words}")


def test_a_python_copy_of_a_tile_is_the_tile(tmp_path: Path) -> None:
    path, inputs, out = _kernel_file(tmp_path, "a.py", ARGUMENTS, out="out",
                                     x=np.arange(128 * 16, dtype=np.float32).reshape(128, 16))
    result = CliRunner().invoke(cli, ["run", f"{path}::copied_tile", "--inputs", inputs, "--out", out])
    assert result.exit_code == 0, (result.output, result.exception)


def test_a_grid_dimension_past_2_31_is_refused(kernel) -> None:
    path, inputs, out = kernel
    _refused(["nki", f"{path}::copy", "--inputs", inputs, "-o", out, "--grid", "99999999999999999999"],
             "--grid", "each dimension is an integer from 1 below 2**31")


NAMED_TWICE = '''\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def two_outputs_one_name(x):
    a = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm, name="dup")
    b = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm, name="dup")
    nl.store(a, value=nl.load(x))
    nl.store(b, value=nl.load(x))
    return a, b
'''


def test_two_returned_tensors_of_one_name_are_refused_at_the_return(tmp_path: Path) -> None:
    path, inputs, out = _kernel_file(tmp_path, "n.py", NAMED_TWICE)
    _refused(["nki", f"{path}::two_outputs_one_name", "--inputs", inputs, "-o", out],
             "n.py:11: two returned tensors are named 'dup'")
    assert not Path(out).exists()
