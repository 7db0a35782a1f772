"""Input values a tensor's dtype cannot hold are refused in one line naming the first one
(probe_r F4): numpy's casts wrapped them (668.4 read as int8 was -100, 2**40 + 5 as int32 was
5) or gave its undefined value (NaN as int32 was INT_MIN), a run on values nobody gave.  Three
doors: ``--dtype NAME=DTYPE`` converting a typed array, ``simulate --inputs`` into a tensor of
another dtype, and a kernel's float64 argument (held as float32)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from neuronsim.machine.ir.dtypes import not_held
from neuronsim_tests.bad_inputs import COPY_KERNEL, VALID
from neuronsim_tests.bad_inputs import refused_in_one_line as _refused


@pytest.mark.parametrize("values, dtype, words", [
    ([1.0, 668.4], "int8", "[1] = 668.4 is outside int8 (-128 to 127)"),
    ([0.5], "int32", "[0] = 0.5 is not an integer (int32)"),
    ([float("nan")], "uint8", "[0] = nan has no uint8 value"),
    ([1e39], "float32", "[0] = 1e+39 is beyond float32 (it would be inf)"),
    ([1000.0], "float8_e4m3fn", "is beyond float8_e4m3fn (it would be nan)"),
])
def test_the_first_value_a_dtype_cannot_hold_is_named(values, dtype, words):
    assert words in not_held(np.array(values), dtype)


@pytest.mark.parametrize("values, dtype", [
    ([1.0, -128.0, 127.0], "int8"), ([0.1, 1e30], "bfloat16"), ([float("nan"), float("inf")], "float16"),
    ([2 ** 31 - 1], "int32"), ([True, False], "uint8")])
def test_values_a_dtype_holds_pass_rounding_included(values, dtype):
    assert not_held(np.array(values), dtype) is None


def test_dtype_converting_a_typed_array_refuses_a_value_it_would_change(tmp_path: Path):
    (tmp_path / "k.py").write_text(COPY_KERNEL)
    np.savez(tmp_path / "f.npz", x=np.array([[668.4, 1.0]], np.float32))
    np.savez(tmp_path / "i.npz", x=np.array([[2 ** 40 + 5, 1]], np.int64))
    _refused(["nki", f"{tmp_path}/k.py::cp", "--inputs", str(tmp_path / "f.npz"), "--dtype", "x=int8",
              "-o", str(tmp_path / "o.json")], "--dtype: x[0, 0] = 668.4 is outside int8")
    _refused(["nki", f"{tmp_path}/k.py::cp", "--inputs", str(tmp_path / "i.npz"), "--dtype", "x=int32",
              "-o", str(tmp_path / "o.json")], "--dtype: x[0, 0] = 1099511627781 is outside int32")
    assert not (tmp_path / "o.json").exists()


def test_simulate_inputs_into_an_integer_tensor_refuse_nan_and_values_beyond_it(tmp_path: Path):
    doc = json.loads(json.dumps(VALID))
    for tensor in doc["tensors"].values():
        tensor["dtype"] = "int32"
    program = tmp_path / "p.json"
    program.write_text(json.dumps(doc))
    for name, value, words in (("big", 2 ** 40 + 5, "x[0, 0] = 1099511627781 is outside int32"),
                               ("nan", float("nan"), "x[0, 0] = nan has no int32 value")):
        x = np.zeros((128, 16), np.float64 if name == "nan" else np.int64)
        x[0, 0] = value
        np.savez(tmp_path / f"{name}.npz", x=x)
        _refused(["simulate", str(program), "--inputs", str(tmp_path / f"{name}.npz"), "--outputs",
                  str(tmp_path / "o.npz")], "inputs.x:", words)
    assert not (tmp_path / "o.npz").exists()


def test_a_float64_argument_beyond_float32_is_refused_at_the_kernel(tmp_path: Path):
    (tmp_path / "k.py").write_text(COPY_KERNEL)
    np.savez(tmp_path / "d.npz", x=np.array([[1.0, 1e39]]))
    np.savez(tmp_path / "ok.npz", x=np.array([[1.0, 1e30]]))
    line = _refused(["nki", f"{tmp_path}/k.py::cp", "--inputs", str(tmp_path / "d.npz"), "-o",
                     str(tmp_path / "o.json")],
                    "k.py:", "argument x: x[0, 1] = 1e+39 is beyond float32 (it would be inf), which float64 holds")
    assert line.count("argument x:") == 1, line  # (it was said twice: probe_bad M-F10)
    _refused(["nki", f"{tmp_path}/k.py::cp", "--inputs", str(tmp_path / "ok.npz"), "--dtype", "x=bfloat16",
              "--dtype", "x=float16", "-o", str(tmp_path / "o.json")], "--dtype: x is given twice")
    from click.testing import CliRunner

    from neuronsim.verify.cli import cli

    result = CliRunner().invoke(cli, ["nki", f"{tmp_path}/k.py::cp", "--inputs", str(tmp_path / "ok.npz"),
                                      "-o", str(tmp_path / "o.json")])
    assert result.exit_code == 0, result.output
