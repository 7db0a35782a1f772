"""Two program shapes a probe found refused without their location: a long ``and`` / ``or``
chain in a task expression ("the program nests too deeply to process", path ``""``, where a
``+`` chain names its expression), and a stride-0 access of 128 partitions x 2**40 elements
that passed ``check`` and then ran ``simulate`` out of memory.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from neuronsim.verify.cli import cli
from neuronsim_tests.bad_inputs import TASKS, VALID
from neuronsim_tests.bad_inputs import refused_in_one_line as _refused


def _program(tmp_path: Path, doc: dict = VALID) -> str:
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    return str(path)


# -- a long and / or chain in a task expression ---------------------------------------------

@pytest.mark.parametrize("operator", ["and", "or"])
def test_a_long_boolean_chain_is_located_as_a_sum_is(tmp_path, operator):
    doc = copy.deepcopy(TASKS)
    doc["function"]["body"][0]["args"][1] = f" {operator} ".join(["1"] * 1000)
    _refused(["check", _program(tmp_path, doc)], "function.body[0].args[1]", "nests more than 200 operators deep")


def test_a_short_boolean_chain_still_reads():
    from neuronsim.machine.tasks.expr import evaluate, parse_expr

    assert evaluate(parse_expr(" and ".join(["n"] * 150), "x"), {"n": 1}) == 1


# -- an access naming more bytes than the machine holds -------------------------------------

@pytest.mark.parametrize("command", ["check", "simulate"])
def test_a_stride_0_access_past_the_machine_is_refused_at_its_pattern(tmp_path, command):
    doc = copy.deepcopy(VALID)
    doc["body"][0]["body"][1]["reads"][0]["pattern"] = [[0, 2**40]]
    _refused([command, _program(tmp_path, doc)], "body[0].body[1].reads[0].pattern",
             "140,737,488,355,328 elements", "16 GiB of DRAM")


def test_a_stride_0_broadcast_within_the_machine_still_simulates(tmp_path):
    doc = copy.deepcopy(VALID)
    doc["body"][0]["body"][1]["reads"][0]["pattern"] = [[0, 32]]
    result = CliRunner().invoke(cli, ["simulate", _program(tmp_path, doc)])
    assert result.exit_code == 0, result.output


def test_a_hash_in_an_expression_is_refused_not_read_as_a_comment():
    # Python's parser dropped "# + 8" as a comment: "i * 64 # + 8" ran as i * 64 (probe_al)
    from neuronsim.machine.ir.errors import ProgramError
    from neuronsim.machine.tasks.expr import parse_expr

    with pytest.raises(ProgramError, match="'#' is no operator of an expression") as err:
        parse_expr("i * 64 # + 8", "function.body[0].args[1]")
    assert err.value.path == "function.body[0].args[1]"
