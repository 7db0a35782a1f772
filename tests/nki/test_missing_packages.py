"""Packages a kernel's file imports that are not installed (tests/nki/kernels/missing_packages.py):
inert where the file is imported, refused at the line that uses one where it runs, and only
for a user's file (a library's optional import still fails as the library expects)."""

from __future__ import annotations

import importlib
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from neuronsim.machine.nki import load_kernel, trace
from neuronsim.machine.nki.errors import NkiError
from neuronsim.machine.nki.standins import standins
from neuronsim.verify.cli.cmd_nki import load_reference
from neuronsim_tests.nki_kernels import KERNELS, f32, kernel, run

FILE = Path(KERNELS, "missing_packages.py")


def _line(text: str) -> int:
    return next(n for n, line in enumerate(FILE.read_text().splitlines(), 1) if text in line)


def test_a_kernel_whose_file_uses_missing_packages_on_import_runs():
    x = f32(128, 64)
    np.testing.assert_array_equal(run(kernel("missing_packages.py::add_one"), x)["return0"], x + 1)
    np.testing.assert_array_equal(run(kernel("missing_packages.py::add_one_wrapped"), x)["return0"], x + 1)
    counters = load_kernel(f"{FILE}::Counters")()  # a class its decorator handed back
    load_kernel(f"{FILE}::count_call")(counters)
    assert counters.calls == 1
    assert load_kernel(f"{FILE}::Block").__name__ == "Block"  # a decorator factory run on import read torch


def test_a_missing_package_used_in_the_kernel_is_refused_at_its_line():
    with pytest.raises(NkiError) as err:
        trace(kernel("missing_packages.py::uses_torch"), f32(128, 64))
    assert err.value.path.endswith(f"missing_packages.py:{_line('torch.ones(1)')}")
    assert err.value.message.startswith("torch.ones is not supported (torch cannot be imported here: not installed")


def test_a_reference_using_a_missing_package_is_refused_at_its_line():
    x = np.ones((2, 2), np.float32)
    assert load_kernel(f"{FILE}::reference")(x)["return0"].tolist() == [[2, 2], [2, 2]]
    assert load_reference(f"{FILE}:reference")(x)["return0"].tolist() == [[2, 2], [2, 2]]  # run's --reference
    with pytest.raises(NkiError) as err:
        load_kernel(f"{FILE}::torch_reference")(x)
    assert err.value.path.endswith(f"missing_packages.py:{_line('torch.tensor(x)')}")
    assert "torch.tensor is not supported" in err.value.message


def test_only_a_users_file_gets_a_stand_in_and_none_outlives_the_block():
    library = Path(sysconfig.get_paths()["purelib"], "some_library", "optional.py")
    code = compile("import neuronsim_no_such_package_xyz\n", str(library), "exec")
    with standins():
        with pytest.raises(ModuleNotFoundError):  # a library's optional import fails as it expects
            exec(code, {})
        user = compile("import neuronsim_no_such_package_xyz as pkg\nflag = bool(pkg.anything)\n", str(FILE), "exec")
        scope: dict = {}
        exec(user, scope)
        assert scope["flag"] is False  # inert where a file is imported (its module body)
    assert "neuronsim_no_such_package_xyz" not in sys.modules
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("neuronsim_no_such_package_xyz")


HELPER_FIND_SPEC = '''import importlib.util

if importlib.util.find_spec("not_installed_backend") is not None:
    import not_installed_backend
    FACTOR = not_installed_backend.FACTOR
else:
    FACTOR = 2.0
'''
HELPER_TRY = '''try:
    from not_installed_backend import FACTOR
except (ValueError, ImportError):
    FACTOR = 2.0
'''
SCALING_KERNEL = '''import nki
import nki.language as nl
from {helper} import FACTOR


@nki.jit
def scale(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(x), FACTOR))
    return out
'''


@pytest.mark.parametrize("helper", [HELPER_FIND_SPEC, HELPER_TRY], ids=["find_spec", "try-import"])
def test_a_user_file_s_own_optional_import_fails_as_it_expects(tmp_path, helper):
    """A module beside the kernel that tests for an optional package (``find_spec``, or an
    import in a ``try`` that catches ``ImportError``) takes its fallback, as under Python: the
    package's stand-in made the test succeed, and the module then used it (nki-library beside a
    kernel asks ``find_spec`` for its bundled copy: every nkilib call was refused)."""
    name = f"optional_{helper is HELPER_TRY}"
    (tmp_path / f"{name}.py").write_text(helper)
    (tmp_path / "scaling.py").write_text(SCALING_KERNEL.format(helper=name))
    sys.path.insert(0, str(tmp_path))
    try:
        x = f32(128, 64)
        np.testing.assert_array_equal(run(load_kernel(f"{tmp_path / 'scaling.py'}::scale"), x)["return0"], x * 2)
    finally:
        sys.path.remove(str(tmp_path))
        for module in (name, "not_installed_backend"):
            sys.modules.pop(module, None)


def test_a_union_with_a_missing_packages_name_is_inert_on_import_and_refused_in_the_kernel():
    x = f32(128, 64)
    np.testing.assert_array_equal(run(kernel("missing_packages_unions.py::add_one"), x)["return0"], x + 1)
    with pytest.raises(NkiError) as err:
        trace(kernel("missing_packages_unions.py::unions_in_the_kernel"), x)
    source = Path(KERNELS, "missing_packages_unions.py").read_text().splitlines()
    line = next(n for n, text in enumerate(source, 1) if "kinds = MetricsContext | None" in text)
    assert err.value.path.endswith(f"missing_packages_unions.py:{line}"), err.value
    assert "metrics_package_not_installed cannot be imported here" in err.value.message


def test_isinstance_against_a_missing_class_is_false_and_its_version_says_why(tmp_path, monkeypatch):
    """``isinstance(a, torch.Tensor)`` in a kernel that takes either was Python's "arg 2 must be
    a type"; ``torch.__version__`` on import was "AttributeError: __version__" (probe_bc)."""
    (tmp_path / "k.py").write_text(
        "import neuronsim_absent_torch_xyz as torch\nimport neuronxcc.nki as nki\n"
        "import neuronxcc.nki.language as nl\n\n\n@nki.jit\ndef k(a):\n"
        "    if isinstance(a, torch.Tensor) or issubclass(type(a), torch.Tensor):\n        a = a.numpy()\n"
        "    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n"
        "    nl.store(out, nl.load(a))\n    return out\n")
    (tmp_path / "v.py").write_text("import neuronsim_absent_torch_xyz as torch\nNEW = torch.__version__ >= '2'\n\n\n"
                                   "def in_kernel(a):\n    return torch.__version__\n")
    monkeypatch.chdir(tmp_path)
    x = f32(128, 64)
    np.testing.assert_array_equal(run(load_kernel("k.py::k"), x)["return0"], x)
    with pytest.raises(NkiError, match=r"v\.py:2: importing the kernel: AttributeError: neuronsim_absent_torch_xyz"
                                       r"\.__version__: neuronsim_absent_torch_xyz cannot be imported here"):
        load_kernel("v.py::NEW")
    (tmp_path / "v.py").write_text((tmp_path / "v.py").read_text().replace("NEW = ", "# NEW = "))
    with pytest.raises(NkiError, match=r"v\.py:6: AttributeError: neuronsim_absent_torch_xyz\.__version__"):
        trace(load_kernel("v.py::in_kernel"), x)  # the kernel's error, not neuronsim's (exit 3: probe_bd)
