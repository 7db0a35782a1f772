"""NKI 0.6 / 0.7 compiled control flow and device scalars (tests/nki/kernels/current_control.py):
outputs against numpy, the program's shape (a kept loop, the decisions taken on the inputs) and
the findings at the kernel line, planted mistakes found."""

from __future__ import annotations

import numpy as np
import pytest

import neuronsim.verify.nki  # noqa: F401  (registers the device-value reader)
from neuronsim.machine.ir.program import Loop
from neuronsim.machine.nki import NkiError, load_kernel, trace
from neuronsim.verify.nki.findings import nki_findings
from neuronsim_tests.nki_kernels import f32, kernel, run

FILE = "tests/nki/kernels/current_control.py"


def _line(text: str, after: str = "") -> int:
    """The first line of the kernel file holding ``text`` (below the first holding ``after``)."""
    with open(FILE) as source:
        lines = list(enumerate(source, 1))
    start = next(n for n, line in lines if after in line) if after else 0
    return next(n for n, line in lines if n > start and text in line)


def _loops(traced) -> list[tuple[str, int]]:
    return [(node.name, node.trip_count) for node, _ in traced.program.walk() if isinstance(node, Loop)]


def _decisions(traced) -> list[tuple[int, str, int]]:
    return [(d["line"], d["what"], d["value"]) for d in traced.program.extras.get("x-nki-decisions", ())]


def test_fori_loop_with_static_bounds_is_one_kept_loop():
    x = f32(384, 64)
    traced = trace(kernel("current_control.py::rows_plus_one"), x)
    assert _loops(traced) == [("i", 3)] and _decisions(traced) == []
    np.testing.assert_allclose(run(kernel("current_control.py::rows_plus_one"), x, seeds=(None, 1))["return0"], x + 1)


def test_fori_loop_bound_read_on_the_device_is_a_recorded_decision():
    x = f32(384, 64)
    for n in (1, 2):
        k = kernel("current_control.py::first_n_rows_doubled")
        traced = trace(k, x, np.array([[n]], np.int32))
        assert _loops(traced) == [("i", n)]
        assert _decisions(traced) == [(_line("nl.fori_loop(0, trips, body)"), "nl.fori_loop upper bound", n)]
        expected = np.zeros_like(x)
        expected[:n * 128] = 2 * x[:n * 128]
        np.testing.assert_allclose(run(k, x, np.array([[n]], np.int32))["return0"], expected)


def test_while_loop_runs_as_many_iterations_as_the_inputs_make():
    k = kernel("current_control.py::count_down")
    for count in (0, 3):
        args = (np.array([[1.5]], np.float32), np.array([[count]], np.int32))
        traced = trace(k, *args)
        assert _decisions(traced) == [(_line("nl.while_loop(reg, body)"), "nl.while_loop iterations", count)]
        np.testing.assert_allclose(run(k, *args)["return0"], [[1.5 * count]])


def test_if_else_takes_the_branch_the_loaded_scalar_selects():
    k = kernel("current_control.py::shift_if_flagged")
    data = f32(4, 8)
    for flag, branch, shift in ((1, "then", 10.0), (-3, "else", -10.0)):
        args = (np.array([[flag]], np.int32), data)
        traced = trace(k, *args)
        assert _decisions(traced) == [(_line("nl.if_else("), f"nl.if_else took the {branch} branch", int(flag > 0))]
        np.testing.assert_allclose(run(k, *args)["return0"], data + shift, rtol=1e-6)


def test_dynamic_range_with_a_scalar_offset_tile_unrolls_and_reads_each_offset():
    x = f32(384, 32)
    k = kernel("current_control.py::tiles_from_offset")
    traced = trace(k, x, np.array([[2]], np.int32))
    assert _loops(traced) == []  # an offset read in the body differs per iteration: unrolled
    offsets = [value for _line_, what, value in _decisions(traced) if what.startswith("scalar_offset")]
    assert offsets == [0, 0, 128, 128]  # load and store of each iteration
    out = run(k, x, np.array([[2]], np.int32))["return0"]
    np.testing.assert_allclose(out[:256], 3 * x[:256], rtol=1e-6)
    said = [message for _where, kind, message in traced.call_warnings if kind == "generation"]
    assert said and "removed in NKI 0.7" in said[0] and "nl.fori_loop" in said[0]  # (it runs, as on 0.6)


