"""What ``neuronsim run --reference`` hands the reference besides the kernel's tensors: the
``--arg`` values, and a 0-d ``--inputs`` array, which the kernel gets as a value, not a tensor
(trnsparse's screened SpMM takes its threshold so; the reference was called without it)."""

from __future__ import annotations

import numpy as np
from click.testing import CliRunner

from neuronsim.verify.cli import cli

KERNEL = '''
import nki
import nki.language as nl


@nki.jit
def shift(x, t, scale):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.subtract(nl.load(x), t), scale))
    return out


def reference(x, t, scale):
    return (x - t) * scale
'''


def test_a_zero_dimensional_input_and_an_arg_reach_the_reference(tmp_path):
    (tmp_path / "k.py").write_text(KERNEL)
    x = np.arange(128 * 4, dtype=np.float32).reshape(128, 4)
    np.savez(tmp_path / "in.npz", x=x, t=np.array(0.5, np.float32))
    result = CliRunner().invoke(cli, ["run", f"{tmp_path / 'k.py'}::shift", "--inputs", str(tmp_path / "in.npz"),
                                      "--arg", "scale=2.0", "--reference", f"{tmp_path / 'k.py'}:reference",
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "equal: largest error 0" in result.output


LOADS_ITS_VALUE = '''
import nki
import nki.language as nl


@nki.jit
def loads(x, t):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(x), nl.load(t)))
    return out
'''


def test_a_zero_dimensional_input_used_as_a_tensor_is_said_so(tmp_path):
    """Loaded as a tensor, the 0-d input's refusal says what it is and the shape that would be a
    tensor (it said "nl.load of ndarray: it loads ... a kernel argument", of a kernel argument)."""
    (tmp_path / "k.py").write_text(LOADS_ITS_VALUE)
    np.savez(tmp_path / "in.npz", x=np.ones((128, 4), np.float32), t=np.array(4.0, np.float32))
    result = CliRunner().invoke(cli, ["run", f"{tmp_path}/k.py::loads", "--inputs", f"{tmp_path}/in.npz",
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "nl.load of an array of no dimensions (4.0; an input holding one value is a tensor of shape (1,))" in \
        result.output
