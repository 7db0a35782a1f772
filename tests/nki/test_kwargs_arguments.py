"""Arrays a kernel takes through ``**kwargs`` are HBM tensors named after their keys, as the
arrays of its named parameters are: they reached the kernel as numpy arrays, refused at its
first NKI call as no tile (probe_ar)."""

from __future__ import annotations

import numpy as np

from neuronsim.machine.nki import load_kernel, trace
from neuronsim.verify.nki.run import run_kernel

KERNEL = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def copy_into(x, **kw):
    nl.store(kw["out"], nl.add(nl.load(x), nl.load(kw["bias"])))


@nki.jit
def only_keywords(**kw):
    out = nl.ndarray(kw["x"].shape, dtype=kw["x"].dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.load(kw["x"]))
    return out
'''


def test_arrays_through_kwargs_are_tensors_named_after_their_keys(tmp_path):
    (tmp_path / "kw.py").write_text(KERNEL)
    x, bias = np.ones((128, 64), np.float32), np.full((128, 64), 2.0, np.float32)
    out = np.zeros((128, 64), np.float32)
    program = trace(load_kernel(str(tmp_path / "kw.py::copy_into")), x, out=out, bias=bias).program
    assert {"x", "out", "bias"} <= set(program.tensors)
    outputs, report = run_kernel(str(tmp_path / "kw.py::only_keywords"), x=x)
    assert report.ok and np.array_equal(outputs, x)


def test_a_rank_s_own_array_through_kwargs_is_that_rank_s(tmp_path):
    """probe_av: ``x_rank1`` beside an ``x`` taken through ``**kwargs`` was another array named
    ``x_rank1``, declared twice (exit 3) on a launch on two ranks."""
    (tmp_path / "kw.py").write_text(KERNEL)
    x, mine = np.ones((128, 64), np.float32), np.full((128, 64), 3.0, np.float32)
    traced = trace(load_kernel(str(tmp_path / "kw.py::only_keywords")), x=x, x_rank1=mine, ranks=2)
    assert np.array_equal(traced.inputs["x"], x) and np.array_equal(traced.inputs["x_rank1"], mine)


def test_each_rank_given_its_own_array_alone(tmp_path):
    """probe_ba: ``x_rank0`` and ``x_rank1`` without an ``x`` were "missing a required argument:
    'x'", though the option's help says ``NAME_rank{r}`` gives rank r its own NAME."""
    (tmp_path / "kw.py").write_text(KERNEL)
    first, second = np.ones((128, 64), np.float32), np.full((128, 64), 3.0, np.float32)
    traced = trace(load_kernel(str(tmp_path / "kw.py::copy_into")), x_rank0=first, x_rank1=second,
                   out=np.zeros((128, 64), np.float32), bias=np.zeros((128, 64), np.float32), ranks=2)
    assert np.array_equal(traced.inputs["x"], first) and np.array_equal(traced.inputs["x_rank1"], second)
