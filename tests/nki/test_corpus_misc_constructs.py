"""Constructs behind miscellaneous corpus refusals, on small kernels of our own
(machine/nki/frontend.py, kernel.py, standins.py, errors.py):

* a legacy ``@nki.jit(mode="simulation")`` kernel may return an on-chip tile: NKI's simulator
  hands its values back (the SDK's range_select test compares the returned SBUF tile with
  numpy), so it becomes an HBM output stored at the return line; a compiled kernel still must
  return HBM tensors;
* a class of a module neuronsim knows nothing of (``nki.compiler.frontend.ParserFrontend``,
  built as a default argument by nki-library's test harness on import) can be instantiated;
  using the instance is refused at the line that used it;
* arguments that do not fit a kernel name its parameters, not their annotations;
* a kernel file importing a module that is not valid Python is refused at that module's line,
  not at the kernel file's (nki-library's transformer imports an mlp.py that does not parse);
* the corpus run's torch stand-in (``bench/corpus_standins.py``) lets a test module define its
  torch reference model (``class Ref(torch.nn.Module)``) on import, and refuses building one.
"""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, load_kernel, trace
from neuronsim.verify.nki.simulate import simulate_kernel
from neuronsim_tests.bench_runs import run_bench

LEGACY = """\
import numpy as np
from neuronxcc import nki
import neuronxcc.nki.language as nl


@nki.jit(mode="simulation")
def doubled_tile(x):
    t = nl.load(x)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    out[...] = nl.multiply(t, 2.0)
    total = nl.ndarray((x.shape[0], 1), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(total, nl.sum(t, axis=1, keepdims=True))
    return out, total  # an SBUF tile and an HBM tensor


@nki.jit
def compiled_tile(x):
    t = nl.load(x)
    return t  # compiled: not allowed
"""

HARNESS = """\
from nki.compiler.frontend import ParserFrontend
import nki
import nki.language as nl


def harness(frontend=ParserFrontend()):  # built at import, as a default
    return frontend


@nki.jit
def uses_frontend(x):
    frontend = harness()
    return frontend.compile(x)  # the use
"""

ANNOTATED = """\
import nki
import nki.language as nl


@nki.jit
def annotated(a: nl.ndarray, b: nl.ndarray, size: int):
    return a
"""


def _write(tmp_path, name: str, source: str):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def _line(path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_a_simulation_mode_kernel_hands_back_its_returned_sbuf_tile(tmp_path):
    path = _write(tmp_path, "legacy_return.py", LEGACY)
    x = np.arange(4 * 8, dtype=np.float32).reshape(4, 8)
    traced = trace(load_kernel(f"{path}::doubled_tile"), x)
    assert traced.returned == ("return0", "return1")
    stores = [inst for inst, _ in traced.program.instructions()
              if dict(inst.extras)["x-source"]["call"] == "return"]
    assert [s.op for s in stores] == ["dma_copy"]
    assert dict(stores[0].extras)["x-source"]["line"] == _line(path, "return out, total")
    doubled, total = simulate_kernel(load_kernel(f"{path}::doubled_tile"), x)
    np.testing.assert_array_equal(doubled, 2 * x)
    np.testing.assert_array_equal(total, x.sum(axis=1, keepdims=True))


def test_a_compiled_kernel_still_returns_hbm_tensors_only(tmp_path):
    path = _write(tmp_path, "legacy_return.py", LEGACY)
    with pytest.raises(NkiError) as err:
        trace(load_kernel(f"{path}::compiled_tile"), np.ones((4, 8), np.float32))
    # the file is named relative to the working folder: its name and line end the location
    assert f"legacy_return.py:{_line(path, 'return t  #')}: a kernel returns HBM tensors" in str(err.value)


def test_an_unknown_modules_class_is_built_and_refused_when_used(tmp_path):
    path = _write(tmp_path, "harness.py", HARNESS)
    kernel = load_kernel(f"{path}::uses_frontend")  # the import builds ParserFrontend()
    with pytest.raises(NkiError) as err:
        trace(kernel, np.ones((4, 8), np.float32))
    assert str(err.value).endswith(f"harness.py:{_line(path, 'frontend.compile')}: "
                                   "nki.compiler.frontend.ParserFrontend() is not supported "
                                   "(not modelled by neuronsim)")


def test_arguments_that_do_not_fit_name_the_parameters(tmp_path):
    path = _write(tmp_path, "annotated.py", ANNOTATED)
    with pytest.raises(NkiError) as err:
        trace(load_kernel(f"{path}::annotated"), np.ones((4, 8), np.float32), np.ones((4, 8), np.float32))
    message = str(err.value)
    assert "arguments do not fit annotated(a, b, size): missing a required argument: 'size'" in message
    assert "<function" not in message


def test_arguments_that_do_not_fit_show_the_starred_parameters(tmp_path):
    (tmp_path / "starred.py").write_text("import nki\n\n\n@nki.jit\ndef k(x, *rest, size, **more):\n    pass\n")
    with pytest.raises(NkiError, match=r"arguments do not fit k\(x, \*rest, size, \*\*more\)"):  # (was `rest`)
        trace(load_kernel(f"{tmp_path / 'starred.py'}::k"), np.ones((4, 8), np.float32))


def test_a_syntax_error_in_an_imported_module_names_that_module(tmp_path, monkeypatch):
    _write(tmp_path, "broken_helper.py", "def helper():\n    return 1\n      x = 2\n")
    path = _write(tmp_path, "imports_broken.py", "import broken_helper\n\n\ndef kernel(x):\n    return x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(NkiError) as err:
        load_kernel(f"{path}::kernel")
    message = str(err.value)
    assert "broken_helper.py:3: SyntaxError: unexpected indent" in message
    assert "imports_broken.py" not in message


def test_the_torch_stand_in_can_be_subclassed_and_refuses_instances(tmp_path):
    probe = _write(tmp_path, "reference_model.py", textwrap.dedent("""
        import json
        import torch

        class Reference(torch.nn.Module):  # as nki-library's attention_block_tkg_torch.py
            pass

        try:
            Reference()
            used = "no error"
        except Exception as err:
            used = f"{type(err).__name__}: {err}"
        print(json.dumps({"base": Reference.__mro__[1].__qualname__, "used": used}))
    """))
    got = json.loads(run_bench("corpus_standins.py", str(probe), timeout=120).stdout.strip().splitlines()[-1])
    assert got["base"] == "torch.nn.Module"
    assert got["used"].startswith("StandinUsed: ") and "torch.nn.Module is an import stand-in" in got["used"]
