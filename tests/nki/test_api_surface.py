"""Every name of the SDK's API reference modules (read from the public corpus, not copied)
imports from neuronsim's stand-ins in both generations and is implemented or refused with one
line at the line that uses it; a misspelled name names the closest real one, at the kernel's
line even when imported."""

from __future__ import annotations

import ast
import inspect
import os
import re
from pathlib import Path

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, load_kernel, standins, trace
from neuronsim.machine.nki.errors import Refused
from neuronsim_tests.nki_corpus import nki_corpus
from neuronsim_tests.nki_kernels import KERNELS

#: module of the reference -> the stand-ins of both generations that must offer its names
MODULES = {"language": ("nki.language", "neuronxcc.nki.language"), "isa": ("nki.isa", "neuronxcc.nki.isa"),
           "collectives": ("nki.collectives", "neuronxcc.nki.collectives"), "": ("nki", "neuronxcc.nki")}
THIS = Path(__file__).name


def _api(module: str) -> Path:
    """The SDK's API reference module in the corpus (read, never copied)."""
    return nki_corpus() / "aws-neuron-sdk" / "nki" / "api" / "nki" / module


def _api_names(module: str) -> dict[str, list[str]]:
    """``{name: [member, ...]}`` of the reference module (members of its classes)."""
    tree = ast.parse((_api(module) / "__init__.py").read_text())
    names: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
            members = [m.target.id if isinstance(m, ast.AnnAssign) else m.targets[0].id if isinstance(m, ast.Assign)
                       else m.name for m in getattr(node, "body", []) if isinstance(m, (ast.AnnAssign, ast.Assign))
                       or (isinstance(m, ast.FunctionDef) and not m.name.startswith("_"))]
            names[node.name] = [m for m in members if isinstance(m, str)] if isinstance(node, ast.ClassDef) else []
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
            if isinstance(target, ast.Name) and not target.id.startswith("_"):
                names[target.id] = []
    return names


def _member(value: object, member: str) -> object:
    """``value.member``; of a class whose instances refuse some members (NkiTensor), what an
    instance gives."""
    if isinstance(value, type) and not hasattr(value, member) and "__getattr__" in vars(value):
        return value.__getattr__(object.__new__(value), member)
    return getattr(value, member)


def _refused_in_one_line(value: Refused, name: str) -> None:
    with pytest.raises(NkiError) as info:
        value()
    message = str(info.value)
    pattern = rf"\S*{re.escape(THIS)}:\d+: \S*{re.escape(name)} is not supported \([^\n]+\)"
    assert re.fullmatch(pattern, message), message


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_reference_name_imports_and_is_implemented_or_refused(module):
    names = _api_names(module)
    assert len(names) >= (2 if module == "" else 10), f"{_api(module)} lists too few names"  # the corpus was read
    implemented = refused = 0
    with standins() as stand_ins:
        for dotted in MODULES[module]:
            for name, members in names.items():
                exec(f"from {dotted} import {name}", {})  # an import of it always works
                value = getattr(stand_ins[dotted], name)
                if isinstance(value, Refused):
                    _refused_in_one_line(value, name)
                    refused += 1
                    continue
                implemented += 1
                for member in members:  # enum members, tile sizes, tensor methods
                    got = _member(value, member)
                    if isinstance(got, Refused):
                        _refused_in_one_line(got, member)
    assert implemented + refused == len(MODULES[module]) * len(names)


def test_a_misspelled_name_offers_the_closest_and_a_real_one_says_not_supported():
    with standins() as stand_ins:
        nl, nisa = stand_ins["nki.language"], stand_ins["neuronxcc.nki.isa"]
        with pytest.raises(NkiError, match=rf"{THIS}:\d+: nl.expp: no such name in nki.language "
                                           r"\(did you mean nl.exp\?\)$"):
            _ = nl.expp
        with pytest.raises(NkiError, match=r"nisa.nc_matmull: no such name in neuronxcc.nki.isa "
                                           r"\(did you mean nisa.nc_matmul\?\)$"):
            _ = nisa.nc_matmull
        with pytest.raises(NkiError, match=r"nl.average is not supported \(an ALU operator"):
            nl.average(None)


def test_a_misspelled_import_names_the_kernel_line_not_importlib():
    with pytest.raises(NkiError) as info:
        load_kernel(os.path.join(KERNELS, "import_typo.py::never_traced"))
    assert re.fullmatch(r"\S*import_typo\.py:4: nl.expp: no such name in nki.language \(did you mean nl.exp\?\)",
                        str(info.value)), str(info.value)


def _line(func: str, text: str) -> int:
    source = Path(KERNELS, "import_refused.py").read_text().splitlines()
    start = next(k for k, line in enumerate(source) if line.startswith(f"def {func}("))
    return next(k + 1 for k in range(start, len(source)) if text in source[k])


def test_real_names_only_imported_trace_and_refuse_where_used():
    x = np.random.default_rng(0).uniform(-1, 1, (128, 64)).astype(np.float32)
    out = np.zeros_like(x)
    traced = trace(load_kernel(os.path.join(KERNELS, "import_refused.py::copy_only")), x, out)
    assert [inst.op for inst, _ in traced.program.instructions()] == ["dma_copy", "dma_copy"]
    for func, text, expected in (
            ("uses_sendrecv", "sendrecv(src", "nisa.sendrecv is not supported"),
            ("misspelled", "tensor_copyy", "nisa.tensor_copyy: no such name in neuronxcc.nki.isa")):
        with pytest.raises(NkiError) as info:
            trace(load_kernel(os.path.join(KERNELS, f"import_refused.py::{func}")), x, out)
        assert str(info.value).startswith(f"tests/nki/kernels/import_refused.py:{_line(func, text)}: {expected}"), \
            str(info.value)


@pytest.mark.parametrize("module", ["language", "isa", ""])
def test_implemented_calls_take_every_documented_keyword(module):
    """Each parameter the reference signature names is a parameter of neuronsim's call (by
    that name, so keyword forms such as ``num_programs(axes=...)`` work)."""
    tree = ast.parse((_api(module) / "__init__.py").read_text())
    checked = 0
    with standins() as stand_ins:
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef) or node.name.startswith("_"):
                continue
            value = getattr(stand_ins[MODULES[module][0]], node.name)
            if isinstance(value, Refused):
                continue
            params = inspect.signature(getattr(value, "__wrapped__", value)).parameters
            documented = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
            missing = [name for name in documented if name not in params]
            assert not missing, f"{MODULES[module][0]}.{node.name} lacks documented parameters {missing}"
            checked += 1
    assert checked >= 2
