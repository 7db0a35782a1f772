"""``neuronsim examples [DIR]``: the installed copy of ``examples/``, written where a user runs
the README's commands (from a temporary folder outside the checkout, the console script of the
environment the tests run in)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from neuronsim_tests import ROOT

NEURONSIM = Path(sys.executable).with_name("neuronsim")


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NEURONSIM_TRACEBACK")}
    return subprocess.run([str(NEURONSIM), *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=env)


def _tracked_examples() -> dict[str, bytes]:
    listed = subprocess.run(["git", "ls-files", "examples"], cwd=ROOT, capture_output=True, text=True, check=True)
    names = [line.removeprefix("examples/") for line in listed.stdout.split()]
    return {name: (ROOT / "examples" / name).read_bytes() for name in names if name != "__init__.py"}


def _files_under(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


def test_writes_every_example_of_the_checkout_and_the_readme_commands_run_on_them(tmp_path: Path) -> None:
    run = _run(["examples"], tmp_path)
    assert run.returncode == 0, run.stderr
    assert _files_under(tmp_path / "examples") == _tracked_examples()
    assert run.stdout.startswith("examples: 13 example files written;"), run.stdout
    checked = _run(["check", "examples/matmul_k_loop_racy.json", "--json"], tmp_path)
    races = sorted(" ".join((r["kind"], r["first"], r["second"])) for r in json.loads(checked.stdout)["races"])
    expected = (tmp_path / "examples" / "matmul_k_loop_racy.races").read_text().splitlines()
    assert checked.returncode == 1 and races == expected and len(races) == 3
    # the example pass imports from the copy's folder as from the checkout's root
    compiled = _run(["compile", "examples/matmul_k_loop.json", "-o", "c.json", "--passes",
                     "alloc,build-fdeps,anti-deps,examples.collapse_waits:CollapseWaits"], tmp_path)
    assert compiled.returncode == 0, compiled.stderr


def test_a_second_run_leaves_the_same_files_and_writes_the_missing_ones(tmp_path: Path) -> None:
    assert _run(["examples", "mine"], tmp_path).returncode == 0
    (tmp_path / "mine" / "tasks" / "accumulate.json").unlink()
    again = _run(["examples", "mine"], tmp_path)
    assert again.returncode == 0, again.stderr
    assert "1 example files written, 12 there already" in again.stdout
    assert _files_under(tmp_path / "mine") == _tracked_examples()
    third = _run(["examples", "mine"], tmp_path)
    assert third.stdout.startswith("mine: the 13 example files are there already"), third.stdout


def test_a_changed_file_is_never_replaced_and_nothing_is_written(tmp_path: Path) -> None:
    assert _run(["examples"], tmp_path).returncode == 0
    edited = tmp_path / "examples" / "matmul_k_loop.json"
    edited.write_text("mine\n")
    (tmp_path / "examples" / "README.md").unlink()
    run = _run(["examples"], tmp_path)
    assert run.returncode == 2
    assert run.stderr.splitlines() == ["error: examples/matmul_k_loop.json: exists with other contents (yours?); "
                                       "nothing written: remove it, or give another DIR"]
    assert edited.read_text() == "mine\n" and not (tmp_path / "examples" / "README.md").exists()


def test_a_folder_where_a_file_goes_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ex" / "nki" / "row_sums.py").mkdir(parents=True)
    run = _run(["examples", "ex"], tmp_path)
    assert run.returncode == 2
    assert run.stderr.splitlines() == ["error: ex/nki/row_sums.py: a folder stands where an example file goes; "
                                       "nothing written"]
    assert sorted(p.name for p in (tmp_path / "ex").rglob("*")) == ["nki", "row_sums.py"]


def test_a_fifo_where_a_file_goes_is_refused_unread(tmp_path: Path) -> None:
    # reading it to compare would wait for a writer for ever (probe_al)
    (tmp_path / "ex").mkdir()
    os.mkfifo(tmp_path / "ex" / "README.md")
    run = _run(["examples", "ex"], tmp_path)
    assert run.returncode == 2
    assert run.stderr.splitlines() == ["error: ex/README.md: something other than a file stands where an example "
                                       "file goes; nothing written"]


def test_an_empty_name_or_a_dangling_link_as_the_folder_is_refused(tmp_path: Path) -> None:
    # "" (an unset shell variable) wrote the files into the working folder; a link to nothing
    # said only "File exists" (probe_al)
    empty = _run(["examples", ""], tmp_path)
    assert empty.returncode == 2 and empty.stderr.startswith("error: DIR: an empty folder name")
    os.symlink(tmp_path / "nowhere", tmp_path / "dl")
    dangling = _run(["examples", "dl"], tmp_path)
    assert dangling.returncode == 2
    assert dangling.stderr.splitlines() == ["error: dl: not a folder (a file, or a link to nothing); nothing written"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dl"]
