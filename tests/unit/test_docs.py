"""The documentation stays true: generated pages are current, the example pass runs, fuzzes
and registers as ``docs/writing-a-pass.md`` says, the shipped examples report exactly their
races through the CLI, and relative links in the docs lead somewhere."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib

import pytest
from click.testing import CliRunner

from neuronsim_tests.docs_kit import ROOT, load_script
from neuronsim.verify.cli import cli
from neuronsim.verify.fuzz import check_pass

CLI = [sys.executable, "-c", "from neuronsim.verify.cli import main; main()"]
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
# the example pass is a user's file, not a module of the package: loaded by path
_COLLAPSE = load_script("examples/collapse_waits.py")
CollapseWaits, CollapseWaitsBySequencer = _COLLAPSE.CollapseWaits, _COLLAPSE.CollapseWaitsBySequencer


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)


def test_op_table_page_lists_every_op_with_a_computed_cost():
    from neuronsim.machine.model.optable import OP_TABLE

    page = (ROOT / "docs" / "op-table.md").read_text()
    for name in OP_TABLE:
        assert f"\n## {name}\n" in page
    assert page.count("- **at N = 512**:") == len(OP_TABLE) + 1   # the opaque section too
    assert "matmul" in page and "pe: 512 cycles = 182.9 ns" in page   # max(min(64, 128), 512) at 2.8 GHz


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_check_reports_exactly_the_races_of_each_example(path):
    run = _cli("check", str(path.relative_to(ROOT)), "--json")
    want = {tuple(line.split()) for line in path.with_suffix(".races").read_text().splitlines() if line.strip()}
    assert run.returncode == (1 if want else 0), run.stderr
    got = {(r["kind"], r["first"], r["second"]) for r in json.loads(run.stdout)["races"]}
    assert got == want


def test_example_pass_is_sound_and_its_planted_bug_is_found():
    sound = check_pass(CollapseWaits(), replace="dep-reduction", examples=40, seed=0)
    assert sound.failure is None and sound.examples == 40
    buggy = check_pass(CollapseWaitsBySequencer(), replace="dep-reduction", examples=200, seed=0, shrink=False)
    assert buggy.failure is not None and buggy.failure.check == "races", "the fuzzer missed the planted bug"


def test_example_pass_fuzzes_from_the_command_line(tmp_path):
    run = _cli("fuzz", "--pass", "examples.collapse_waits:CollapseWaits", "--replace", "dep-reduction",
               "--examples", "25", "--seed", "3", "--workers", "1", "--out", str(tmp_path), "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["examples"] == 25


def test_a_pass_registered_by_entry_point_runs_in_passes(tmp_path):
    """An installed package's ``neuronsim.passes`` entry point makes its pass a pipeline name."""
    dist = tmp_path / "neuronsim_demo_passes-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: neuronsim-demo-passes\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[neuronsim.passes]\ncollapse-waits = "
                                           "examples.collapse_waits:CollapseWaits\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    out = tmp_path / "out.json"
    run = _cli("compile", "scenarios/flash_attention.json", "-o", str(out), "--passes",
               "alloc,build-fdeps,anti-deps,collapse-waits", "--json", env=env)
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert [p["pass"] for p in doc["passes"]][-1] == "collapse-waits"
    assert doc["deps"]["deps"] < doc["passes"][-2]["deps_after"]  # the plugged-in pass ran and dropped deps
    unknown = _cli("compile", "scenarios/flash_attention.json", "-o", str(out), "--passes", "collapse-waits")
    assert unknown.returncode == 2 and "unknown pass 'collapse-waits'" in unknown.stderr


def test_relative_links_in_the_docs_lead_to_files():
    pages = [ROOT / "README.md", ROOT / "examples" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    checked = 0
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" in target:
                continue
            assert (page.parent / target).exists(), f"{page.relative_to(ROOT)} links to missing {target}"
            checked += 1
    assert checked >= 5


def test_format_page_names_every_machine_parameter_and_project_x_key():
    from neuronsim.machine.model.presets import OVERRIDABLE, PRESETS

    page = (ROOT / "docs" / "program-format.md").read_text()
    for key in OVERRIDABLE:
        assert f"| `{key}` |" in page, key
    for preset in PRESETS:
        assert f'"{preset}"' in page
    used = set()
    for folder in ("machine", "passes", "verify"):
        for path in (ROOT / folder).rglob("*.py"):
            used |= set(re.findall(r'"(x-[a-z-]+)"', path.read_text()))
    assert used and all(f"| `{key}` |" in page for key in used), used


def test_api_page_documents_every_listed_name_and_the_version_is_printed():
    import sys as _sys

    _sys.path.insert(0, str(ROOT / "docs"))
    from api_page import API

    page = (ROOT / "docs" / "api.md").read_text()
    for module, names, _ in API:
        for name in names:
            assert f"### `{module}.{name}`" in page
    assert "(no docstring)" not in page
    result = CliRunner().invoke(cli, ["--version"])
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert result.exit_code == 0 and result.stdout.startswith(f"neuronsim {version}")
    assert "Apache License" in (ROOT / "LICENSE").read_text() and "Apache-2.0" in (ROOT / "pyproject.toml").read_text()
