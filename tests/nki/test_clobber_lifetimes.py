"""The live ranges the clobber check reads (verify/nki/lifetimes.py), and their cost: one look-up
per tensor by id.  A search of the stream's tensor list per tensor made the NKI findings
quadratic in the tensors (9.9 of 13.7 s at nki-library's attention_cte with 45 k tensors)."""

from __future__ import annotations

import numpy as np

from neuronsim.machine.nki import trace
from neuronsim.machine.order.stream import stream_of
from neuronsim.verify.nki.lifetimes import live_ranges
from neuronsim.verify.nki.placement import identity_placement
from neuronsim_tests.nki_kernels import f32, kernel


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
    for first, last, writes in ranges.values():
        assert writes and first == min(writes) and (last == -1 or last > first)
        assert np.all(np.diff(writes) >= 0)
