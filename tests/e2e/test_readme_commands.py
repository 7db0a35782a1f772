"""Every command the README shows, run as an installed user runs it: the console script of the
environment the tests run in, from a temporary folder outside the checkout.

The README's code blocks are read, not restated here: each ``$ neuronsim ...`` or
``neuronsim ...`` line runs as written in one shared temporary folder in the README's order,
so a file one command writes is there for the next.  The folder starts as the README tells a
user outside the checkout: ``neuronsim examples`` writes the files its ``examples/...`` paths
name (``scenarios/`` paths, none today, would be resolved against the checkout).
A command may report races or findings (exit 1, as documented beside it); none may be refused as
unusable input (2), fail inside neuronsim (3) or print a traceback.  The command table's rows
with placeholders run on concrete programs below, ``report`` of a builder program and of a
traced NKI kernel included, and each output file is checked to exist and parse.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from neuronsim_tests import ROOT

NEURONSIM = Path(sys.executable).with_name("neuronsim")
#: the README commands that take minutes by design; each runs below with a smaller budget
_LONG = {"neuronsim fuzz --tasks": ["fuzz", "--tasks", "--examples", "20", "--seed", "0"]}


def readme_commands(text: str) -> list[list[str]]:
    """The ``neuronsim`` and ``python -c`` commands of the README's code blocks, in order, as
    argument lists; lines with placeholders (``PROGRAM``, ``KERNEL.py``, ``mypkg``) are left to
    the command-table tests."""
    commands, fence = [], None
    for raw in text.splitlines():
        if raw.startswith("```"):
            fence = None if fence is not None else raw[3:].strip()
            continue
        if fence is None or fence == "python":
            continue
        for line in [raw]:
            line = line.removeprefix("$ ").split("   #")[0].strip()
            if not line.startswith(("neuronsim ", "python -c ")):
                continue
            if re.search(r"\b[A-Z]{4,}\b|mypkg|KERNEL", line):
                continue
            for part in line.split(" && "):
                commands.append(shlex.split(part))
    return commands


def _resolve(args: list[str]) -> list[str]:
    out = []
    for arg in args:
        arg = re.sub(r"(^|[=:])scenarios/", lambda m: f"{m.group(1)}{ROOT}/scenarios/", arg)
        out.append(arg)
    return out


def _run(args: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NEURONSIM_TRACEBACK")}
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def _judge(args: list[str], run: subprocess.CompletedProcess, allowed=(0, 1)) -> None:
    shown = " ".join(args)
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr, f"{shown}\n{run.stderr[-2000:]}"
    assert run.returncode in allowed, f"{shown}: exit {run.returncode}\n{run.stdout[-1500:]}\n{run.stderr[-1500:]}"


def test_the_readme_shows_commands_to_run() -> None:
    commands = readme_commands((ROOT / "README.md").read_text())
    names = {c[1] for c in commands if c[0] == "neuronsim"}
    assert {"run", "check", "tasks", "simulate", "fuzz"} <= names, names


def test_every_readme_command_from_outside_the_checkout(tmp_path: Path) -> None:
    text = (ROOT / "README.md").read_text()
    assert "anywhere else, `neuronsim examples` first writes" in text.replace("\n", " ")
    _judge(["neuronsim", "examples"], _run([str(NEURONSIM), "examples"], tmp_path), allowed=(0,))
    commands = readme_commands(text)
    for args in commands:
        shown = " ".join(args)
        if args[0] == "python":
            run = _run([sys.executable, *args[1:]], tmp_path)
        else:
            rest = _LONG.get(shown, args[1:])
            run = _run([str(NEURONSIM), *_resolve(rest)], tmp_path)
        _judge(args, run)
    assert (tmp_path / "out" / "matmul_tiled.png").stat().st_size > 0
    assert json.loads((tmp_path / "compiled.json").read_text())["format"].startswith("neuronsim.tasks")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("user")


def test_builder_program_through_every_program_command(folder: Path) -> None:
    source = str(ROOT / "examples" / "matmul_k_loop.json")
    steps = [
        ["compile", source, "-o", "c.json"],
        ["check", "c.json", "--json"],
        ["simulate", "c.json", "--trace", "t.json", "--plot", "t.png", "--seeds", "2", "--outputs", "o.npz"],
        ["footprint", "c.json", "--json", "--plot", "f.png"],
        ["report", "c.json", "-o", "r.html"],
        ["loops", "c.json", "--json"],
        ["show", "c.json"],
        ["run", "--list"],
    ]
    for args in steps:
        run = _run([str(NEURONSIM), *args], folder)
        _judge(args, run, allowed=(0,))
    json.loads((folder / "t.json").read_text())
    assert np.load(folder / "o.npz").files
    html = (folder / "r.html").read_text()
    assert "<html" in html.lower() and "race-free" in html
    for name in ("t.png", "f.png"):
        assert (folder / name).read_bytes()[:4] == b"\x89PNG"


def test_traced_nki_kernel_through_nki_run_and_report(folder: Path) -> None:
    kernel = ROOT / "examples" / "nki" / "row_sums.py"
    rng = np.random.default_rng(0)
    np.savez(folder / "rows.npz", x=rng.random((128, 2048), dtype=np.float32), out=np.zeros((128, 1), np.float32))
    steps = [
        ["nki", f"{kernel}::row_sums_fixed", "--inputs", "rows.npz", "-o", "traced.json"],
        ["compile", "traced.json", "-o", "traced_c.json"],
        ["report", "traced_c.json", "-o", "traced.html"],
        ["run", f"{kernel}::row_sums_fixed", "--inputs", "rows.npz", "--reference", f"{kernel}:reference"],
    ]
    for args in steps:
        run = _run([str(NEURONSIM), *args], folder)
        _judge(args, run, allowed=(0,))
    assert json.loads((folder / "traced.json").read_text())["format"] == "neuronsim.program/1"
    assert "row_sums.py" in (folder / "traced.html").read_text()


def test_bad_input_from_outside_the_checkout_is_one_line(folder: Path) -> None:
    (folder / "bad.json").write_text('{"format": "neuronsim.program/1", "tensors": 3}')
    run = _run([str(NEURONSIM), "report", "bad.json", "-o", "bad.html"], folder)
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert not (folder / "bad.html").exists()


def test_standard_input_that_is_a_directory(folder: Path) -> None:
    # CPython itself dies on such a stdin before neuronsim's code runs; the launcher answers.
    directory = os.open("/", os.O_RDONLY)
    try:
        run = subprocess.run([str(NEURONSIM), "check", "--json", "-"], stdin=directory, cwd=folder,
                             capture_output=True, text=True, timeout=60)
    finally:
        os.close(directory)
    assert run.returncode == 2, run.stderr
    assert run.stderr.strip().splitlines() == ["error: -: standard input is a directory, not a program"]
    assert json.loads(run.stdout)["format"] == "neuronsim.error/1"


def test_the_launcher_turns_numpys_huge_page_advice_off_unless_the_user_set_it(tmp_path: Path) -> None:
    # The installed launcher, beside a stand-in Python that prints what it was given.
    launcher = tmp_path / "neuronsim"
    launcher.write_text(NEURONSIM.read_text())
    python = tmp_path / "python"
    python.write_text('#!/bin/sh\nprintf "%s|%s\\n" "${NUMPY_MADVISE_HUGEPAGE-unset}" "$*"\n')
    for script in (launcher, python):
        script.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    default = subprocess.run([str(launcher), "check", "x.json"], env=env, capture_output=True, text=True, timeout=60)
    assert default.stdout.strip() == "0|-P -m neuronsim.verify.cli check x.json", default.stderr
    chosen = subprocess.run([str(launcher), "run"], env={**env, "NUMPY_MADVISE_HUGEPAGE": "1"},
                            capture_output=True, text=True, timeout=60)
    assert chosen.stdout.strip() == "1|-P -m neuronsim.verify.cli run", chosen.stderr


def test_a_hash_seed_python_refuses(folder: Path) -> None:
    # CPython ends with a fatal error and exit 1 on such a PYTHONHASHSEED before neuronsim's code
    # runs; the launcher answers with one line, exit 2 (and the error document under --json).
    (folder / "bad.json").write_text('{"format": "neuronsim.program/1", "tensors": 3}')
    for seed in ("abc", "4294967296"):
        run = subprocess.run([str(NEURONSIM), "check", "--json", "bad.json"], cwd=folder, capture_output=True,
                             text=True, timeout=60, env=dict(os.environ, PYTHONHASHSEED=seed))
        assert run.returncode == 2, run.stderr
        assert run.stderr.strip().splitlines() == ['error: PYTHONHASHSEED must be "random" or an integer from 0 to '
                                                   '4294967295']
        assert json.loads(run.stdout)["path"] == "PYTHONHASHSEED"


@pytest.mark.parametrize("name, value, words", [
    ("PYTHONUTF8", "2", "invalid PYTHONUTF8 environment variable value"),
    ("PYTHONMALLOC", "bogus", "unknown allocator"),
    ("PYTHONHOME", "/nonexistent", "no standard library where these say"),
    ("NUMPY_MADVISE_HUGEPAGE", "abc", "must be an integer"),
])
def test_start_up_variables_python_or_numpy_refuse_are_one_line(folder: Path, name: str, value: str,
                                                               words: str) -> None:
    # CPython's "Fatal Python error" of several lines and exit 1 (numpy's traceback, exit 1, for
    # its variable), before neuronsim's code runs: the launcher answers with one line, exit 2.
    (folder / "bad.json").write_text('{"format": "neuronsim.program/1", "tensors": 3}')
    run = subprocess.run([str(NEURONSIM), "check", "--json", "bad.json"], cwd=folder, capture_output=True,
                         text=True, timeout=60, env=dict(os.environ, **{name: value}))
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {name}: ") and words in lines[0], run.stderr
    assert json.loads(run.stdout)["path"] == name


def test_the_launcher_needs_nothing_on_path(folder: Path) -> None:
    # PATH set but empty found no dirname (exit 127): the launcher works with the shell alone
    (folder / "bad.json").write_text('{"format": "neuronsim.program/1", "tensors": 3}')
    run = subprocess.run([str(NEURONSIM), "check", "bad.json"], cwd=folder, capture_output=True, text=True,
                         timeout=60, env=dict(os.environ, PATH=""))
    assert run.returncode == 2 and run.stderr.startswith("error: tensors: "), run.stderr
