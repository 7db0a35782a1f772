"""A call pending when a legacy kernel's Python ``range`` loop starts is the code before the
loop: it was marked iteration -1 of that loop (``x-in-order``), and the program ``neuronsim nki``
wrote was refused when read back (probe_au, on Autocomp's attention kernels)."""

from __future__ import annotations

import numpy as np

from neuronsim.machine.formats.program_json import dumps_program, loads_program
from neuronsim.machine.nki import load_kernel, trace

KERNEL = '''import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def before_a_range(x):
    out = nl.ndarray((2, 128, 64), dtype=np.float32, buffer=nl.shared_hbm)
    t = nl.exp(nl.load(x))
    for i in nl.sequential_range(2):
        nl.store(out[i * i], value=t)  # (an index no affine loop holds: the loop is unrolled)
    return out
'''


def test_a_call_before_a_range_loop_is_not_its_iteration(tmp_path):
    (tmp_path / "k.py").write_text(KERNEL)
    program = trace(load_kernel(str(tmp_path / "k.py::before_a_range")), np.ones((128, 64), np.float32)).program
    marks = {inst.name: inst.extras.get("x-in-order") for inst, _ in program.instructions()}
    assert all(m is None or all(mark[2] >= 0 for mark in m) for m in marks.values()), marks
    assert [m for name, m in marks.items() if name.startswith("activation")] == [None], marks
    assert loads_program(dumps_program(program)) == program
