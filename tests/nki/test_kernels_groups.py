"""Kernels of our own, one or more per API group of the reference's ranked list, in both NKI
generations (``tests/nki/kernels/``): each is traced, run end to end as ``neuronsim run``
runs a scenario (compile, race checks, interleavings, outputs against the kernel file's numpy
reference), and its traced program is checked for what the group is about (the op and
engine each call lowers to, kept loops, placements, access patterns, dtypes).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from math import prod
from pathlib import Path

import numpy as np
import pytest

from neuronsim.machine.ir.program import Instruction, Loop, MemoryKind, Program
from neuronsim.machine.nki import load_kernel, trace
from neuronsim_tests.nki_kit import GROUP_KERNELS, close, instructions, kernel_module, run_program, trace_file


def _ops(program: Program) -> list[Instruction]:
    return instructions(program)


def _uses(program: Program, opcode: str, engine: str | None = None, **attrs) -> list[Instruction]:
    return [i for i in _ops(program) if i.op == opcode and (engine is None or i.engine == engine)
            and all(i.attrs.get(k) == v for k, v in attrs.items())]


def _funcs(program: Program) -> set[str]:
    return {i.attrs.get("func") for i in _uses(program, "activation")}


def check_dma(program: Program) -> None:
    dmas = [i for i in _ops(program) if i.is_dma]
    assert dmas and all(i.queue for i in dmas)
    dram = {n for n, t in program.tensors.items() if t.memory == MemoryKind.DRAM}
    # a DRAM-to-DRAM copy or loads and stores on both sides
    assert any(a.tensor in dram for i in dmas for a in i.reads)
    assert any(a.tensor in dram for i in dmas for a in i.writes)


def check_current_dma(program: Program) -> None:
    check_dma(program)
    engines = {i.engine for i in _ops(program) if i.is_dma}
    assert "act" in engines, engines   # engine=nisa.engine.scalar: hardware DGE on the ACT queue
    assert "pool" in engines, engines  # dge_mode=swdge: descriptors generated on GpSimd


def check_legacy_matmul(program: Program) -> None:
    mms = _uses(program, "matmul", "pe")
    assert mms and any(i.extras.get("x-nki-accumulate") for i in mms)
    assert any(loop.extras.get("x-nki-range") == "affine" for loop in (n for n, _ in program.walk())
               if isinstance(loop, Loop))


def check_transpose(program: Program) -> None:
    assert _uses(program, "transpose", "pe")


def check_current_matmul(program: Program) -> None:
    mms = _uses(program, "matmul", "pe")
    assert [bool(i.attrs.get("accumulate")) for i in mms] == [False, True, True]
    assert _uses(program, "transpose", "pe") and _uses(program, "transpose", "dve")


def check_activation(program: Program) -> None:
    acts = _uses(program, "activation")
    assert acts and all(i.engine == "act" for i in acts)
    assert {"exp", "silu", "gelu_apprx_tanh"} <= _funcs(program), _funcs(program)


def check_legacy_activation(program: Program) -> None:
    check_activation(program)
    assert {"sigmoid", "tanh", "square", "rsqrt"} <= _funcs(program), _funcs(program)
    assert _uses(program, "tensor_tensor") and _uses(program, "tensor_scalar")


def check_reduce(program: Program) -> None:
    ops = {i.attrs.get("op") for i in _uses(program, "tensor_reduce", "dve")}
    assert {"max", "add"} <= ops, ops
    assert any(len(i.writes) == 2 for i in _uses(program, "activation", "act"))  # fused reduce result


def check_legacy_reduce(program: Program) -> None:
    check_reduce(program)
    assert "min" in {i.attrs.get("op") for i in _uses(program, "tensor_reduce")}
    assert any(i.attrs.get("negate") for i in _uses(program, "tensor_reduce"))


def check_tensor_ops(program: Program) -> None:
    engines = {i.engine for i in _uses(program, "tensor_scalar")}
    assert {"dve", "act", "pool"} <= engines, engines
    assert any(i.attrs.get("op1") == "add" for i in _uses(program, "tensor_scalar"))
    assert {i.attrs.get("op") for i in _uses(program, "tensor_tensor")} >= {"subtract", "max"}


def check_current_tensor_ops(program: Program) -> None:
    assert any(i.attrs.get("op1") == "add" for i in _uses(program, "tensor_scalar"))
    assert _uses(program, "tensor_tensor", op="subtract")
    assert _uses(program, "tensor_copy", "pool")


def check_iota(program: Program) -> None:
    assert _uses(program, "iota", "pool") and _uses(program, "memset")


def check_affine_select(program: Program) -> None:
    assert len(_uses(program, "affine_select", "pool")) == 1


def check_spmd(grid: tuple[int, ...]) -> Callable[[Program], None]:
    def check(program: Program) -> None:
        stores = [i for i in _ops(program) if i.is_dma and any(
            program.tensors[a.tensor].memory == MemoryKind.DRAM for a in i.writes)]
        assert len(stores) == prod(grid)   # one instance after another, each storing its block
        sources = [i.extras["x-source"] for i in stores]
        assert len({s["line"] for s in sources}) == 1   # one kernel line, every grid instance
    return check


def check_placed(program: Program) -> None:
    placed = [t for t in program.tensors.values() if t.memory != MemoryKind.DRAM and not t.is_virtual]
    assert len(placed) >= 3, placed
    assert any(t.memory == MemoryKind.PSUM for t in placed)


def _placements(program: Program, line: int) -> set[tuple[str, int, int | None]]:
    """Where the instructions of one kernel line write: (memory, byte offset, PSUM bank) of every
    slot, whether the loop was kept (a rotating tensor: one entry per slot) or unrolled (one
    placed tensor per slot)."""
    found = set()
    for inst in _ops(program):
        if inst.extras["x-source"]["line"] != line:
            continue
        for access in inst.writes:
            t = program.tensors[access.tensor]
            if t.rotate is None:
                found.add((t.memory.name, t.offset, t.bank))
            elif t.memory == MemoryKind.PSUM:
                found |= {("PSUM", 0, t.bank + k * t.rotate.stride // 2048) for k in range(t.rotate.slots)}
            else:
                found |= {("SBUF", t.offset + k * t.rotate.stride, None) for k in range(t.rotate.slots)}
    return found


def check_mod_alloc(program: Program) -> None:
    check_placed(program)
    text = (GROUP_KERNELS / "legacy_mod_alloc.py").read_text().splitlines()
    line = {key: next(n for n, s in enumerate(text, 1) if s.strip().startswith(key))
            for key in ("in_buf[t] =", "ps[t] =", "out_buf[t] =", "scaled[...] =")}
    tile = 128 * 4
    assert _placements(program, line["in_buf[t] ="]) == {("SBUF", k * tile, None) for k in range(3)}
    assert _placements(program, line["ps[t] ="]) == {("PSUM", 0, 2), ("PSUM", 0, 3)}
    assert _placements(program, line["scaled[...] ="]) == {("SBUF", 3 * tile, None)}
    assert _placements(program, line["out_buf[t] ="]) == {("SBUF", 4 * tile, None), ("SBUF", 5 * tile, None)}


def check_masks(program: Program) -> None:
    heights = {a.partitions[1] - a.partitions[0] for i in _ops(program) for a in i.writes
               if a.partitions is not None}
    assert 300 - 256 in heights, heights   # the masked last row tile
    assert 100 in heights, heights         # the mgrid store's partition mask


def check_printed_masks(program: Program) -> None:
    heights = {a.partitions[1] - a.partitions[0] for i in _ops(program) for a in i.writes
               if a.partitions is not None}
    assert 300 - 256 in heights, heights   # each operand's fresh arange bound by its mask's
    psum = [(i.op, i.attrs.get("accumulate")) for i in _ops(program)
            if any(program.tensors[w.tensor].memory == MemoryKind.PSUM for w in i.writes)]
    assert psum == [("matmul", False)] * 80  # every zeroing far ahead still opens its group


def check_lazy_blocks(program: Program) -> None:
    psum = [(i.op, i.attrs.get("accumulate")) for i in _ops(program)
            if any(program.tensors[w.tensor].memory == MemoryKind.PSUM for w in i.writes)]
    # block 0 overwritten: no zeroing; block 1's zeroing dropped (its matmul opens the group);
    # block 2, half written then read whole, keeps its zeroing, made when first used
    assert psum == [("matmul", False), ("matmul", False), ("memset", None), ("matmul", False)], psum


def check_wide_blocks(program: Program) -> None:
    # every array declared at the top is a tile per block, the first one too (it would fit
    # SBUF alone): the compiler gives each block its own live range
    sbuf = sorted(n for n, t in program.tensors.items() if t.memory == MemoryKind.SBUF)
    assert len(sbuf) == 24 and all("_b" in n for n in sbuf), sbuf
    wide = kernel_module(GROUP_KERNELS / "legacy_masks_printed.py").WIDE
    assert all(program.tensors[n].shape == (128, wide) for n in sbuf)


def check_ap(program: Program) -> None:
    strided = [a for i in _ops(program) if i.is_dma for a in (*i.reads, *i.writes)
               if program.tensors[a.tensor].memory == MemoryKind.DRAM and a.pattern and len(a.pattern) >= 2]
    assert strided


def check_misc(program: Program) -> None:
    """A DRAM scratch tensor the kernel writes and reads, a reciprocal, a fused scalar-reduce,
    a DMA transpose (DRAM source read transposed) and the identity as a constant input."""
    scratch = [n for n, t in program.tensors.items() if t.memory == MemoryKind.DRAM and t.role == "internal"]
    assert scratch, {n: t.role for n, t in program.tensors.items()}
    assert any(f == "gelu_apprx_sigmoid" for f in _funcs(program))
    assert _uses(program, "tensor_scalar", op0="divide") or _uses(program, "activation", func="reciprocal")
    assert any(i.is_dma and i.reads and program.tensors[i.reads[0].tensor].role == "input"
               and program.tensors[i.reads[0].tensor].shape == (128, 128) for i in _ops(program))


def check_dtypes(kinds: set[str]) -> Callable[[Program], None]:
    def check(program: Program) -> None:
        assert kinds <= {t.dtype for t in program.tensors.values()}, {t.dtype for t in program.tensors.values()}
    return check


@dataclass(frozen=True)
class GroupKernel:
    group: str
    file: str
    func: str
    check: Callable[[Program], None]
    inputs: str = "inputs"
    reference: str = "reference"
    grid: tuple[int, ...] | None = None
    tol: dict = field(default_factory=lambda: {"rtol": 1e-5, "atol": 1e-5})

    @property
    def id(self) -> str:
        return f"{self.file.removesuffix('.py')}::{self.func}"


LOOSE = {"rtol": 2e-2, "atol": 2e-2}
KERNELS = (
    GroupKernel("dma", "legacy_dma.py", "tensor_add", check_dma),
    GroupKernel("dma", "current_dma.py", "scaled_copy", check_current_dma),
    GroupKernel("matmul", "legacy_matmul.py", "matmul_tiled", check_legacy_matmul, tol={"rtol": 1e-4, "atol": 1e-4}),
    GroupKernel("matmul", "legacy_matmul.py", "pe_transpose", check_transpose, inputs="transpose_inputs",
                reference="transpose_reference"),
    GroupKernel("matmul", "current_matmul.py", "matmul_then_transpose", check_current_matmul,
                tol={"rtol": 1e-4, "atol": 1e-4}),
    GroupKernel("masks", "legacy_masks_printed.py", "lazy_blocks", check_lazy_blocks, inputs="lazy_inputs",
                reference="lazy_reference",
                tol={"rtol": 1e-4, "atol": 1e-4}),
    GroupKernel("masks", "legacy_masks_printed.py", "wide_blocks", check_wide_blocks, inputs="wide_inputs",
                reference="wide_reference"),
    GroupKernel("activation", "legacy_activation.py", "activations", check_legacy_activation),
    GroupKernel("activation", "current_activation.py", "activations", check_activation),
    GroupKernel("reduce", "legacy_reduce.py", "row_stats", check_legacy_reduce, tol={"rtol": 1e-5, "atol": 1e-4}),
    GroupKernel("reduce", "current_reduce.py", "row_stats", check_reduce, tol={"rtol": 1e-5, "atol": 1e-4}),
    GroupKernel("tensor-ops", "legacy_tensor_ops.py", "affine_mix", check_tensor_ops),
    GroupKernel("tensor-ops", "current_tensor_ops.py", "affine_mix", check_current_tensor_ops),
    GroupKernel("iota", "legacy_iota.py", "ramp_fill", check_iota),
    GroupKernel("iota", "current_iota.py", "ramp_fill", check_iota),
    GroupKernel("iota", "legacy_affine_select.py", "causal_mask", check_affine_select),
    GroupKernel("iota", "current_affine_select.py", "causal_mask", check_affine_select),
    GroupKernel("spmd", "legacy_spmd.py", "spmd_scale", check_spmd((4,)), grid=(4,)),
    GroupKernel("spmd", "current_spmd.py", "spmd_blocks", check_spmd((2, 3)), grid=(2, 3)),
    GroupKernel("alloc", "legacy_mod_alloc.py", "rotate_transpose", check_mod_alloc),
    GroupKernel("alloc", "current_address.py", "placed_halves", check_placed),
    GroupKernel("masks", "legacy_masks.py", "masked_rows", check_masks),
    GroupKernel("masks", "legacy_masks_printed.py", "printed_masks", check_printed_masks,
                tol={"rtol": 1e-4, "atol": 1e-4}),
    GroupKernel("ap", "current_ap.py", "strided", check_ap),
    GroupKernel("misc", "legacy_misc.py", "misc", check_misc, tol={"rtol": 1e-5, "atol": 1e-4}),
    GroupKernel("misc", "current_misc.py", "misc", check_misc, tol={"rtol": 1e-5, "atol": 1e-4}),
    GroupKernel("dtypes", "legacy_dtypes.py", "mixed_precision", check_dtypes({"bfloat16", "float8_e4m3"}), tol=LOOSE),
    GroupKernel("dtypes", "current_dtypes.py", "casts", check_dtypes({"float8_e5m2", "bfloat16", "float16"}),
                tol={"rtol": 1e-3, "atol": 1e-3}),
)


def test_every_group_has_kernels_of_both_generations():
    by_group: dict[str, set[str]] = {}
    for k in KERNELS:
        by_group.setdefault(k.group, set()).add(k.file.split("_")[0])
    # masks are legacy-only and .ap current-only (the reference's table of the two generations)
    assert {g for g, gens in by_group.items() if gens != {"legacy", "current"}} == {"masks", "ap"}
    listed = {k.file for k in KERNELS}
    assert listed <= {p.name for p in GROUP_KERNELS.glob("*.py")}


@pytest.mark.parametrize("kernel", KERNELS, ids=[k.id for k in KERNELS])
def test_group_kernel_runs_and_matches_numpy(kernel):
    path = GROUP_KERNELS / kernel.file
    module = kernel_module(path)
    arrays = getattr(module, kernel.inputs)(0)
    extra = {"grid": kernel.grid} if kernel.grid else {}
    traced = trace_file(path, kernel.func, arrays, **extra)

    # every instruction says where it came from: this file, a line of it, the NKI call
    lines = len(path.read_text().splitlines())
    for inst in instructions(traced.program):
        src = inst.extras["x-source"]
        assert Path(src["file"]).name == kernel.file and 1 <= src["line"] <= lines, (inst.name, src)
        assert src["call"].split(".")[0] in {"nl", "nisa", "nki"}, src
    kernel.check(traced.program)

    reference = getattr(module, kernel.reference)
    wanted = reference(**{k: arrays[k] for k in inspect.signature(reference).parameters})
    assert sorted(traced.outputs) == sorted(wanted)
    inputs = {n: v for n, v in traced.inputs.items() if n not in wanted}
    run = run_program(kernel.id, traced.program, inputs, lambda _values: wanted, **kernel.tol)
    assert run.problems() == [], run.problems()[:5]
    for name, value in wanted.items():
        assert close(run.outputs[name], value, **kernel.tol), name


def _nests(count: int) -> str:
    """A kernel of ``count`` loop nests on lines of their own, each loading into a block array
    bigger than a partition indexed by its loop's variable (each nest unrolls), then a plain
    tiled copy loop that may stay a loop."""
    lines = ["import numpy as np", "import neuronxcc.nki as nki", "import neuronxcc.nki.language as nl", "",
             "@nki.jit", "def kernel(x):",
             "    out = nl.ndarray((256, 64), dtype=np.float32, buffer=nl.shared_hbm)"]
    for k in range(count):
        lines += [f"    big{k} = nl.ndarray((2, nl.par_dim(128), 32768), dtype=np.float32, buffer=nl.sbuf)",
                  f"    for i{k} in nl.affine_range(2):",
                  f"        big{k}[i{k}, nl.arange(128)[:, None], nl.arange(64)[None, :]] = nl.load(",
                  f"            x[128 * i{k} + nl.arange(128)[:, None], nl.arange(64)[None, :]])"]
    lines += ["    for j in nl.affine_range(2):",
              "        tile = nl.load(x[128 * j + nl.arange(128)[:, None], nl.arange(64)[None, :]])",
              "        nl.store(out[128 * j + nl.arange(128)[:, None], nl.arange(64)[None, :]], value=tile)",
              "    return out", ""]
    return "\n".join(lines)


@pytest.mark.parametrize("count, kept", [(2, 1), (11, 0)])
def test_nest_after_nest_of_unrolled_loops_unrolls_every_loop_from_the_tenth(tmp_path, count, kept):
    """A printed kernel whose nests each make their loop unroll restarts the trace once per nest;
    from the tenth restart every loop is unrolled (the copy loop at the end too), as the nests
    after it would be one by one."""
    path = tmp_path / f"nests{count}.py"
    path.write_text(_nests(count))
    x = np.random.default_rng(0).normal(size=(256, 64)).astype(np.float32)
    traced = trace(load_kernel(f"{path}::kernel"), x)
    assert sum(isinstance(node, Loop) for node, _ in traced.program.walk()) == kept
    run = run_program(f"nests{count}", traced.program, dict(traced.inputs), lambda _v: {"return0": x})
    assert run.problems() == [] and close(run.outputs["return0"], x, rtol=0, atol=0)


def test_block_arrays_wider_than_sbuf_together_compile_without_spills():
    """Three arrays of 128 KiB a partition declared at the top, one block of each live at a
    time: as tiles per block the kernel fits SBUF, and the compiled program spills nothing
    (kept whole, the first array held 128 KiB for the whole kernel)."""
    from neuronsim.passes import run_pipeline
    from neuronsim.passes.schedule import TRACED_PIPELINE

    path = GROUP_KERNELS / "legacy_masks_printed.py"
    traced = trace_file(path, "wide_blocks", kernel_module(path).wide_inputs(0))
    compiled = run_pipeline(traced.program, TRACED_PIPELINE)
    assert not [i.name for i in instructions(compiled) if "x-spill" in i.extras]
    assert not [n for n in compiled.tensors if "_spill" in n]
