"""The NKI frontend's modules import in one direction: the tracer (the recording core) knows no
NKI operation, the tile proxies know the calls their operators stand for only through the table
``nki.language`` fills, and so on up to the loader (docs in each module's docstring)."""

from __future__ import annotations

from pathlib import Path

from neuronsim_tests.house_imports import import_edges, module_files

PACKAGE = "neuronsim.machine.nki"

#: From the bottom up: a module may import only the modules before it.  A new module goes into
#: this list where its imports put it.
LAYERS = (
    "errors", "dtypes",
    "index_fit",  # the affine expression an index vector's quotient or remainder is (numpy alone)
    "indexing", "vector_index", "layout", "tensor_views",  # values: no tracer
    "frames",  # the loop indices in force, read from the kernel's frames
    "kernel_frames",  # which frames of a failure are the kernel's own code (where its mistake is said)
    "cores",  # the two cores of an LNC=2 kernel: instances as threads handing one baton
    "groups",  # a rewrite of the traced program (PSUM groups), no tracer
    "keywords",  # which keywords a call does not take misspell one it does (no tracer)
    "compile_config",  # nki.compiler's per-kernel configuration and its enums (no tracer)
    "optional_imports",  # which imports of a package not installed the user's code expects to fail
    "loop_exit",  # a legacy loop body ending in return / break, compiled again as NKI reads it
    "scopes", "legacy_rules",  # the legacy errors page's rules on a kernel as a whole (no tracer)
    "hbm",  # HBM tensors by declaration: shared by a kernel's instances or each one's own (no tracer)
    "kernel_range",  # a legacy kernel's Python range: a sequential loop's iterations marked (no tracer)
    "loop_state",  # Python state a once-traced legacy loop body carries (no tracer)
    "mask_boxes",  # where a masked call's instructions go: one per box of its mask (no tracer)
    "masked_access",  # t[...][cond]: an operand carrying a mask its call joins to mask= (no tracer)
    "unrun",  # compiled loop bodies that ran no iteration (checked by a second trace; no tracer)
    "liveness",  # which on-chip tiles the kernel can still reach (device reads reuse the rest; no tracer)
    "tracer",  # the recording core: loops, sites, pending results
    "device_values",  # tile contents read back at a point of the trace (decisions)
    "indirect",  # indirect DMA: a tile of row numbers as a DMA's index
    "reinterpret",  # views reading a tensor's bytes as another dtype (.view, .ap(dtype=))
    "schedule",  # instruction handles and the order edges between them (with_schedule)
    "alloc",  # buffers and tile declarations
    "tiles",  # proxies; their operators dispatch through tiles.OPERATORS
    "outside",  # views past a tensor's end, refused where an instruction accesses them (a mask may keep nothing)
    "ops",  # lowering to builder instructions
    "operand_rules",  # the API pages' rules on an ISA call's operands (patterns, shapes, GpSimd off PSUM)
    "handles",  # an ISA call's instructions and its NkiInstruction handle (emit_call)
    "spmd_loops", "arith", "language",  # nki.language (language registers the tile operators)
    "scalars", "control",  # device values (scalar_load, registers) and compiled control flow
    "grids",  # NKI 0.7 tile and block grids: views of tensors in tile coordinates
    "emitters_select", "transpose_dma", "emitters",  # instruction emitters (search/shuffle/select ones first)
    "mx",  # quantize_mx and nc_matmul_mx (packed MX tiles)
    "ranks",  # nki.collectives across ranks (meetings of the ranks' threads, machine/nki/cores.py)
    "isa_select", "isa", "legacy", "lang_names",  # nki.isa and the legacy API
    "arguments",  # a kernel's numpy arguments as HBM tensors (by position, name or **kwargs)
    "kernel", "standins", "frontend", "loader",
    "watch",  # a kernel's import and trace under a timer: progress lines, a loop without NKI calls stopped
    "",  # "" is the package's __init__
)


def _short(module: str) -> str:
    return module[len(PACKAGE) + 1:] if module != PACKAGE else ""


def upward_imports(edges: set[tuple[str, str]]) -> list[str]:
    """``a -> b`` for every import of the package's module ``b`` by one ``a`` below it."""
    rank = {name: k for k, name in enumerate(LAYERS)}
    ours = [(a, b) for a, b in edges if (a + ".").startswith(PACKAGE + ".") and (b + ".").startswith(PACKAGE + ".")]
    return sorted(f"{_short(a)} -> {_short(b)}" for a, b in ours if rank[_short(b)] >= rank[_short(a)])


def test_every_module_has_a_layer() -> None:
    modules = {_short(m) for m in module_files() if (m + ".").startswith(PACKAGE + ".")}
    assert modules == set(LAYERS)


def test_modules_import_only_the_layers_below() -> None:
    assert upward_imports(import_edges()) == []


def test_a_planted_upward_import_is_seen(tmp_path: Path) -> None:
    # a function-local import counts as much as one at the top of the file
    planted = tmp_path / "tracer.py"
    planted.write_text("def zero(dst):\n    from neuronsim.machine.nki.ops import memset\n    memset(dst, 0.0)\n")
    modules = module_files()
    modules[f"{PACKAGE}.tracer"] = planted
    assert upward_imports(import_edges(modules)) == ["tracer -> ops"]


def test_the_tile_operators_are_language_calls() -> None:
    from neuronsim.machine.nki import language, tiles

    assert tiles.OPERATORS["assign"] is language.assign
    assert tiles.OPERATORS["accumulate"] is language.accumulate
    assert tiles.OPERATORS["add"] is language.add
    assert tiles.OPERATORS["transpose"] is language.transpose
