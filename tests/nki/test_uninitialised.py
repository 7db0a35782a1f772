"""The ``uninitialised`` warning (verify/nki/uninitialised.py): each planted read of bytes
nothing wrote that reaches an output is named at its line, with the output; each fix, what
starts with values, and garbage no output receives are not."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuronsim.verify.nki.findings import nki_findings
from neuronsim.verify.nki.run import run_kernel
from neuronsim.verify.nki.uninitialised import (ATTRIBUTE_LIMIT, confirmed_findings, covered_bytes,
                                                uninitialised_findings, unwritten_outputs)
from neuronsim_tests.nki_kit import GROUP_KERNELS, kernel_module, trace_file

KERNELS = GROUP_KERNELS / "uninitialised.py"

PLANTED = {  # kernel -> the line (a needle on it) whose read is reported
    "never_written": "nl.store(out, value=nl.add(nl.load(a), scratch))",
    "half_loaded": "nl.store(out, value=nl.multiply(tile, 2.0))",
    "half_loaded_times_zero": "nl.store(out, value=nl.multiply(tile, 0.0))",  # found by the NaN fill alone
    "sum_not_zeroed": "total += nl.load(a)\n",
    "body_tile_read_first": "value=nl.exp(tile)",
    "scratch_in_hbm": "nl.load(scratch)",
    # a matmul's operands: only its PSUM accumulator is psum-uninitialised's to report
    "matmul_of_half_loaded": "product = nl.matmul(stationary, moving, transpose_x=True)",
}


def _traced(func: str, **arrays: np.ndarray):
    return trace_file(KERNELS, func, {**kernel_module(KERNELS).inputs(0), **arrays})


def _line(needle: str) -> int:
    lines = [n for n, text in enumerate(KERNELS.read_text().splitlines(keepends=True), 1) if needle in text]
    assert lines, needle
    return lines[0]


@pytest.mark.parametrize("func", sorted(PLANTED))
def test_each_planted_read_is_named_at_its_line(func: str) -> None:
    traced = _traced(func)
    found = confirmed_findings(traced.program, traced.run_inputs)
    assert len(found) == 1, [f.line() for f in found]
    assert found[0].severity == "warning"
    assert f"uninitialised.py:{_line(PLANTED[func])}" in found[0].first
    text = found[0].line()
    assert text.startswith("warning: ") and "nothing wrote" in text and "the output return0 changes" in text
    assert not any(f.kind == "uninitialised" for f in nki_findings(traced.program))  # a run's finding only


def test_a_read_whose_bytes_alone_reach_no_output_is_not_named_beside_one_that_does() -> None:
    traced = _traced("one_read_reaches_one_not")
    assert {f.tensors[0].split("_")[0] for f in uninitialised_findings(traced.program)} == {"tile", "tail"}
    found = confirmed_findings(traced.program, traced.run_inputs)
    assert {f.tensors[0].split("_")[0] for f in found} == {"tile"}
    assert all("the output return0 changes" in f.line() for f in found)


def test_copies_of_a_tile_on_a_grid_are_confirmed_together() -> None:
    traced = trace_file(KERNELS, "tails_on_a_grid", kernel_module(KERNELS).inputs(0), grid=(9,))
    read = {f.tensors[0] for f in uninitialised_findings(traced.program)}
    assert len(read) > ATTRIBUTE_LIMIT and {name.split("_")[0] for name in read} == {"tile", "tail"}
    found = confirmed_findings(traced.program, traced.run_inputs)
    assert found and {f.tensors[0].split("_")[0] for f in found} == {"tile"}


def test_the_first_iteration_is_named_in_a_loop() -> None:
    (found,) = uninitialised_findings(_traced("sum_not_zeroed").program)
    assert found.first.endswith("[i=0]")


@pytest.mark.parametrize("func", ["sum_zeroed", "half_loaded_half_used"])
def test_a_kernel_reading_only_what_it_wrote_has_no_warning(func: str) -> None:
    assert uninitialised_findings(_traced(func).program) == []


def test_garbage_no_output_receives_is_no_warning() -> None:
    traced = _traced("rows_not_stored")
    (read,) = uninitialised_findings(traced.program)  # the multiply reads the unloaded rows
    assert f"uninitialised.py:{_line('doubled = nl.multiply(tile, 2.0)')}" in read.first
    assert confirmed_findings(traced.program, traced.run_inputs) == []  # but no output changes with them


def test_a_run_reports_it_and_still_passes() -> None:
    arrays = kernel_module(KERNELS).inputs(0)
    from neuronsim.machine.nki import load_kernel

    _, report = run_kernel(load_kernel(f"{KERNELS}::half_loaded"), arrays["a"])
    assert [f.kind for f in report.findings] == ["uninitialised"]
    assert report.ok and any(line.startswith("warning: ") for line in report.finding_lines())


def test_an_output_the_caller_hands_in_holds_values() -> None:
    acc = np.zeros((128, 512), np.float32)
    traced = _traced("accumulate_into", acc=acc)
    assert uninitialised_findings(traced.program, traced.run_inputs.keys()) == []
    assert uninitialised_findings(traced.program) == []  # no inputs named: every DRAM tensor may hold values


def test_the_checks_page_names_the_warning() -> None:
    from neuronsim_tests.nki_kit import ROOT

    page = (ROOT / "docs" / "nki-checks.md").read_text()
    assert "`uninitialised`" in page and all(f"`{func}`" in page for func in ("half_loaded", "sum_not_zeroed"))


def test_an_output_with_bytes_nothing_writes_is_named_at_its_declaration() -> None:
    traced = _traced("output_rows_left")
    (found,) = unwritten_outputs(traced.program, traced.run_inputs.keys())
    assert found.severity == "warning" and found.tensors == ("return0",)
    line = _line("out = nl.ndarray((256, 512)")  # output_rows_left's, the first
    assert found.first == f"nl.ndarray at tests/nki/kernels/uninitialised.py:{line}"
    assert "262,144 of its 524,288 bytes, the first at element [128, 0]" in found.describe()


def test_an_output_written_whole_or_handed_in_has_no_warning() -> None:
    traced = _traced("output_written_twice_over")
    assert unwritten_outputs(traced.program, traced.run_inputs.keys()) == []
    left = _traced("output_rows_left")
    assert unwritten_outputs(left.program, [*left.run_inputs, "return0"]) == []  # the caller's values stay


def test_an_output_left_unwritten_is_no_proof_that_a_garbage_read_reached_it() -> None:
    """The tutorial's tail tile (its garbage rows never stored) beside an output half of whose
    columns nothing writes: the two fills made the output differ in those columns, and the
    tail's read was confirmed as reaching it.  Only the unwritten columns are reported."""
    traced = _traced("tail_tile_and_half_the_columns", a=np.ones((200, 512), np.float32))
    assert uninitialised_findings(traced.program, traced.run_inputs.keys())  # the read is there...
    assert confirmed_findings(traced.program, traced.run_inputs) == []  # ...and reaches no output
    (unwritten,) = unwritten_outputs(traced.program, traced.run_inputs.keys())
    assert "the first at element [0, 256]" in unwritten.describe()