def test_python_state_carried_through_a_compiled_loop_is_found_at_its_line():
    x = f32(384, 64)
    planted = nki_findings(trace(kernel("current_control.py::python_running_sum"), x).program)
    assert [f.kind for f in planted] == ["loop-state"]
    assert planted[0].first == f"{FILE}:{_line('        total = summed')}"
    assert planted[0].loop == f"{FILE}:{_line('nl.fori_loop(', after='def python_running_sum')}"
    fixed = kernel("current_control.py::sbuf_running_sum")
    assert nki_findings(trace(fixed, x).program) == []
    np.testing.assert_allclose(run(fixed, x)["return0"], x.reshape(3, 128, 64).sum(0), rtol=1e-5)


def test_psum_accumulated_before_anything_wrote_it_is_found():
    found = nki_findings(trace(kernel("current_control.py::psum_never_zeroed"), f32(128, 64), f32(128, 128)).program)
    assert [f.kind for f in found] == ["psum-uninitialised"]
    assert f"{FILE}:{_line('accumulate=True)')}" in found[0].first


def test_psum_accumulated_onto_an_overlapping_group_is_found():
    found = nki_findings(trace(kernel("current_control.py::psum_overlapping_groups"), f32(128, 64),
                               f32(128, 128)).program)
    assert [f.kind for f in found] == ["psum-overlap"]
    assert f"{FILE}:{_line('ps[:, 64:192]')}" in found[0].first


def test_a_correct_accumulation_group_is_no_finding():
    # the current matmul kernel opens its group with accumulate=False and adds with True
    traced = trace(kernel("current_matmul.py::matmul_then_transpose"), f32(384, 64), f32(384, 128))
    assert [f for f in nki_findings(traced.program) if f.kind.startswith("psum")] == []


def test_psum_restarted_in_every_compiled_iteration_is_a_warning_at_its_line():
    """A matmul with ``accumulate=None`` in a compiled loop's body, into a PSUM tile declared
    before the loop and read only after it, starts its group in every iteration (the body is
    traced once): the run computes the last step's product, and the warning says why at the
    matmul's line.  Carrying the sum in SBUF, read in the body, is no finding and is right."""
    lhsT, rhs = f32(384, 64), f32(384, 128)
    planted = kernel("current_control.py::psum_restarted_each_iteration")
    found = [f for f in nki_findings(trace(planted, lhsT, rhs).program) if f.kind == "psum-restarted"]
    assert len(found) == 1 and found[0].severity == "warning"
    assert found[0].first == f"nisa.nc_matmul at {FILE}:{_line('lambda acc, a, b: nisa.nc_matmul')}"
    assert "declared before the compiled loop" in found[0].describe()
    np.testing.assert_allclose(run(planted, lhsT, rhs)["return0"], lhsT[256:].T @ rhs[256:], rtol=1e-4)
    fixed = kernel("current_control.py::psum_used_each_iteration")
    assert [f for f in nki_findings(trace(fixed, lhsT, rhs).program) if f.kind.startswith("psum")] == []
    np.testing.assert_allclose(run(fixed, lhsT, rhs)["return0"], lhsT.T @ rhs, rtol=1e-4, atol=1e-4)


def _toward_zero(a: int, b: int) -> tuple[int, int]:
    quotient = int(a / b)  # exact for these small values
    return quotient, a - quotient * b


def test_scalar_division_rounds_toward_zero_as_the_device_does():
    """The scalar_alu page: divide rounds toward zero, fmod keeps the dividend's sign (-17 by 4 is
    -4, remainder -1), and the Python operators are that API: // and % are not Python's floor."""
    k = kernel("current_control.py::scalar_results")
    for a, b in ((-17, 4), (17, -4), (17, 4), (-17, -4), (2**16, 3)):
        quotient, remainder = _toward_zero(a, b)
        expected = [quotient, remainder, quotient, remainder, max(a, b), min(a, 3), 10 * (a < b) + (a > b),
                    _toward_zero(100, b)[0], (a * a + 2**31) % 2**32 - 2**31]
        got = run(k, np.array([[a, b]], np.int32))["return0"]
        assert got.tolist() == [expected], (a, b)


