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
