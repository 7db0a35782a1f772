"""A kernel inside a repository's package tree whose top folder has no ``__init__.py`` (a
namespace package, as participants' repositories of the NKI MoE challenge lay out
``kernels/attention/embeddings/rope.py`` importing ``..utils``): loaded under its dotted name
from the repository's root (the working folder or a ``sys.path`` entry), as ``python -m``
would; where no import could name it, a relative import fails as Python's does, at its line."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from neuronsim.machine.nki import load_kernel
from neuronsim.machine.nki.errors import NkiError
from neuronsim.verify.nki.simulate import simulate_kernel

KERNEL = '''\
import nki
import nki.language as nl

from ..utils.helper import twice


@nki.jit
def doubled(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=twice(nl.load(x)))
    return out
'''


def _repository(root: Path) -> Path:
    """``root/kernels/`` (no ``__init__.py``) holding the ``attention`` package."""
    top = root / "kernels" / "attention"
    for package in (top, top / "embeddings", top / "utils"):
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
    (top / "utils" / "helper.py").write_text("import nki.language as nl\n\n\ndef twice(t):\n    return nl.add(t, t)\n")
    (top / "embeddings" / "doubled.py").write_text(KERNEL)
    return root


@pytest.fixture
def clean_modules():
    yield
    for name in [n for n in sys.modules if n == "kernels" or n.startswith("kernels.")]:
        del sys.modules[name]


def test_a_kernel_under_a_namespace_folder_loads_from_the_repository_root(tmp_path, monkeypatch, clean_modules):
    root = _repository(tmp_path / "repo")
    monkeypatch.chdir(root)
    k = load_kernel("kernels/attention/embeddings/doubled.py::doubled")
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    np.testing.assert_array_equal(simulate_kernel(k, x), 2 * x)


@pytest.mark.parametrize("folder", ["nki-moe", "nki"])  # no module is named so; the name is NKI's
def test_above_a_folder_no_import_can_name_the_relative_import_fails_at_its_line(folder, tmp_path, monkeypatch,
                                                                                 clean_modules):
    root = _repository(tmp_path / folder)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(NkiError) as err:
        load_kernel(str(root / "kernels/attention/embeddings/doubled.py") + "::doubled")
    assert err.value.path.endswith("doubled.py:4") and "relative import" in err.value.message


def test_a_kernel_importing_relatively_in_a_folder_without_init_loads_from_the_root(tmp_path, monkeypatch,
                                                                                     clean_modules):
    folder = tmp_path / "repo" / "kernels" / "moe"  # no __init__.py anywhere (the challenge's kernels/moe/)
    folder.mkdir(parents=True)
    (folder / "helper.py").write_text("import nki.language as nl\n\n\ndef twice(t):\n    return nl.add(t, t)\n")
    (folder / "doubled.py").write_text(KERNEL.replace("from ..utils.helper import twice", "from .helper import twice"))
    monkeypatch.chdir(tmp_path / "repo")
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    np.testing.assert_array_equal(simulate_kernel(load_kernel("kernels/moe/doubled.py::doubled"), x), 2 * x)