def test_a_run_warns_of_the_unwritten_rows_and_passes() -> None:
    report = run_kernel(kernel_module(KERNELS).output_rows_left, kernel_module(KERNELS).inputs(0)["a"])[1]
    assert [(f.kind, f.dependence) for f in report.findings] == [("uninitialised", "unwritten")]
    assert not report.problems()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=12), st.integers(0, 40))
def test_covered_bytes_is_the_union_a_byte_map_counts(ranges, size) -> None:
    lo = np.array([a for a, _ in ranges], np.int64)
    hi = np.array([b for _, b in ranges], np.int64)
    byte_map = np.zeros(size, bool)
    for a, b in ranges:
        byte_map[min(a, size):min(b, size)] = True
    gap = int(np.argmin(byte_map)) if not byte_map.all() else None
    assert covered_bytes(np.minimum(lo, size), np.minimum(hi, size), size) == (int(byte_map.sum()), gap)


def test_the_check_compares_fills_of_normal_floats(monkeypatch) -> None:
    """Two of the runs that find which outputs unwritten bytes reach fill memory with normal
    floats of every width (the default pattern's tiny values make a matmul's subnormals, tens
    of times slower), the third with NaN; the planted read is found all the same."""
    import ml_dtypes

    import neuronsim.machine.sim.memory as memory
    from neuronsim.machine.model.presets import resolve_machine

    fills = []
    real = memory.initial_memory
    monkeypatch.setattr(memory, "initial_memory", lambda *a, **kw: (fills.append(a[4:] or kw.get("drawn_from")),
                                                                     real(*a, **kw))[1])
    traced = _traced("never_written")
    assert len(confirmed_findings(traced.program, traced.run_inputs)) == 1
    assert fills == [(memory.NORMAL_FLOAT_PATTERN,)] * 2 + [(memory.NAN_PATTERN,)]
    sbuf = real(traced.program, resolve_machine(traced.program.machine), 3, traced.run_inputs,
                memory.NORMAL_FLOAT_PATTERN).spaces[0]
    for dtype in (np.float32, np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2):
        values = sbuf[:sbuf.size - sbuf.size % 4].view(dtype).astype(np.float64)
        assert np.all(np.isfinite(values)) and np.all(values > 0) and np.all(values < 1.0001), dtype
        assert np.all(np.abs(values) >= float(ml_dtypes.finfo(dtype).smallest_normal)), dtype
    nan = real(traced.program, resolve_machine(traced.program.machine), 3, traced.run_inputs,
               memory.NAN_PATTERN).spaces[0]
    for dtype in (np.float32, np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2):
        assert np.all(np.isnan(nan[:nan.size - nan.size % 4].view(dtype).astype(np.float64))), dtype


