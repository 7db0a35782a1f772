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


#: What the fuzzer drew (a session's stronger program mix): a copy in loop L1 waits for matmul3,
#: before the loop, and for matmul5 of the loop in its second iteration only (x-iterations).
LIMITED_DEP = (
    '{"format":"neuronsim.program/1","machine":"trn1","tensors":{"sb0":{"memory":"sbuf","dtype":"float8_e'
    '4m3fn","shape":[3,1,3],"partition":64,"offset":97},"sb1":{"memory":"sbuf","dtype":"int16","shape":[1'
    '6,5,5],"partition":64,"offset":99},"ps0":{"memory":"psum","dtype":"float32","shape":[128,4,7],"parti'
    'tion":0,"bank":1,"offset":55}},"body":[{"name":"matmul3","engine":"pe","op":"matmul","reads":[{"tens'
    'or":"sb1","offset":24},{"tensor":"sb1","partitions":[0,15],"offset":3,"pattern":[[1,8],[0,2],[2,8]]}'
    ',{"tensor":"ps0","partitions":[0,31,2],"offset":0}],"writes":[{"tensor":"ps0","partitions":[0,31,2],'
    '"offset":0}]},{"loop":"L1","trip_count":2,"body":[{"name":"matmul5","engine":"pe","op":"matmul","rea'
    'ds":[{"tensor":"sb0","partitions":[0,1,3],"offset":2,"pattern":[[0,3],[0,1]],"per_iteration":{"L1":-'
    '2}},{"tensor":"sb1","offset":12},{"tensor":"ps0","partitions":[0,11,4],"offset":17}],"writes":[{"ten'
    'sor":"ps0","partitions":[0,11,4],"offset":17}],"attrs":{"accumulate":true}},{"name":"tensor_copy7","'
    'engine":"act","op":"tensor_copy","reads":[{"tensor":"sb1","partitions":[0,8],"offset":8,"pattern":[['
    '3,4],[1,6]]}],"writes":[{"tensor":"sb1","offset":8,"pattern":[[1,3]],"per_iteration":{"L1":6}}],"dep'
    's":[{"on":"matmul3","kind":"anti","x-iterations":{"L1":[0,1]}},{"on":"matmul5","kind":"anti","x-iter'
    'ations":{"L1":[1,2]}}]}]}]}'
)


def test_example_pass_keeps_a_dep_that_a_dep_of_some_iterations_cannot_stand_for():
    """CollapseWaits kept the latest wait per component, the one limited to L1's second
    iteration, and dropped the wait on matmul3: the first iteration raced."""
    from neuronsim.machine.formats.program_json import loads_program
    from neuronsim.verify.racecheck import check_program

    program = loads_program(LIMITED_DEP)
    collapsed = CollapseWaits().apply(program, None)
    assert check_program(program).race_free and check_program(collapsed).race_free
    (copy,) = [i for i, _ in collapsed.instructions() if i.name == "tensor_copy7"]
    assert [d.on for d in copy.deps] == ["matmul3", "matmul5"]


def test_example_pass_fuzzes_from_the_command_line(tmp_path):
    # (the pass merges waits only where two DMAs complete on one queue: seed 0 meets such programs
    # within 25 examples, seed 3 no longer does since the fuzz programs' fan-in of loads, and a
    # pass that changed nothing exits 1 as vacuous)
    run = _cli("fuzz", "--pass", "examples.collapse_waits:CollapseWaits", "--replace", "dep-reduction",
               "--examples", "25", "--seed", "0", "--workers", "1", "--out", str(tmp_path), "--json")
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["examples"] == 25 and doc["pass_effect"]["changed"] > 0


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
