"""A tile no partition base can place under the partition-start rule is refused at the line of
the access that leaves no base (with the partitions it reads and where the tile was declared),
not at the declaration alone (equiformer-trainium's wigner_D reads row 3 of an 8-row tile)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from neuronsim_tests.bad_inputs import refused_in_one_line

KERNEL = '''\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def row_copy(x):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    o = nl.ndarray((1, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=t[3:4, :])
    out = nl.ndarray((1, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=o)
    return out
'''


def test_the_access_that_leaves_no_base_is_named(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(KERNEL)
    np.savez(tmp_path / "in.npz", x=np.ones((8, 16), np.float32))
    refused_in_one_line(["run", f"{tmp_path / 'k.py'}::row_copy", "--inputs", str(tmp_path / "in.npz"),
                         "--out", str(tmp_path / "out")],
                        "k.py:11: nisa.tensor_copy reads or writes partition 3 of tile 't'", "declared at k.py:8",
                        "partition-start rule")


TWICE = '''\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rows_written_then_read(x):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    one = nl.ndarray((1, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=one, src=x[1:2, :])
    nisa.tensor_copy(dst=t[1:2, :], src=one)
    o = nl.ndarray((1, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=t[1:2, :])
    out = nl.ndarray((1, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=o)
    return out
'''


def test_the_first_access_of_the_partitions_is_named_not_a_later_one(tmp_path: Path) -> None:
    """The write and the later read of row 1 both break the rule: the refusal names the write,
    the first line the author has to change (NxD-Inference's ZAYA1 kernel was refused at its read)."""
    (tmp_path / "k.py").write_text(TWICE)
    np.savez(tmp_path / "in.npz", x=np.ones((8, 16), np.float32))
    refused_in_one_line(["run", f"{tmp_path / 'k.py'}::rows_written_then_read", "--inputs", str(tmp_path / "in.npz"),
                         "--out", str(tmp_path / "out")],
                        "k.py:11: nisa.tensor_copy reads or writes partition 1 of tile 't'", "declared at k.py:8")
