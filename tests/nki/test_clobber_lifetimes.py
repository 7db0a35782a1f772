"""The live ranges the clobber check reads (verify/nki/lifetimes.py), and their cost: one look-up
per tensor by id.  A search of the stream's tensor list per tensor made the NKI findings
quadratic in the tensors (9.9 of 13.7 s at nki-library's attention_cte with 45 k tensors)."""

from __future__ import annotations

import numpy as np

from neuronsim.machine.nki import trace
from neuronsim.machine.order.stream import stream_of
from neuronsim.verify.nki.findings import nki_findings
from neuronsim.verify.nki.lifetimes import live_ranges
from neuronsim.verify.nki.placement import identity_placement
from neuronsim_tests.nki_kernels import f32, kernel
from neuronsim_tests.nki_kit import GROUP_KERNELS, line_of, trace_file


class _NoSearch(list):
    def index(self, *args):  # noqa: D102 - the quadratic look-up the check must not make
        raise AssertionError("live_ranges searched the tensor list")


def test_live_ranges_look_tensors_up_by_id_and_give_each_its_first_write_and_last_read():
    traced = trace(kernel("current_control.py::rows_plus_one"), f32(384, 64))
    program = traced.program
    stream = stream_of(identity_placement(program))
    stream.tensor_names = _NoSearch(stream.tensor_names)
    on_chip = {name for name, t in program.tensors.items() if t.memory.value != "dram"}
    ranges = live_ranges(stream, on_chip)
    assert ranges and set(ranges) <= on_chip
    for first, last, writes, reads in ranges.values():
        assert writes and first == min(writes) and (last == -1 or last > first)
        assert np.all(np.diff(writes) >= 0) and np.all(np.diff(reads) > 0) and last == (reads[-1] if reads else -1)


def test_a_clobber_before_the_live_tiles_last_read_is_found_at_its_lines():
    # the witness was sought against the live tile's last read alone, which reads other bytes
    path = GROUP_KERNELS / "clobber_before_last_read.py"
    name = "tests/nki/kernels/clobber_before_last_read.py"
    arrays = {"a": np.random.default_rng(0).random((2, 128, 8), dtype=np.float32)}
    found = nki_findings(trace_file(path, "two_columns", arrays).program)
    assert [(f.kind, f.dependence) for f in found] == [("allocation", "clobber")], [f.describe() for f in found]
    assert found[0].first.startswith(f"nisa.tensor_copy at {name}:{line_of(path, '# onto sums[:, 1] unless apart')}")
    assert found[0].second.startswith(f"nisa.tensor_copy at {name}:{line_of(path, '# reads the second column')}")
    assert nki_findings(trace_file(path, "two_columns", arrays, apart=True).program) == []


def test_a_clobber_partly_written_over_again_is_still_found():
    # a rewrite of the live tile sharing any byte with the clobber hid it (probe_ap): only the
    # bytes the read takes from the clobber, all written again, make it harmless
    path = GROUP_KERNELS / "clobber_before_last_read.py"
    arrays = {"a": np.random.default_rng(0).random((128, 2), dtype=np.float32)}
    found = nki_findings(trace_file(path, "rewritten", arrays).program)
    assert [(f.kind, f.dependence) for f in found] == [("allocation", "clobber")], [f.describe() for f in found]
    assert found[0].first.startswith(f"nisa.tensor_scalar at tests/nki/kernels/clobber_before_last_read.py:"
                                     f"{line_of(path, '# over both columns of sums')}")
    assert nki_findings(trace_file(path, "rewritten", arrays, both_columns=True).program) == []
