"""A host wrapper named as the kernel: ``def kernel(q, k, v): return _kernel[n](q, k, v)``, the
entry point users write around an SPMD kernel (found in a public repository's linear-attention
kernels by a probe).  It was refused as a grid launched inside a kernel; a wrapper whose first
act is to return a launch on its own arrays is traced as that launch, and one that does more is
refused at its line with the command that runs the launched kernel itself."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, load_kernel, trace
from neuronsim.verify.nki.run import run_kernel

KERNELS = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def scaled_rows(x, factor):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    p = nl.program_id(0)
    nl.store(out[p, :, :], value=nl.multiply(nl.load(x[p, :, :]), factor))
    return out


def wrapper(x):
    return scaled_rows[x.shape[0]](x, 2.0)


def wrapper_by_name(x):
    return scaled_rows[2](x=x, factor=3.0)


def wrapper_then_more(x):
    out = scaled_rows[2](x, 2.0)
    return out


def wrapper_of_a_view(x):
    return scaled_rows[2](x.reshape((2, 128, 8)), 2.0)


@nki.jit
def kernel_launching(x):
    return scaled_rows[2](x, 2.0)
'''


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "w.py").write_text(KERNELS)
    return tmp_path


def _x() -> np.ndarray:
    return np.arange(2 * 128 * 8, dtype=np.float32).reshape(2, 128, 8)


@pytest.mark.parametrize("func, factor", [("wrapper", 2.0), ("wrapper_by_name", 3.0)])
def test_a_wrapper_returning_a_launch_is_traced_as_that_launch(kernels, func, factor) -> None:
    traced = trace(load_kernel(f"w.py::{func}"), _x())
    assert sum(1 for _ in traced.program.instructions()) == 6  # a load, a multiply, a store per program
    outputs, report = run_kernel(f"w.py::{func}", _x(), seeds=(None,))
    assert not report.problems()
    np.testing.assert_array_equal(outputs, _x() * factor)  # both programs of the grid ran


@pytest.mark.parametrize("func, why", [
    ("wrapper_then_more", "wrapper_then_more does more than return the launch"),
    ("wrapper_of_a_view", "the launch is given a value the wrapper made"),
    ("kernel_launching", "launching an SPMD grid from inside a kernel is not supported"),
])
def test_anything_else_is_refused_with_the_command_that_runs_the_launched_kernel(kernels, func, why) -> None:
    with pytest.raises(NkiError) as info:
        trace(load_kernel(f"w.py::{func}"), _x())
    message = str(info.value)
    line = next(n for n, text in enumerate(KERNELS.splitlines(), 1) if f"def {func}(" in text) + 1
    assert message.startswith(f"w.py:{line}: ") and why in message, message
    assert "run the launched kernel itself at top level: w.py::scaled_rows --grid 2" in message


def test_the_hint_names_the_kernel_file_as_the_location_does(tmp_path, monkeypatch) -> None:
    """Run from a folder above the kernel's, the hint's command names the file by the path that
    finds it from there (as the error's location does), not by its base name."""
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "w.py").write_text(KERNELS)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(NkiError) as info:
        trace(load_kernel("kernels/w.py::wrapper_then_more"), _x())
    message = str(info.value)
    assert message.startswith("kernels/w.py:"), message
    assert "run the launched kernel itself at top level: kernels/w.py::scaled_rows --grid 2" in message


LEGACY = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def doubling(x):
    out = nl.ndarray((4, 128, 8), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    scale = 1.0
    for i in nl.affine_range(4):
        scale = scale * 2.0  # traced once, as NKI traces the body: 2x in every iteration
        nl.store(out[i], value=nl.multiply(t, scale))
    return out


def same_module_host(x):
    return doubling(x)
'''


CURRENT = LEGACY.replace("import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl",
                         "import nki\nimport nki.language as nl").replace("doubling", "cdoubling")

HOSTS = {
    "host.py": "from k import doubling\n\n\ndef host(x):\n    return doubling(x)\n",
    "two.py": "import host\n\n\ndef host2(x):\n    return host.host(x)\n",
    "part.py": "import functools\nimport k\n\nhost = functools.partial(k.doubling)\n",
    "mixed.py": "from k import doubling\nfrom c import cdoubling\n\n\ndef legacy(x):\n    return doubling(x)\n"
                "\n\ndef current(x):\n    return cdoubling(x)\n",
    "own.py": "import nki.language as nl\nfrom k import doubling\n\n\ndef host(x):\n    return doubling(x)\n",
}


@pytest.mark.parametrize("entry, factors", [
    ("k.py::doubling", [2, 2, 2, 2]), ("host.py::host", [2, 2, 2, 2]), ("k.py::same_module_host", [2, 2, 2, 2]),
    ("two.py::host2", [2, 2, 2, 2]), ("part.py::host", [2, 2, 2, 2]), ("mixed.py::legacy", [2, 2, 2, 2]),
    ("own.py::host", [2, 2, 2, 2]), ("c.py::cdoubling", [2, 4, 8, 16]), ("mixed.py::current", [2, 4, 8, 16])])
def test_a_kernel_keeps_its_api_s_rules_whoever_calls_it(tmp_path, monkeypatch, entry, factors) -> None:
    """probe_ac N1: the API generation was the entry function's module's, so a legacy kernel
    called from a host function in a module that imports nothing of NKI ran by NKI 0.7's rules
    (2, 4, 8, 16 x instead of 2 x, no warning), and one called from a host function in its own
    module was refused for the shared_hbm output it makes at its own top level; probe_ad: the
    kernel a host function calls decides, not the names of its module (a module naming a legacy
    and a current kernel, a partial, two levels, a module importing NKI itself)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "k.py").write_text(LEGACY)
    (tmp_path / "c.py").write_text(CURRENT)
    for name, text in HOSTS.items():
        (tmp_path / name).write_text(text)
    x = np.ones((128, 8), np.float32)
    outputs, report = run_kernel(str(tmp_path / entry), x, seeds=(None,))
    np.testing.assert_array_equal(outputs, np.stack([np.full((128, 8), f, np.float32) for f in factors]))
    once = any("traces the body once" in w for w in report.finding_lines())
    assert once == (factors[-1] == 2), report.finding_lines()


@pytest.mark.parametrize("grid, refused", [("-2", "a grid of (-2,): each dimension is an integer from 1 below 2**31"),
                                           ("10**9", "traces to more than 1,000 instructions")])
def test_a_wrapper_s_launch_grid_is_checked_as_a_command_line_grid_is(tmp_path, monkeypatch, grid, refused) -> None:
    """``scaled_rows[-2](x)`` traced nothing and exited 0; ``[10**9]`` made a tuple of a
    billion program ids before the first program ran (22 GB: probe_bf)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "g.py").write_text(KERNELS + f"\n\ndef launches(x):\n    return scaled_rows[{grid}](x, 2.0)\n")
    with pytest.raises(NkiError, match=refused.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        trace(load_kernel("g.py::launches"), _x(), max_instructions=1000)
