"""Issue #27 part 2: every JSON document neuronsim writes is strict JSON, through one writer.

:func:`neuronsim.machine.formats.jsonio.dumps_strict` is the product's only JSON writer: a scan of
the installed packages' sources finds no other ``json.dump`` / ``json.dumps`` call (however
``json`` or its functions were imported), and a planted one is found.  Behaviour: a
non-finite figure is written as ``null`` (``--json`` documents, traces, footprints, the HTML
templates' ``tojson``); a program keeps a non-finite attribute as its string (``"inf"``), and
a writer of documents neuronsim reads back may refuse one instead of writing ``null``.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import json
import math
from pathlib import Path

import pytest

from neuronsim.machine.formats.program_json import load_program, save_program
from neuronsim.machine.formats.jsonio import dumps_strict
from neuronsim.verify.cli.common import emit_json

#: The one module allowed to call :mod:`json`'s writers.
WRITER = "machine/formats/jsonio.py"
PACKAGES = ("neuronsim.machine", "neuronsim.passes", "neuronsim.verify", "neuronsim.scenarios")


def json_writes(source: str) -> list[int]:
    """Lines of ``source`` that call :mod:`json`'s ``dump`` / ``dumps`` or make a
    ``JSONEncoder``, whatever name the module or function was imported under."""
    tree = ast.parse(source)
    modules, functions = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {alias.asname or alias.name for alias in node.names if alias.name == "json"}
        elif isinstance(node, ast.ImportFrom) and node.module in ("json", "json.encoder"):
            functions |= {alias.asname or alias.name for alias in node.names
                          if alias.name in ("dump", "dumps", "JSONEncoder")}
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in modules \
                and func.attr in ("dump", "dumps", "JSONEncoder"):
            lines.append(node.lineno)
        elif isinstance(func, ast.Name) and func.id in functions:
            lines.append(node.lineno)
    return sorted(lines)


def _product_sources() -> dict[str, Path]:
    """Every Python file of the installed packages, by its path from the checkout root."""
    out = {}
    for package in PACKAGES:
        folder = Path(importlib.import_module(package).__file__).parent
        root = folder.parent
        out.update({str(path.relative_to(root)): path for path in folder.rglob("*.py")})
    return out


def test_the_product_writes_json_only_through_the_strict_writer() -> None:
    sources = _product_sources()
    assert WRITER in sources and len(sources) > 100  # the scan saw the packages, not nothing
    found = {name: lines for name, path in sources.items() if name != WRITER
             and (lines := json_writes(path.read_text(encoding="utf-8")))}
    assert not found, f"json.dump(s) outside {WRITER} (use dumps_strict): {found}"


@pytest.mark.parametrize("planted", [
    "import json\njson.dumps({'a': 1})\n",
    "import json as j\n\nj.dump({}, open('x', 'w'))\n",
    "from json import dumps as d\nd(float('nan'))\n",
    "import json\njson.JSONEncoder(allow_nan=True)\n",
])
def test_a_planted_writer_is_found(planted: str) -> None:
    assert json_writes(planted) == [planted.rstrip().count("\n") + 1]


def test_the_strict_writer_itself_is_not_flagged_elsewhere() -> None:
    assert json_writes("from neuronsim.machine.formats.jsonio import dumps_strict\ndumps_strict({})\n") == []


def _strict(text: str):
    return json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in a JSON output"))


def test_non_finite_figures_are_written_as_null() -> None:
    text = dumps_strict({"makespan_ns": math.inf, "runs": [1.5, -math.inf, math.nan], "pair": (math.nan, 2)}, indent=1)
    assert _strict(text) == {"makespan_ns": None, "runs": [1.5, None, None], "pair": [None, 2]}


def test_a_json_document_on_standard_output_is_strict(capsys: pytest.CaptureFixture) -> None:
    emit_json({"format": "neuronsim.simulation/1", "dma_gb_per_s": math.inf, "error": math.nan})
    assert _strict(capsys.readouterr().out) == {"format": "neuronsim.simulation/1", "dma_gb_per_s": None,
                                                "error": None}


def test_the_html_templates_tojson_is_strict() -> None:
    from neuronsim.nki.pages import _template
    from neuronsim.verify.app.html_report import _environment

    for env in (_environment(), _template().environment):
        assert _strict(env.from_string("{{ x|tojson }}").render(x={"a": math.nan, "b": [math.inf]})) == \
            {"a": None, "b": [None]}


def test_a_program_with_a_non_finite_attribute_is_written_as_strict_json(tmp_path: Path) -> None:
    program = load_program(str(Path(importlib.import_module("neuronsim.scenarios").__file__).parent
                               / "matmul_tiled.json"))
    broken = program.map_instructions(lambda inst: dataclasses.replace(inst, attrs={**inst.attrs, "scale": math.inf}))
    target = tmp_path / "p.json"
    save_program(broken, str(target))
    _strict(target.read_text())


def test_a_document_read_back_refuses_a_non_finite_value_rather_than_null() -> None:
    with pytest.raises(ValueError, match="not JSON compliant"):
        dumps_strict({"cost": math.nan}, refuse_non_finite=True)
    assert dumps_strict({"cost": 1.5}, refuse_non_finite=True) == '{"cost": 1.5}'
