"""Write the generated documentation: ``docs/op-table.md`` and ``docs/schema/program.schema.json``.

    .venv/bin/python docs/generate.py            # rewrite both files
    .venv/bin/python docs/generate.py --check    # exit 1 when a committed file is stale

Both come from the code, so they cannot drift from it (``tests/unit/test_docs.py`` runs
``--check``):

* the op table from :data:`machine.optable.OP_TABLE` (engines, operand counts, attributes
  and their validators), the two tables in the docstrings of :mod:`machine.optable` (operand
  roles, cost formula) and :mod:`machine.semantics` (numerical meaning), and cost figures
  computed by :func:`machine.cost.instruction_cost` on a fixed operand size;
* the JSON Schema's op-specific rules (engines, operand counts, attributes per op) from the
  same table; the rest of the schema (:mod:`docs.schema_parts`) follows the loader,
  :mod:`machine.format`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from machine import optable, semantics  # noqa: E402
from machine.cost import instruction_cost  # noqa: E402
from machine.ir import Access, Instruction, MemoryKind, Tensor  # noqa: E402
from machine.opcodes import opcode_of  # noqa: E402
from machine.optable import COMMON_ATTRS, OP_TABLE  # noqa: E402
from machine.presets import PRESETS  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from schema_parts import program_schema  # noqa: E402

OP_TABLE_PAGE = ROOT / "docs" / "op-table.md"
SCHEMA_FILE = ROOT / "docs" / "schema" / "program.schema.json"
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
        parts.append(f"{engine}: {cost.cycles:,.0f} cycles = {cost.duration_ns:,.1f} ns")
    return "; ".join(parts)


def example_costs(op: str) -> str:
    """What ``op`` costs per engine on ``[128, EXAMPLE_N]`` bf16 operands (trn1), computed."""
    tensors, parts = _example_tensors(), []
    for engine in OP_TABLE[op].engines:
        reads, writes = _example_operands(op, engine)
        instr = Instruction("x", engine, op, tuple(Access(t) for t in reads), tuple(Access(t) for t in writes),
                            queue="dma0" if op.startswith("dma") else None)
        cost = instruction_cost(instr, tensors, PRESETS["trn1"])
        if op.startswith("dma"):
            parts.append(f"{engine}: trigger {cost.issue_ns:,.1f} ns, transfer of {cost.bytes:,} B {cost.duration_ns:,.1f} ns")
        else:
            parts.append(f"{engine}: {cost.cycles:,.0f} cycles = {cost.duration_ns:,.1f} ns")
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
        "<!-- generated by docs/generate.py from machine/optable.py, machine/semantics.py and machine/cost.py;"
        " do not edit by hand -->",
        "",
        "Every op the project knows: which sequencers may issue it, what it reads and writes, its attributes",
        "(an unknown attribute of a known op is an error; `x-` attributes are kept and ignored), what it",
        "computes and what it costs.  Any other op name is an *opaque* op (last section).  Costs are in",
        f"engine cycles, `N` the free elements per partition; the figures are computed on `[128, {EXAMPLE_N}]`",
        "bfloat16 operands on trn1 (PE 2.8 GHz, ACT and POOL 1.4 GHz, DVE 1.12 GHz).  Sources: the docstrings",
        "of `machine/optable.py`, `machine/semantics.py` and `machine/cost.py`, and sections of",
        "`neuron-machine.md` cited there.",
        "",
        "The BIR opcode column is the number the seeds' opcode gates see (`machine/opcodes.py`; an",
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
            raise ValueError(f"op {name!r} has no row in the docstring tables of machine.optable / machine.semantics")
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
            "ignoring all but `cycles` (a non-negative integer).",
            "",
            "- **computes**: write `i` receives bytes drawn uniformly from `[0, 64)` by a PCG64 stream seeded",
            "  with BLAKE2b of the op name, `i` and every byte it reads: a deterministic function of its reads",
            "  and its name, finite in every float dtype (`machine.semantics.opaque_bytes`).",
            "- **cost**: the `cycles` attribute, else `max(64, N)` cycles on any engine, with no POOL start",
            "  overhead; an opaque DMA costs what `dma_copy` does (without DGE).",
            f"- **at N = {EXAMPLE_N}**: {opaque_costs()}",
            ""]
    return "\n".join(out)


def schema_text() -> str:
    return json.dumps(program_schema(), indent=1) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write docs/op-table.md and docs/schema/program.schema.json.")
    parser.add_argument("--check", action="store_true", help="exit 1 when a committed file differs from the code")
    args = parser.parse_args(argv)
    stale = []
    for path, text in ((OP_TABLE_PAGE, op_table_page()), (SCHEMA_FILE, schema_text())):
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
