"""A pass given by its address (``--passes FILE.py:NAME`` / ``MODULE:NAME``, ``fuzz --pass``) is
the user's code: whatever object it is, however it fails to be built or described, the command
answers with one line at ``--passes``, exit 2, or runs it; never an internal error (exit 3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from neuronsim.passes import parse_pipeline
from neuronsim.verify.cli import cli
from neuronsim_tests.bad_inputs import refused_in_one_line, valid_text

PASSES = '''from dataclasses import dataclass


@dataclass(frozen=True)
class Plain:  # a pass by its shape (name-less, apply), not derived from neuronsim's Pass
    f: int = 1

    def apply(self, program, ctx=None):
        assert self.f in (1, 3)
        return program


@dataclass(frozen=True)
class Inert:  # neither apply nor __call__
    f: int = 1
'''


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "upass.py").write_text(PASSES)
    (tmp_path / "p.json").write_text(valid_text())
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("spec", ["upass.py:Plain", "upass.py:Plain{f=3}"])
def test_a_dataclass_pass_not_derived_from_pass_runs(folder, spec):
    """It was exit 3, ``no attribute 'spec_string'``, though ``fuzz --pass`` took it."""
    (item,) = parse_pipeline(spec)
    assert item.name == spec.split("{")[0]
    result = CliRunner().invoke(cli, ["compile", "p.json", "-o", "c.json", "--passes", f"alloc,{spec}"])
    assert result.exit_code == 0, (result.output, result.exception)
    assert (folder / "c.json").exists()


def test_a_dataclass_that_is_no_pass_is_refused_at_passes(folder):
    refused_in_one_line(["compile", "p.json", "-o", "c.json", "--passes", "upass.py:Inert{f=3}"],
                        "--passes: upass.py:Inert", "neither a pass nor a function")
    assert not (folder / "c.json").exists()
