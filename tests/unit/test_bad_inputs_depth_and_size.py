"""Program shapes a probe found refused without their location: a long ``and`` / ``or``
chain in a task expression ("the program nests too deeply to process", path ``""``, where a
``+`` chain names its expression).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
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
