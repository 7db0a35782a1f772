"""A slice of a ``valid_shape`` view: the static validator and the run-time unroller agree.

Both check a slice against its source's declared shape (the type's), while the bytes a task
touches follow the ``valid_shape``: before, the unroller checked against the clipped shape
and ``check`` / ``simulate`` / ``footprint`` refused what ``tasks`` accepted.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.tasks.task_builder import In, InOut, Out, TaskBuilder
from neuronsim.machine.tasks.ir import TensorView
from neuronsim.machine.tasks.serialize import dumps_tasks
from neuronsim.machine.tasks.orchestrator import unroll_task_program
from neuronsim.passes.tasks import run_task_pipeline
from neuronsim.verify.cli import cli


def scratch_program(high_offset: int = 16):
    """``scratch`` is 32 rows with 31 valid; ``low`` and ``high`` slice rows [0, 16) and
    [high_offset, high_offset + 16) of it."""
    tb = TaskBuilder("valid_rows")
    fill = tb.kernel("fill", Out("y"), returns="y", cost=10)
    use = tb.kernel("use", In("x"), InOut("z"), returns="z", cost=10)
    scratch = tb.create((32, 8), name="scratch", view=TensorView(valid_shape=(31, 8)))
    out = tb.param("out", (16, 8), "float32", direction="out")
    tb.call(fill, [scratch])
    tb.call(use, [tb.slice(scratch, (16, 8), (0, 0), name="low"), out])
    tb.call(use, [tb.slice(scratch, (16, 8), (high_offset, 0), name="high"), out])
    return tb.program()


def test_unroller_windows_a_clipped_view_by_its_declared_shape():
    instances = unroll_task_program(run_task_pipeline(scratch_program()))
    fill, low, high = instances
    (whole,) = [a for a in fill.accesses]
    assert whole.region.shape == (31, 8)  # the task touches the valid rows only
    (read_high, _) = high.accesses
    assert read_high.region.start == (16, 0) and read_high.region.shape == (16, 8)


def test_a_window_past_the_declared_shape_is_refused_by_both():
    with pytest.raises(ProgramError, match=r"window \[17, 33\) leaves dimension 0 of 'scratch' \(size 32\)"):
        scratch_program(high_offset=17)


@pytest.mark.parametrize("command", ["check", "footprint", "simulate"])
def test_commands_accept_what_tasks_accepts(tmp_path, command):
    path = tmp_path / "valid.json"
    path.write_text(dumps_tasks(scratch_program()))
    runner = CliRunner()
    assert runner.invoke(cli, ["tasks", str(path)]).exit_code == 0
    compiled = tmp_path / "compiled.json"
    assert runner.invoke(cli, ["tasks", str(path), "-o", str(compiled)]).exit_code == 0
    for program in (path, compiled):
        result = runner.invoke(cli, [command, str(program), "--json"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["format"] != "neuronsim.error/1"
