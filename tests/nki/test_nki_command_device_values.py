"""``neuronsim nki`` traces a kernel that reads a tile's values while traced (a row picked by
an index it loaded) as ``run`` does: it used to stop with "reading a device value needs the
traced inputs run", the runner being registered only by the modules ``run`` imports.  In a
fresh process, so that no other test has imported them first."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

KERNEL = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def pick_row(table, idx):
    out = nl.ndarray((1, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    i = nl.load(idx[0:1, 0:1])
    nl.store(out, value=nl.load(table[i[0, 0], nl.arange(64)[None, :]]))
    return out
'''


def test_the_nki_command_reads_device_values(tmp_path) -> None:
    (tmp_path / "k.py").write_text(KERNEL)
    table = np.arange(8 * 64, dtype=np.float32).reshape(8, 64)
    np.savez(tmp_path / "in.npz", table=table, idx=np.array([[5]], np.int32))
    done = subprocess.run([sys.executable, "-c", "from neuronsim.verify.cli import main; main()", "nki",
                           "k.py::pick_row", "--inputs", "in.npz", "-o", "p.json", "--json"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["instructions"] == 4  # the index load, its register read, the row, the store
    program = json.loads((tmp_path / "p.json").read_text())
    (row,) = [read for inst in program["body"] for read in inst["reads"] if read["tensor"] == "table"]
    assert row["offset"] == 5 * 64  # the row the loaded index names
