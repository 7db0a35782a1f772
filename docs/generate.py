"""Write the generated documentation: ``docs/op-table.md``, ``docs/schema/program.schema.json``
and ``docs/api.md``.

    .venv/bin/python docs/generate.py            # rewrite both files
    .venv/bin/python docs/generate.py --check    # exit 1 when a committed file is stale

Both come from the code, so they cannot drift from it (``tests/unit/test_docs.py`` runs
``--check``):

* the op table from :data:`neuronsim.machine.model.optable.OP_TABLE` (engines, operand counts, attributes
  and their validators), the two tables in the docstrings of :mod:`neuronsim.machine.model.optable` (operand
  roles, cost formula) and :mod:`neuronsim.machine.model.semantics` (numerical meaning), and cost figures
  computed by :func:`neuronsim.machine.model.cost.instruction_cost` on a fixed operand size;
* the API reference (``docs/api.md``) from the docstrings of what :mod:`docs.api_page` lists;
* the JSON Schema's op-specific rules (engines, operand counts, attributes per op) from the
  same table; the rest of the schema (:mod:`docs.schema_parts`) follows the loader,
  :mod:`neuronsim.machine.formats.program_json`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from neuronsim.machine.model import optable, semantics  # noqa: E402
from neuronsim.machine.model.cost import instruction_cost  # noqa: E402
from neuronsim.machine.ir.program import Access, Instruction, MemoryKind, Tensor  # noqa: E402
from neuronsim.machine.model.opcodes import opcode_of  # noqa: E402
from neuronsim.machine.model.optable import COMMON_ATTRS, ISA_COSTS, OP_TABLE  # noqa: E402
from neuronsim.machine.model.presets import PRESETS  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from api_page import api_page  # noqa: E402
from schema_parts import program_schema  # noqa: E402

OP_TABLE_PAGE = ROOT / "docs" / "op-table.md"
SCHEMA_FILE = ROOT / "docs" / "schema" / "program.schema.json"
API_PAGE = ROOT / "docs" / "api.md"
#: Free elements per partition of the operands the cost figures are computed for.
EXAMPLE_N = 512


def rst_table(docstring: str) -> dict[str, list[str]]:
    """Rows of the first RST simple table in ``docstring`` (with or without a header): first
    cell (``op`` unquoted) -> the other cells, continuation lines joined.

    >>> rst_table('''
    ... ==  ====
    ... a   b
    ... ==  ====
    ... x   one
    ...     two
    ... ==  ====''')
    {'x': ['one two']}
    """
    lines = docstring.splitlines()
    borders = [k for k, line in enumerate(lines) if re.fullmatch(r"=+( +=+)+", line.strip())]
    if len(borders) < 2:
        raise ValueError("no RST simple table found")
    first, last = (borders[1], borders[2]) if len(borders) >= 3 else (borders[0], borders[1])
    spans = [(m.start(), m.end()) for m in re.finditer(r"=+", lines[borders[0]])]
    rows: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines[first + 1:last]:
        cells = [line[a:b if k + 1 < len(spans) else None].strip() for k, (a, b) in enumerate(spans)]
        if cells[0]:
            key = cells[0].strip("`")
            current = rows.setdefault(key, [""] * (len(spans) - 1))
        if current is None:
            continue
        for k, cell in enumerate(cells[1:]):
            if cell:
                current[k] = f"{current[k]} {cell}".strip()
    return rows


def _validator_text(check) -> str:
    choices = getattr(check, "choices", None)
    if choices is not None:
        return "one of " + ", ".join(f"`{c}`" for c in choices)
    return (check.__doc__ or "").strip()


def _example_tensors() -> dict[str, Tensor]:
    n, bf16 = EXAMPLE_N, "bfloat16"
    return {
        "a": Tensor("a", MemoryKind.SBUF, bf16, (128, n), partition=0, offset=0),
        "b": Tensor("b", MemoryKind.SBUF, bf16, (128, n), partition=0, offset=4 * n),
        "w": Tensor("w", MemoryKind.SBUF, bf16, (128, 128), partition=0, offset=8 * n),
        "col": Tensor("col", MemoryKind.SBUF, bf16, (128, 1), partition=0, offset=12 * n),
        "acc": Tensor("acc", MemoryKind.PSUM, "float32", (128, n), partition=0, bank=0, offset=0),
        "hbm": Tensor("hbm", MemoryKind.DRAM, bf16, (128, n), address=0),
    }


def _example_operands(op: str, engine: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if op == "dma_copy":
        return ("hbm",), ("a",)
    if op == "matmul":
        return ("w", "a"), ("acc",)
    if op == "transpose" and engine == "pe":
        return ("w",), ("acc",)
    spec = OP_TABLE[op]
    reads = ("a", "b")[: max(spec.reads[0], 1 if spec.reads[1] else 0)]
    if op == "tensor_reduce":
        return reads, ("col",)
    return reads, ("b",)[: spec.writes[1]]


def _md(text: str) -> str:
    """RST inline literals as Markdown ones."""
    return text.replace("``", "`")


def opaque_costs() -> str:
    """What an opaque compute op costs per engine on the example operands, computed."""
    tensors, parts = _example_tensors(), []
    for engine in ("act", "dve", "pool"):
        instr = Instruction("x", engine, "custom_kernel", (Access("a"),), (Access("b"),))
        cost = instruction_cost(instr, tensors, PRESETS["trn1"])
        parts.append(_compute_figure(engine, cost))
    return "; ".join(parts)


def _compute_figure(engine: str, cost) -> str:
    return (f"{engine}: {cost.cycles:,.0f} cycles = {cost.duration_ns:,.1f} ns, "
            f"result after {cost.result_ns:,.1f} ns")


def example_costs(op: str) -> str:
    """What ``op`` costs per engine on ``[128, EXAMPLE_N]`` bf16 operands (trn1), computed."""
    tensors, parts = _example_tensors(), []
    for engine in OP_TABLE[op].engines:
        reads, writes = _example_operands(op, engine)
        instr = Instruction("x", engine, op, tuple(Access(t) for t in reads), tuple(Access(t) for t in writes),
                            queue="dma0" if op.startswith("dma") else None)
        cost = instruction_cost(instr, tensors, PRESETS["trn1"])
        if op.startswith("dma"):
            share = max(data for _e, data, _hold in cost.shares)
            parts.append(f"{engine}: trigger {cost.issue_ns:,.1f} ns, transfer of {cost.bytes:,} B: latency "
                         f"{cost.latency_ns:,.0f} ns, then {len(cost.shares)} engines x {share:,.1f} ns")
        else:
            parts.append(_compute_figure(engine, cost))
    return "; ".join(parts)


def _opcodes(op: str, codes: list[int]) -> str:
    if not codes:
        return "-"
    if op == "transpose":
        return f"{codes[0]} (on pe)"
    return ", ".join(map(str, codes))


def op_table_page() -> str:
    """The text of ``docs/op-table.md``."""
    table, meaning = rst_table(optable.__doc__), rst_table(semantics.__doc__)
    out = [
        "# Op table",
        "",
        "<!-- generated by docs/generate.py from machine/model/optable.py, machine/model/semantics.py and "
        "machine/model/cost.py;"
        " do not edit by hand -->",
        "",
        "Every op the project knows: which sequencers may issue it, what it reads and writes, its attributes",
        "(an unknown attribute of a known op is an error; `x-` attributes are kept and ignored), what it",
        "computes and what it costs.  Any other op name is an *opaque* op (last section).  Costs are element",
        "costs in engine cycles, `N` the free elements per partition; the engine is occupied for them (ACT / DVE:",
        "at least `min_ii_cycles`), and a dependent instruction starts once the engine's fixed overhead and the",
        "result latency have passed too (\"result after\").  The figures are computed on",
        f"`[128, {EXAMPLE_N}]` bfloat16 operands on trn1 (PE 2.8 GHz, ACT and POOL 1.4 GHz, DVE 1.12 GHz).",
        "Sources: the docstrings of `machine/model/optable.py`, `machine/model/semantics.py` and",
        "`machine/model/cost.py`, sections of `docs/machine-model.md` cited there, and every timing constant",
        "with its public page in [the timing model](timing.md).",
        "",
        "The BIR opcode column is the number the seeds' opcode gates see (`machine/model/opcodes.py`; an",
        "instruction's `x-opcode` overrides it, and only `x-opcode` gives 10, 23 or 41; see `docs/seeds.md`).",
        "",
        "| op | engines | reads | writes | BIR opcode |",
        "|---|---|---|---|---|",
    ]
    for name, spec in OP_TABLE.items():
        codes = sorted({c for e in spec.engines if (c := opcode_of(Instruction("x", e, name))) is not None})
        out.append(f"| [`{name}`](#{name}) | {', '.join(spec.engines)} | {spec.reads[0]}..{spec.reads[1]} "
                   f"| {spec.writes[0]}..{spec.writes[1]} | {_opcodes(name, codes)} |")
    for name, spec in OP_TABLE.items():
        if name not in table or name not in meaning:
            raise ValueError(f"op {name!r} has no row in the docstring tables of neuronsim.machine.model.optable / "
                             "neuronsim.machine.model.semantics")
        _engines, operands, cost = (_md(cell) for cell in table[name])
        attrs = {**spec.attrs, **COMMON_ATTRS}
        out += ["", f"## {name}", "", f"- **engines**: {', '.join(f'`{e}`' for e in spec.engines)}",
                f"- **operands** (reads -> writes): {operands}",
                "- **attributes**: " + "; ".join(f"`{key}`: {_validator_text(check)}" for key, check in attrs.items()),
                f"- **computes**: {spec.doc}",
                f"- **details**: {_md(meaning[name][0])}",
                f"- **cost**: {cost}",
                f"- **at N = {EXAMPLE_N}**: {example_costs(name)}"]
    out += ["", "## Opaque ops", "",
            "Any op name that is not in the table above is accepted as an opaque op, so that programs from any",
            "compiler can be simulated and race-checked.  It may run on any sequencer (a name starting with `dma`",
            "makes it a DMA, with a `queue`), takes any number of reads and writes, and accepts any attributes,",
            "ignoring all but `cycles` (a non-negative integer) and, in its cost, a DMA's `dge` and the",
            "`op0` / `op1` of `scalar_tensor_tensor`.",
            "",
            "- **computes**: write `i` receives bytes drawn uniformly from `[0, 64)` by a PCG64 stream seeded",
            "  with BLAKE2b of the op name, `i` and every byte it reads: a deterministic function of its reads",
            "  and its name, finite in every float dtype (`neuronsim.machine.model.semantics.opaque_bytes`).",
            "- **cost**: the `cycles` attribute, else `max(64, N)` cycles on any engine, with no POOL start",
            "  overhead; an op named after an `nki.isa` instruction costs that instruction's estimate:",
            "  " + ", ".join(f"`{name}`" for name in ISA_COSTS) + " (`neuronsim.machine.model.optable.ISA_COSTS`).",
            "  An opaque DMA costs what `dma_copy` does, its `dge` attribute included.",
            f"- **at N = {EXAMPLE_N}**: {opaque_costs()}",
            ""]
    return "\n".join(out)


def schema_text() -> str:
    return json.dumps(program_schema(), indent=1) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write docs/op-table.md, docs/schema/program.schema.json and "
                                                 "docs/api.md.")
    parser.add_argument("--check", action="store_true", help="exit 1 when a committed file differs from the code")
    args = parser.parse_args(argv)
    stale = []
    for path, text in ((OP_TABLE_PAGE, op_table_page()), (SCHEMA_FILE, schema_text()), (API_PAGE, api_page())):
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(path.relative_to(ROOT))
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)}")
    for path in stale:
        print(f"{path} is stale: run python docs/generate.py", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
