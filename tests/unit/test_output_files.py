"""Every output is written atomically, in place of the old file (machine/formats/files.py and the
commands that write): modes and symbolic links kept, nothing half-written, errors naming the
user's path."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from neuronsim.machine.formats.files import OutputError, write_atomically, write_text
from neuronsim.machine.formats.program_json import load_program, save_program
from neuronsim_tests.bad_inputs import valid_text
from neuronsim.verify.cli import cli


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_a_new_file_gets_the_umask_mode_not_0600(tmp_path):
    old = os.umask(0o022)
    try:
        write_text(tmp_path / "new.txt", "x")
        os.umask(0o077)
        write_text(tmp_path / "private.txt", "x")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "new.txt") == 0o644
    assert _mode(tmp_path / "private.txt") == 0o600


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o755])
def test_an_existing_file_keeps_its_mode(tmp_path, mode):
    target = tmp_path / "out.json"
    target.write_text("old")
    os.chmod(target, mode)
    write_text(target, "new")
    assert target.read_text() == "new" and _mode(target) == mode


def test_a_symbolic_link_stays_a_link_and_its_target_is_replaced(tmp_path):
    real = tmp_path / "data" / "real.json"
    real.parent.mkdir()
    real.write_text("old")
    os.chmod(real, 0o640)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_text(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "new" and _mode(real) == 0o640
    assert _leftovers(tmp_path) == [] and _leftovers(real.parent) == []


def test_a_failing_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")

    def half_then_fail(fh):
        fh.write(b"half of the new")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OutputError) as caught:
        write_atomically(target, half_then_fail)
    assert caught.value.filename == str(target)  # the user's path, never the temporary file's
    assert "No space left on device" in caught.value.strerror
    assert target.read_bytes() == b"old" and _leftovers(tmp_path) == []


def test_an_exception_of_the_writer_propagates_and_cleans_up(tmp_path):
    target = tmp_path / "out.bin"

    def interrupted(fh):
        fh.write(b"x")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomically(target, interrupted)
    assert not target.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("where", "reason"), [("dir", "it is a directory"), ("missing/x.json", "does not exist"),
                                               ("", "the path is empty")])
def test_paths_that_cannot_be_outputs_are_named(tmp_path, where, reason):
    (tmp_path / "dir").mkdir()
    path = str(tmp_path / where) if where else ""
    with pytest.raises(OutputError) as caught:
        write_text(path, "x")
    assert caught.value.filename == path and reason in caught.value.strerror


def test_save_program_is_atomic_and_keeps_the_mode(tmp_path):
    source = tmp_path / "p.json"
    source.write_text(valid_text())
    program = load_program(str(source))
    target = tmp_path / "compiled.json"
    target.write_text("old")
    os.chmod(target, 0o664)
    save_program(program, str(target))
    assert _mode(target) == 0o664 and json.loads(target.read_text())["format"] == "neuronsim.program/1"


def test_every_command_output_keeps_mode_and_link(tmp_path):
    """compile -o, simulate --trace / --plot, footprint --plot and run --out write in place."""
    source = tmp_path / "p.json"
    source.write_text(valid_text())
    real = tmp_path / "real"
    real.mkdir()
    outputs = {"compiled.json": ["compile", str(source), "-o"], "trace.json": ["simulate", str(source), "--trace"],
               "timeline.png": ["simulate", str(source), "--plot"],
               "footprint.svg": ["footprint", str(source), "--no-simulate", "--plot"]}
    for name, args in outputs.items():
        (real / name).write_text("old")
        os.chmod(real / name, 0o640)
        (tmp_path / name).symlink_to(real / name)
        result = CliRunner().invoke(cli, [*args, str(tmp_path / name)])
        assert result.exit_code == 0, (name, result.output)
        assert (tmp_path / name).is_symlink() and (real / name).read_bytes() != b"old"
        assert _mode(real / name) == 0o640, name
    assert _leftovers(real) == [] and _leftovers(tmp_path) == []


def test_run_out_files_are_written_in_place(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    trace = out / "softmax.trace.json"
    trace.write_text("old")
    os.chmod(trace, 0o600)
    result = CliRunner().invoke(cli, ["run", "softmax", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(trace.read_text())["traceEvents"] and _mode(trace) == 0o600
    assert json.loads((out / "softmax.footprint.json").read_text())
    as_file = tmp_path / "a_file"
    as_file.write_text("x")
    refused = CliRunner().invoke(cli, ["run", "softmax", "--out", str(as_file)])
    assert refused.exit_code == 2 and "not a folder" in refused.stderr and as_file.read_text() == "x"
