"""Values the NKI pages state and the simulator computed otherwise, silently (a probe of
generated kernels against the pages' words, each a kernel of its own here):

* ``nl.right_shift`` is a logical shift ("Logical Shift Right | nki.language.right_shift";
  "Arithmetic Shift Right: Not supported"): int32 -1 >> 4 came out -1;
* ``nisa.iota`` computes "in 32-bit integer arithmetic": past 2**31 - 1 it wraps (it saturated);
* the type promotion table's new widened types (int8 + uint8 -> int16, int32 - uint32 ->
  float32, two fp8 formats -> bfloat16): each took the first operand's;
* legacy ``nisa.tensor_tensor``'s integer add / subtract / multiply run on GpSimd in native
  integer arithmetic (they went through fp32), and so do the ``nl.*`` operators of two int32
  tiles, which lower to it;
* legacy ``nl.softmax``'s ``dtype`` / ``compute_dtype`` set its internal compute dtype too;
* ``nisa.activation`` given inputs outside its function's Valid Input Range ("the Scalar Engine
  will generate invalid output results"; ``sin(9.0)`` is ~27.65 on the device) ran exact with
  no word: a ``range`` warning names the call's line now.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from neuronsim.machine.nki.dtypes import promote
from neuronsim.verify.nki.run import run_kernel

CURRENT = "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n@nki.jit\n"
LEGACY = ("import neuronxcc.nki as nki\nimport neuronxcc.nki.isa as nisa\nimport neuronxcc.nki.language as nl\n\n\n"
          "@nki.jit\n")


def _run(tmp_path, header: str, body: str, *arrays):
    params = ", ".join("abcd"[:len(arrays)])
    (tmp_path / "k.py").write_text(f"{header}def kernel({params}):\n{body}")
    result, report = run_kernel(f"{tmp_path / 'k.py'}::kernel", *arrays, seeds=(None,))
    assert not report.run.problems(), report.run.problems()[:3]
    return result


def test_right_shift_is_logical_on_the_32_bit_pattern(tmp_path):
    a = np.array([[-1, -256, 2**31 - 1, 12345]] * 4, dtype=np.int32)
    b = np.full_like(a, 4)
    body = ("    out = nl.ndarray(a.shape, dtype=nl.int32, buffer=nl.shared_hbm)\n"
            "    nl.store(out, nl.right_shift(nl.load(a), nl.load(b)))\n    return out\n")
    out = _run(tmp_path, CURRENT, body, a, b)
    np.testing.assert_array_equal(out, (a.view(np.uint32) >> 4).view(np.int32))
    assert out[0, 0] == 0x0FFFFFFF


def test_iota_wraps_as_32_bit_integers(tmp_path):
    body = ("    out = nl.ndarray((1, 4), dtype=nl.int32, buffer=nl.shared_hbm)\n"
            "    u = nl.ndarray((1, 4), dtype=nl.int32, buffer=nl.sbuf)\n"
            "    nisa.iota(dst=u, pattern=[[1, 4]], offset=2147483646, channel_multiplier=0)\n"
            "    nl.store(out, u)\n    return out\n")
    out = _run(tmp_path, CURRENT, body)
    assert out.tolist() == [[2147483646, 2147483647, -2147483648, -2147483647]]


@pytest.mark.parametrize("pair, widened", [
    (("int8", "uint8"), "int16"), (("int8", "uint16"), "int32"), (("int32", "uint32"), "float32"),
    (("int16", "int32"), "int32"), (("uint16", "int32"), "int32"), (("uint8", "uint16"), "uint16"),
    (("float8_e4m3", "float8_e5m2"), "bfloat16"), (("float8_e4m3", "bfloat16"), "bfloat16"),
    (("float16", "bfloat16"), "float32"), (("int32", "float16"), "float16")])
def test_promotion_follows_the_table_of_the_pages(pair, widened):
    assert promote(*pair) == widened and promote(*reversed(pair)) == widened


def test_int8_plus_uint8_is_computed_in_the_widened_type(tmp_path):
    a = np.full((4, 8), 100, dtype=np.int8)
    b = np.full((4, 8), 200, dtype=np.uint8)
    body = ("    out = nl.ndarray(a.shape, dtype=nl.int32, buffer=nl.shared_hbm)\n"
            "    nl.store(out, nl.copy(nl.add(nl.load(a), nl.load(b)), dtype=nl.int32))\n    return out\n")
    assert (_run(tmp_path, LEGACY, body, a, b) == 300).all()  # int8 kept 127


def test_two_fp8_formats_add_in_bfloat16(tmp_path):
    e = np.full((4, 8), 1.125, dtype=np.float32)
    f = np.ones((4, 8), dtype=np.float32)
    body = ("    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)\n"
            "    x = nl.copy(nl.load(a), dtype=nl.float8_e4m3)\n    y = nl.copy(nl.load(b), dtype=nl.float8_e5m2)\n"
            "    nl.store(out, nl.copy(nl.add(x, y), dtype=nl.float32))\n    return out\n")
    assert (_run(tmp_path, LEGACY, body, e, f) == 2.125).all()  # fp8 e4m3 rounded it to 2


@pytest.mark.parametrize("header, call", [
    (LEGACY, "nisa.tensor_tensor(nl.load(a), nl.load(b), op=nl.add)"),
    (LEGACY, "nl.add(nl.load(a), nl.load(b))"),
    (CURRENT, "nl.add(nl.load(a), nl.load(b))"),
    (CURRENT, "nl.maximum(nl.load(a), nl.load(b))")], ids=["legacy-isa", "legacy-nl", "nl-add", "nl-maximum"])
def test_two_int32_tiles_add_exactly_in_native_integers(tmp_path, header, call):
    a = np.full((4, 8), 16777217, dtype=np.int32)
    b = np.ones((4, 8), dtype=np.int32)
    body = (f"    out = nl.ndarray(a.shape, dtype=nl.int32, buffer=nl.shared_hbm)\n"
            f"    nl.store(out, {call})\n    return out\n")
    expected = np.maximum(a, b) if "maximum" in call else a + b
    np.testing.assert_array_equal(_run(tmp_path, header, body, a, b), expected)  # through fp32: 16777216 (+ 0 / + 2)


@pytest.mark.parametrize("keyword", ["dtype", "compute_dtype"])
def test_legacy_softmax_computes_in_the_dtype_it_is_given(tmp_path, keyword):
    a = np.random.default_rng(21).standard_normal((8, 64)).astype(np.float32) * 4
    body = ("    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)\n"
            f"    nl.store(out, nl.softmax(nl.load(a, dtype=nl.bfloat16), axis=1, {keyword}=nl.float32))\n"
            "    return out\n")
    x = a.astype(ml_dtypes.bfloat16).astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(_run(tmp_path, LEGACY, body, a), e / e.sum(axis=1, keepdims=True), rtol=2e-5, atol=1e-6)


RANGE_BODY = ("    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)\n"
              "    u = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)\n"
              "    t = nl.load(a)\n    CALL\n    nl.store(out, u)\n    return out\n")


@pytest.mark.parametrize("call, values, warned", [
    ("nisa.activation(dst=u, op=nl.sin, data=t)", [0.5, 9.0, -4.0, 1.0], (2, "9")),
    ("nisa.activation(dst=u, op=nl.sin, data=t, scale=0.25)", [0.5, 9.0, -4.0, 1.0], None),  # scaled inside
    ("nisa.activation(dst=u, op=nl.log, data=t)", [1.0, 0.0, 2.0, 3.0], (1, "0")),
    ("nisa.activation(dst=u, op=nl.reciprocal, data=t)", [1.0, -2.0, 0.5, 4.0], None),
    ("u[...] = nl.sin(t)", [0.5, 9.0, -4.0, 1.0], None)])  # nl.sin reduces its argument (its page)
def test_an_activation_given_inputs_outside_its_valid_range_is_a_warning_at_its_line(tmp_path, call, values, warned):
    a = np.array([values] * 4, dtype=np.float32)
    (tmp_path / "k.py").write_text(f"{CURRENT}def kernel(a):\n{RANGE_BODY.replace('CALL', call)}")
    _out, report = run_kernel(f"{tmp_path / 'k.py'}::kernel", a, seeds=(None,))
    ranges = [f for f in report.findings if f.kind == "range"]
    assert report.ok  # a warning: the simulated values are the exact function's
    if warned is None:
        assert ranges == []
    else:
        (finding,) = ranges
        count, first = warned
        assert finding.severity == "warning" and "k.py:11" in finding.first
        assert f"given {count * 4} input(s) outside" in finding.note and f"(the first {first};" in finding.note
