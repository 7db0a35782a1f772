"""Helpers for the NKI-kernel tests: load a kernel file with its numpy reference, run a traced
kernel end to end exactly as ``neuronsim run`` runs a shipped scenario, and find kernel lines.

A traced kernel is run through :func:`neuronsim.verify.app.scenario_runs.run_scenario` by wrapping it as a
scenario module (``build`` returns the traced program, ``inputs`` the traced DRAM inputs,
``reference`` a numpy function), so the compile pipeline, race checks, interleavings, sync
counts and output comparison are the very ones the builder scenarios go through.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from neuronsim.machine.ir.program import Instruction, Loop, MemoryKind, Program
from neuronsim.verify.app.scenario_runs import ScenarioRun, run_scenario

from neuronsim_tests import ROOT
SCENARIO_KERNELS = ROOT / "scenarios" / "nki"
GROUP_KERNELS = ROOT / "tests" / "nki" / "kernels"

_MODULES: dict[Path, ModuleType] = {}


def kernel_module(path: Path) -> ModuleType:
    """Import an NKI kernel file with the stand-in ``nki`` modules active (once per path), for
    its numpy ``reference`` and constants; ``sys.modules`` is restored afterwards."""
    from neuronsim.machine.nki import standins

    path = path.resolve()
    if path not in _MODULES:
        name = f"nki_kernel_{path.parent.name}_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        with standins():
            spec.loader.exec_module(module)
        _MODULES[path] = module
    return _MODULES[path]


def kernel_specs(folder: Path, source: str, file: str = "k.py") -> Callable[[str], str]:
    """Write ``source`` to ``folder/file``; a function naming its kernels ``PATH::NAME``."""
    (folder / file).write_text(source)
    return lambda name: f"{folder / file}::{name}"


def trace_file(path: Path, func: str, arrays: Mapping[str, np.ndarray], **kwargs: Any):
    """``neuronsim.machine.nki.trace`` of ``path::func`` (loaded as a user's kernel is) on ``arrays``."""
    from neuronsim.machine.nki import load_kernel, trace

    kernel = load_kernel(f"{path}::{func}")
    return trace(kernel, **dict(arrays), **kwargs)


def as_scenario(name: str, program: Program, inputs: Mapping[str, np.ndarray],
                reference: Callable[[Mapping[str, np.ndarray]], Mapping[str, np.ndarray]],
                rtol: float = 0.0, atol: float = 0.0, file: Path | None = None) -> ModuleType:
    """A scenario module around an already built program (what ``run_scenario`` takes)."""
    module = ModuleType(f"nki_scenario_{name}")
    module.__file__ = str(file if file is not None else Path(f"{name}.py"))
    module.build = lambda: program
    module.inputs = lambda seed=0: dict(inputs)
    module.reference = reference
    module.rtol, module.atol = rtol, atol
    return module


def run_program(name: str, program: Program, inputs: Mapping[str, np.ndarray], reference, rtol: float = 0.0,
                atol: float = 0.0) -> ScenarioRun:
    """``run_scenario`` on a program (default pipeline, default interleavings)."""
    return run_scenario(as_scenario(name, program, inputs, reference, rtol, atol))


def instructions(program: Program) -> list[Instruction]:
    return [node for node, _ in program.walk() if isinstance(node, Instruction)]


def dma_triggers(program: Program, dram: set[str]) -> dict[tuple[str, str], set[tuple[str, str | None]]]:
    """For every DRAM tensor and direction, the (trigger engine, queue) pairs of its DMAs."""
    found: dict[tuple[str, str], set[tuple[str, str | None]]] = {}
    for instr in instructions(program):
        if not instr.is_dma:
            continue
        for role, accesses in (("load", instr.reads), ("store", instr.writes)):
            for access in accesses:
                if access.tensor in dram:
                    found.setdefault((role, access.tensor), set()).add((instr.engine, instr.queue))
    return found


def retarget_dmas(builder: Program, traced: Program) -> tuple[Program, list[str]]:
    """The builder program with each DMA triggered from the engine and queue the traced
    kernel uses for the same DRAM tensor and direction, and what was changed.

    NKI's ``nl.load`` / ``nl.store`` name no trigger engine and the frontend picks the queue
    (its documented mapping), where a builder scenario names both: the sync minimum depends
    on them (one queue runs in order), so the builder's minimum is compared after giving
    its DMAs the traced triggers.  A DRAM tensor the kernel moves on several queues keeps
    the builder's own choice (reported in the list).
    """
    dram = {name for name, t in builder.tensors.items() if t.memory == MemoryKind.DRAM}
    wanted = dma_triggers(traced, dram)
    changed: list[str] = []

    def visit(nodes):
        out = []
        for node in nodes:
            if isinstance(node, Loop):
                out.append(replace(node, body=tuple(visit(node.body))))
                continue
            if node.is_dma:
                key = next(((role, a.tensor) for role, accs in (("load", node.reads), ("store", node.writes))
                            for a in accs if a.tensor in dram), None)
                choice = wanted.get(key)
                if choice is not None and len(choice) == 1:
                    engine, queue = next(iter(choice))
                    if (engine, queue) != (node.engine, node.queue):
                        changed.append(f"{node.name}: {node.engine}/{node.queue} -> {engine}/{queue}")
                        node = replace(node, engine=engine, queue=queue)
                elif choice is not None:
                    changed.append(f"{node.name}: kept {node.engine}/{node.queue} (kernel uses {sorted(choice)})")
            out.append(node)
        return out

    return replace(builder, body=tuple(visit(builder.body))), changed


def line_of(path: Path, needle: str) -> int:
    """The 1-based line of ``path`` holding ``needle`` (exactly one such line)."""
    hits = [n for n, text in enumerate(path.read_text().splitlines(), 1) if needle in text]
    assert len(hits) == 1, f"{needle!r} is on lines {hits} of {path.name}"
    return hits[0]


def zeros_like_tensor(program: Program, name: str) -> np.ndarray:
    """Zeros of a program tensor's shape and dtype (an output passed as a kernel parameter)."""
    from neuronsim.machine.ir.dtypes import numpy_dtype

    tensor = program.tensors[name]
    return np.zeros(tensor.shape, dtype=numpy_dtype(tensor.dtype))


def close(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> bool:
    return actual.shape == expected.shape and np.allclose(actual.astype(np.float64), expected.astype(np.float64),
                                                          rtol=rtol, atol=atol)