#: Every kernel of the group file, with the arrays beyond ``inputs()`` that it takes.
AGREEMENT = {"never_written": {}, "half_loaded": {}, "half_loaded_times_zero": {}, "one_read_reaches_one_not": {},
             "matmul_of_half_loaded": {}, "half_loaded_half_used": {},
             "rows_not_stored": {}, "sum_not_zeroed": {}, "sum_zeroed": {}, "body_tile_read_first": {},
             "scratch_in_hbm": {}, "accumulate_into": {"acc": np.zeros((128, 512), np.float32)},
             "output_rows_left": {}, "tail_tile_and_half_the_columns": {"a": np.ones((200, 512), np.float32)},
             "output_written_twice_over": {}}


@pytest.mark.parametrize("func", sorted(AGREEMENT))
def test_the_flat_shortcuts_agree_with_the_access_events(func: str) -> None:
    """A program without loops skips compiling every access (issue 31): the whole-first-write
    test and the outputs' written bytes from their writes alone give what the access events
    give, on every kernel of the group file, loops or none, findings or none."""
    from neuronsim.machine.ir.program import MemoryKind
    from neuronsim.machine.order.stream import stream_of
    from neuronsim.verify.nki import uninitialised as module
    from neuronsim.verify.nki.placement import identity_placement

    traced = _traced(func, **AGREEMENT[func])
    program, given = traced.program, traced.run_inputs.keys()
    stream = stream_of(identity_placement(program))
    assert uninitialised_findings(program, given, stream) == module._uninitialised_by_events(stream, program, given)
    outputs = [t for t, name in enumerate(stream.tensor_names) if program.tensors[name].memory == MemoryKind.DRAM
               and program.tensors[name].role == "output" and name not in given]
    sizes = {name: stream.program.tensors[name].bytes_per_partition for name in stream.tensor_names}
    shortcut = module._written_bytes(program, given, stream)
    events = module._written_bytes_by_events(stream, outputs) if outputs else {}
    assert {n: covered_bytes(*r, sizes[n]) for n, r in shortcut.items()} == \
        {n: covered_bytes(*r, sizes[n]) for n, r in events.items()}


def test_the_whole_first_write_shortcut_is_taken_and_refused_where_it_must_be() -> None:
    """The agreement above means something only if the shortcut decides some kernels: it does
    for a flat kernel whose tiles are each loaded whole before use, and declines a tile half
    loaded, a tile never written, and any program with loops."""
    from neuronsim.machine.order.stream import stream_of
    from neuronsim.verify.nki import uninitialised as module
    from neuronsim.verify.nki.placement import identity_placement

    def decides(func: str) -> bool:
        traced = _traced(func, **AGREEMENT[func])
        stream = stream_of(identity_placement(traced.program))
        return module._each_written_whole_first(stream, traced.program, traced.run_inputs.keys())

    assert decides("output_rows_left") and decides("output_written_twice_over")
    assert not decides("half_loaded") and not decides("never_written") and not decides("sum_not_zeroed")