def test_scalar_alu_of_two_ints_is_computed_at_trace_time_and_its_mistakes_are_named():
    from neuronsim.machine.nki import errors, scalars

    k = kernel("current_control.py::scalar_alu_mistake")
    vals = np.array([[7, 0]], np.int32)
    np.testing.assert_array_equal(run(k, vals, which=0)["return0"], vals)  # the int results asserted inside
    for which, words in ((1, "an NkiScalar or an int"), (2, "not one of its operations"), (3, "divided by zero")):
        try:
            trace(k, vals, which=which)
        except errors.NkiError as err:
            assert words in str(err) and f"current_control.py:{_line(f'which == {which}:') + 1}" in str(err), err
        else:
            raise AssertionError(f"mistake {which} traced")
    wide, narrow = scalars.NkiScalar(5, "int64"), scalars.NkiScalar(5, "int32")
    assert (wide * 3).value == 15 and (wide + wide).value == 10
    for bad_op in (lambda: wide // 2, lambda: wide < 3, lambda: wide + narrow):
        try:
            bad_op()
        except errors.NkiError:
            continue
        raise AssertionError("a 64-bit scalar took an operation its page rejects")


def test_fori_loop_unrolled_with_a_device_bound_is_refused_at_its_line():
    k = kernel("current_control.py::unrolled_device_bound")
    try:
        trace(k, f32(128, 8), np.array([[2]], np.int32))
    except Exception as err:  # noqa: BLE001 - the kernel's mistake, one located line
        assert f"current_control.py:{_line('nl.fori_loop(0, nisa.scalar_load(n_sb)')}" in str(err)
        assert "unroll=True" in str(err)
    else:
        raise AssertionError("fori_loop(unroll=True) over a device bound traced")


def test_each_device_read_validates_what_was_traced_since_the_last_one(monkeypatch):
    """A read of a device value runs the program traced so far; it validated all of it at every
    read, quadratic in a kernel that reads in every step (nki-library's cross-entropy: 85 % of
    its trace).  Each instruction is checked about once now, and the values are the same."""
    import neuronsim.machine.formats.validate as validate

    checked = []
    real = validate.check_instruction
    monkeypatch.setattr(validate, "check_instruction", lambda inst, *a, **kw: (checked.append(inst.name),
                                                                                real(inst, *a, **kw))[1])
    k = kernel("current_control.py::running_reads")
    vals = np.arange(1, 61, dtype=np.int32).reshape(1, 60)
    traced = trace(k, vals, reads=60)
    instructions = sum(1 for _ in traced.program.instructions())
    assert instructions >= 120 and len(checked) <= 3 * instructions, (len(checked), instructions)
    np.testing.assert_array_equal(run(k, vals, reads=60)["return0"], 2 * vals)


def test_a_while_loop_moving_away_from_zero_is_stopped_at_its_line():
    """count_down from -2 never reaches zero: it traced for minutes (each condition read runs the
    program so far), now one line once the condition has grown 1,024 iterations in a row."""
    with pytest.raises(NkiError) as caught:
        trace(kernel("current_control.py::count_down"), np.array([[1.5]], np.float32), np.array([[-2]], np.int32))
    text = str(caught.value)
    assert f"current_control.py:{_line('nl.while_loop(reg, body)')}: " in text, text
    assert "moved away from zero in each of the last 1024 iterations (now -1026)" in text


def test_a_dynamic_range_of_step_zero_is_refused_with_its_page(tmp_path):
    (tmp_path / "d.py").write_text("import nki\nimport nki.language as nl\n\n\n@nki.jit\ndef k(x):\n"
                                   "    for _ in nl.dynamic_range(0, 4, 0):\n        pass\n    return x\n")
    with pytest.raises(NkiError) as caught:
        trace(load_kernel(f"{tmp_path / 'd.py'}::k"), np.zeros((2, 2), np.float32))
    assert str(caught.value).startswith('d.py:7: nl.dynamic_range: step=0; its page: "step - Must be a '
                                        'compile-time positive int"'), caught.value


HBM_SCALARS = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def through_hbm(n):
    """scalar_load straight from the HBM input; register_store and scalar_store into HBM."""
    s = nisa.scalar_load(n) * 2 + 5
    r = nisa.register_alloc()
    nisa.register_load(r, n)
    stored = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.shared_hbm)
    nisa.register_store(stored, r)
    doubled = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.shared_hbm)
    nisa.scalar_store(doubled, s)
    return stored, doubled
