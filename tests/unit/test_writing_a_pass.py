"""``docs/writing-a-pass.md`` works step by step as written (issue 23 part 7).

Step 4's shell block runs as the page shows it (the console script for ``neuronsim``, from a
folder laid out as the repository's root); its Python block runs as written; the figures the
page gives after it are the ones that code computes."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from neuronsim_tests.docs_kit import ROOT

PAGE = (ROOT / "docs" / "writing-a-pass.md").read_text()


def _block(section: str, language: str) -> str:
    """The first ``language`` code block after the heading ``section``."""
    start = PAGE.index(section)
    found = re.search(rf"```{language}\n(.*?)```", PAGE[start:], re.S)
    assert found, (section, language)
    return found.group(1)


def _commands(block: str) -> list[list[str]]:
    import shlex

    text = block.replace("\\\n", " ")
    return [shlex.split(line, comments=True) for line in text.splitlines() if line.strip()]


def test_step_4_shell_block_runs_as_written(tmp_path):
    for folder in ("scenarios", "examples"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    commands = _commands(_block("## 4. Run it", "sh"))
    assert [c[:2] for c in commands] == [["neuronsim", "compile"], ["neuronsim", "footprint"], ["neuronsim", "check"]]
    for command in commands:
        run = subprocess.run([sys.executable, "-c", "from neuronsim.verify.cli import main; main()", *command[1:]],
                             cwd=tmp_path,
                             env=env, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, (command, run.stderr)
    assert "race-free" in run.stdout


def test_step_4_python_block_runs_and_gives_the_figures_the_page_gives(monkeypatch):
    # The page's block runs as a user's ``python`` does in the checkout: the current folder is on
    # sys.path (there the user's ``examples`` package is theirs, not pytest's collection module).
    monkeypatch.chdir(ROOT)
    monkeypatch.syspath_prepend(str(ROOT))
    for name in [m for m in sys.modules if m == "examples" or m.startswith("examples.")]:
        monkeypatch.delitem(sys.modules, name)
    names: dict = {}
    exec(compile(_block("## 4. Run it", "python"), "writing-a-pass.md", "exec"), names)  # noqa: S102 - the page's code
    built, reduced = names["built"], names["reduced"]
    kept, total = map(int, re.search(r"it keeps (\d+) of (\d+) deps, race-free", PAGE).groups())
    exact = int(re.search(r"`dep-reduction`\) keeps (\d+)\.", PAGE).group(1))

    from neuronsim.passes import run_pipeline
    from neuronsim.verify.racecheck import check_program

    def deps(program) -> int:
        return sum(len(i.deps) for i, _ in program.instructions())

    assert (deps(reduced), deps(built)) == (kept, total)
    assert check_program(reduced).race_free
    assert deps(run_pipeline(built, "remove-redundancies,dep-reduction")) == exact


def test_a_pass_address_in_a_spec_string_and_its_errors():
    from neuronsim.machine.ir.errors import ProgramError
    from neuronsim.passes import parse_pipeline

    import pytest

    assert [p.name for p in parse_pipeline("alloc,examples.collapse_waits:CollapseWaits")] == ["alloc",
                                                                                               "collapse-waits"]
    with pytest.raises(ProgramError, match="cannot load the pass 'examples.nosuch:X'"):
        parse_pipeline("alloc,examples.nosuch:X")
    with pytest.raises(ProgramError, match="or MODULE:NAME"):
        parse_pipeline("collapse-waits")
