"""The loader never fails but with a located ProgramError, whatever value sits anywhere.

Every scalar of a valid program is replaced, one at a time, by every value of
:data:`HOSTILE` (numbers beyond what Python or a double reads, huge and negative integers,
unhashable containers, empty and escape-laden strings, lone surrogates): the loader either
accepts the document, and then the listing, the canonical JSON and the size estimate of the
program all work and every command runs it to a verdict, or raises :class:`ProgramError`,
never anything else.  The table of
:mod:`tests.bad_inputs` pins the paths and messages of the cases issue #13 names.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.formats.program_json import dumps_program, loads_program
from neuronsim.machine.formats.listing import render_listing
from neuronsim.machine.order.work_estimate import estimate_size
from neuronsim_tests.bad_inputs import BAD_INPUTS, VALID, valid_text
from neuronsim.verify.cli import cli

#: Raw JSON texts put in place of one value.
HOSTILE = ("7" * 5000, "1e999", "-1e999", str(10**400), str(-(10**400)), str(2**63), str(2**63 - 1), "-1", "0",
           "1.5", '["x"]', '{"a": 1}', "[]", '""', '"\\u001b[31mred"', '"\\ud800"', '"a\\nb"', "null", "true")


def _leaves(value, path=()):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, (*path, index))
    else:
        yield path


def _with_marker(path) -> str:
    doc = json.loads(valid_text())
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = "@HOSTILE@"
    return json.dumps(doc)


LEAVES = list(_leaves(VALID))


@pytest.mark.parametrize("path", LEAVES, ids=[".".join(map(str, p)) for p in LEAVES])
def test_any_value_anywhere_is_accepted_or_located(path, tmp_path):
    text = _with_marker(path)
    for raw in HOSTILE:
        document = text.replace('"@HOSTILE@"', raw)
        try:
            program = loads_program(document.encode("utf-8"))
        except ProgramError as err:
            assert err.message and "\n" not in err.message
            continue
        render_listing(program)
        assert loads_program(dumps_program(program)) == program
        estimate_size(program)
        source = tmp_path / "accepted.json"
        source.write_text(document)
        for args in (["check"], ["simulate"], ["compile", "-o", str(tmp_path / "out.json")], ["footprint"], ["loops"]):
            result = CliRunner().invoke(cli, [args[0], str(source), *args[1:]])
            assert result.exit_code in (0, 1, 2) and "Traceback" not in result.stderr, (args, raw, result.stderr)


def test_the_sweep_reaches_every_kind_of_value():
    assert len(LEAVES) > 40
    assert {type(v).__name__ for v in (json.loads(r) if not r.startswith("7777") else 0 for r in HOSTILE)} >= {
        "int", "float", "list", "dict", "str", "NoneType", "bool"}


@pytest.mark.parametrize("bad", BAD_INPUTS, ids=[b.id for b in BAD_INPUTS])
def test_issue_13_inputs_are_located(bad):
    with pytest.raises(ProgramError) as caught:
        loads_program(bad.data)
    assert caught.value.path == bad.path
    assert bad.fragment in caught.value.message


def test_a_utf8_byte_order_mark_is_harmless():
    assert loads_program(b"\xef\xbb\xbf" + valid_text().encode()) == loads_program(valid_text())


def test_endless_streams_are_refused_at_their_first_bytes(tmp_path):
    from neuronsim.machine.formats.program_json import load_program

    with pytest.raises(ProgramError) as zeros:
        load_program("/dev/zero")
    assert "NUL bytes" in zeros.value.message
    with pytest.raises(ProgramError) as noise:
        load_program("/dev/urandom")
    assert "not UTF-8" in noise.value.message or "NUL" in noise.value.message or "byte-order" in noise.value.message


def test_a_long_text_that_is_no_object_is_refused_before_it_is_read(tmp_path):
    from neuronsim.machine.formats.program_json import load_program

    path = tmp_path / "yes.txt"
    path.write_bytes(b"y\n" * (3 << 20))
    with pytest.raises(ProgramError) as caught:
        load_program(str(path))
    assert "starts with 'y'" in caught.value.message