'''


def test_scalars_load_from_and_store_into_hbm_as_their_pages_allow(tmp_path):
    """scalar_load's page: "src - A 1x1 tensor in SBUF or HBM"; register_store's "Store register
    contents to HBM/SBUF": both were refused (a probe); staged through a one-element SBUF tile."""
    (tmp_path / "s.py").write_text(HBM_SCALARS)
    out = run(load_kernel(f"{tmp_path / 's.py'}::through_hbm"), np.array([[7]], np.int32))
    assert (int(out["return0"][0, 0]), int(out["return1"][0, 0])) == (7, 19)


SLIPS = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def branches_called(x, flag):
    f = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=f, src=flag)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)

    def then_fn():
        nisa.dma_copy(dst=out, src=t)

    def else_fn():
        nisa.dma_copy(dst=out, src=t)

    nl.if_else(nisa.scalar_load(f), then_fn(), else_fn())  # mistake
    return out


@nki.jit
def register_of_a_float(x, flag):
    r = nisa.register_alloc()
    nisa.register_move(r, 1.5)  # mistake
    return x
'''


@pytest.mark.parametrize("func, words", [
    ("branches_called", 'nl.if_else: then_fn is None; its page: "then_fn - Function () -> None"'),
    ("register_of_a_float", 'nisa.register_move: the value is 1.5; its page: "imm - a compile-time constant integer'),
])
def test_control_flow_slips_are_one_line_at_the_call(tmp_path, func, words):
    """if_else given what its branches return (both bodies ran, the call got two Nones) and a float
    moved into a register (it stored 1): a probe of NKI 0.7 control flow."""
    (tmp_path / "c.py").write_text(SLIPS)
    line = next(k for k, text in enumerate(SLIPS.splitlines(), 1) if "# mistake" in text and
                (("if_else" in text) == (func == "branches_called")))
    with pytest.raises(NkiError) as caught:
        trace(load_kernel(f"{tmp_path / 'c.py'}::{func}"), np.zeros((4, 4), np.float32), np.array([[1]], np.int32))
    assert str(caught.value).startswith(f"c.py:{line}: {words}"), caught.value


WINDOW = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def window(x, off):
    out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
    o = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=o, src=off)
    t = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[0:128, nl.ds(nisa.scalar_load(o), 64)])  # the window
    nisa.dma_copy(dst=out, src=t)
    return out
'''


def test_a_window_at_a_device_start_past_the_row_is_refused_as_a_static_one_is(tmp_path):
    """x[0:P, nl.ds(start, 64)] with a start read on the device: past the row it wrapped into the
    next one, inside the tensor's flat extent, without a word (a probe); at 0 it runs."""
    (tmp_path / "w.py").write_text(WINDOW)
    line = next(k for k, text in enumerate(WINDOW.splitlines(), 1) if "# the window" in text)
    x = np.arange(256 * 64, dtype=np.float32).reshape(256, 64)
    with pytest.raises(NkiError) as caught:
        trace(load_kernel(f"{tmp_path / 'w.py'}::window"), x, np.array([[32]], np.int32))
    assert str(caught.value).startswith(f"w.py:{line}: the access of x reaches past its 64 elements along "
                                        "dimension 1"), caught.value
    out = run(load_kernel(f"{tmp_path / 'w.py'}::window"), x, np.array([[0]], np.int32))["return0"]
    np.testing.assert_array_equal(out, x[:128])


def test_a_slice_bounded_by_a_device_scalar_reads_at_its_value(tmp_path):
    """x[0:P, n:n + 64] with n read on the device indexes as nl.ds(n, 64) does; int(), range()
    and a Python list's index of a scalar are refused (test_new_api_mistakes.py), as NKI's tracer
    raises TypeError for those alone."""
    sliced = WINDOW.replace("nl.ds(nisa.scalar_load(o), 64)", "n:n + 64").replace(
        "    t = nl.ndarray", "    n = nisa.scalar_load(o)\n    t = nl.ndarray")
    (tmp_path / "w.py").write_text(sliced)
    x = np.arange(128 * 80, dtype=np.float32).reshape(128, 80)
    out = run(load_kernel(f"{tmp_path / 'w.py'}::window"), x, np.array([[5]], np.int32))["return0"]
    np.testing.assert_array_equal(out, x[:, 5:69])
