"""expand_scheduling_units: same instances, same footprints, same happens-before order."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.formats.program_json import dumps_program, load_program, loads_program
from neuronsim.machine.model.geometry import footprint
from neuronsim.machine.ir.program import Instruction, Loop, Program
from neuronsim.machine.order.unroll import unroll
from neuronsim.machine.formats.validate import validate_program
from neuronsim.passes.expand_scheduling_units import expand_scheduling_units
from neuronsim_tests.reduction_kit import hb_digraph
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.strategies import programs

SLOW = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
EXAMPLES = ("matmul_k_loop", "matmul_k_loop_racy", "async_load_then_fill")


def _order(program):
    """``{(first, second)}`` instance names with ``E(first) <= S(second)`` (networkx closure)."""
    unrolled = unroll(program)
    graph, _, _ = hb_digraph(program, unrolled)
    closure = nx.transitive_closure_dag(graph)
    names = [inst.name for inst in unrolled]
    return {(names[u[0]], names[v[0]]) for u, v in closure.edges if u[1] == "E" and v[1] == "S"}


def _prints(program):
    tensors = program.tensors
    return [(inst.name, inst.instr.engine, inst.instr.queue,
             tuple((footprint(tensors[a.tensor], a, inst.iteration), w) for a, w in inst.instr.accesses))
            for inst in unroll(program)]


@settings(max_examples=80, **SLOW)
@given(programs(max_instructions=8, max_loops=3, max_depth=2, max_trip=3, deps="random"))
def test_expansion_keeps_instances_footprints_and_order(program):
    flat = expand_scheduling_units(program)
    validate_program(flat)
    assert not any(isinstance(node, Loop) for node in flat.body)
    assert _prints(flat) == _prints(program)
    assert _order(flat) == _order(program)
    assert check_program(flat).triples() == check_program(program).triples()
    assert loads_program(dumps_program(flat)) == flat


@pytest.mark.parametrize("name", EXAMPLES)
def test_examples_keep_their_races_under_the_same_names(name):
    program = load_program(f"examples/{name}.json")
    flat = expand_scheduling_units(program)
    expected = open(f"examples/{name}.races").read().split("\n")
    assert {tuple(line.split()) for line in expected if line} == check_program(flat).triples()
    assert _order(flat) == _order(program)


def test_first_iteration_loses_its_loop_carried_wait():
    flat = expand_scheduling_units(load_program("examples/matmul_k_loop.json"))
    deps = {i.name: sorted(d.on for d in i.deps) for i in flat.body}
    assert deps["ld_x[0]"] == ["mm0"]
    assert deps["ld_x[1]"] == ["mm0", "mm[0]"]
    assert deps["drain"] == ["mm[2]"]


def test_name_collision_is_a_located_error():
    body = (Instruction("a[0]", "pe", "op"), Loop("i", 2, (Instruction("a", "act", "op"),)))
    with pytest.raises(ProgramError, match=r"instance a\[0\]"):
        expand_scheduling_units(Program({}, body))


def test_loop_free_program_is_returned_unchanged():
    program = load_program("examples/async_load_then_fill.json")
    assert expand_scheduling_units(program) is program
