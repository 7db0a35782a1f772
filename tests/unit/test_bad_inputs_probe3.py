"""Bad input a third probe found missing the standard (one located line, exit 2, nothing
written; never a traceback or a hang): a user's pass file taken for an output, a user's pass
raising a BaseException of its own, returning what is no program, or subclassing Pass without
being a dataclass."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from neuronsim_tests.bad_inputs import VALID
from neuronsim_tests.bad_inputs import refused_in_one_line as _refused

SCRIPT = str(Path(sys.executable).with_name("neuronsim"))

PASSES = '''
from dataclasses import dataclass

from neuronsim.passes.base import Pass


class Stop(BaseException):
    pass


def keep(program):
    return program


def stop(program):
    raise Stop("my pass stopped")


def returns_none(program):
    return None


async def returns_a_coroutine(program):
    return program


class NotADataclass(Pass):
    name = "not-a-dataclass"

    def apply(self, program, ctx):
        return program
'''


@pytest.fixture
def folder(tmp_path: Path, monkeypatch) -> Path:
    (tmp_path / "p.json").write_text(json.dumps(VALID))
    (tmp_path / "up.py").write_text(PASSES)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mine.py").write_text(PASSES)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("command", [
    ["compile", "p.json", "-o", "up.py", "--passes", "alloc,up.py:keep"],
    ["compile", "p.json", "-o", "pkg/mine.py", "--passes", "alloc,pkg.mine:keep"],
    ["report", "p.json", "-o", "up.py", "--passes", "alloc,up.py:keep"],
])
def test_an_output_over_the_users_pass_file_is_refused_and_the_file_kept(folder: Path, command) -> None:
    _refused(command, "which this command reads: writing it would destroy it")
    assert (folder / "up.py").read_text() == PASSES and (folder / "pkg" / "mine.py").read_text() == PASSES


@pytest.mark.parametrize("name, words", [
    ("stop", "the pass 'up.py:stop' raised Stop: my pass stopped at up.py:"),
    ("returns_none", "the pass 'up.py:returns_none' returned NoneType, not the Program it was given"),
    ("returns_a_coroutine", "returned coroutine, not the Program it was given"),
    ("NotADataclass", "a Pass subclass is a dataclass (@dataclass(frozen=True))"),
])
def test_a_users_pass_that_misbehaves_is_one_line(folder: Path, name: str, words: str) -> None:
    _refused(["compile", "p.json", "-o", "o.json", "--passes", f"alloc,up.py:{name}"], words)
    assert not (folder / "o.json").exists()


def test_fuzz_with_two_workers_reports_a_pass_raising_a_base_exception(folder: Path) -> None:
    """The BaseException killed a pool worker and the pool waited for its result for ever."""
    run = subprocess.run([SCRIPT, "fuzz", "--examples", "4", "--workers", "2", "--out", "ff", "--pass", "up.py:stop",
                          "--json"], capture_output=True, text=True, timeout=120, cwd=folder)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert "raised Stop: my pass stopped" in json.dumps(json.loads(run.stdout)["failures"])
