"""A seed gives the same programs whatever the process imported before drawing.

Hypothesis (6.13x on) now and then draws from a pool of the literals of every *local* module
in ``sys.modules``.  Without a guard, the programs of one seed changed with the tests run
earlier in the same worker (the modules they imported): that is how a full ``-n 2`` run drew
a program that ``test_instance_exact`` never drew alone.  ``programs`` and the geometry
strategies draw inside ``neuronsim.verify.draws.no_source_constants``.
"""

from __future__ import annotations

import importlib.util
import sys

from hypothesis import HealthCheck, Phase, given, seed, settings

from neuronsim.verify.strategies import access_pairs, programs

#: Literals no module of ours writes, inside the ranges offsets, strides and byte counts are
#: drawn from: once imported they join the pool hypothesis draws constants from.
_NEW_LITERALS = "VALUES = (" + ", ".join(str(v) for v in (101, 113, 127, 139, 157, 173, 197, 211, 229, 241, 251,
                                                            263, 293, 317, 349, 379, 401, 433, 467, 491)) + ")\n"


def _draw(strategy, count: int) -> list:
    drawn = []

    @seed(1234)
    @settings(max_examples=count, database=None, derandomize=False, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(value) -> None:
        drawn.append(value)

    collect()
    return drawn


def _import_literals(tmp_path) -> str:
    path = tmp_path / "extra_literals.py"
    path.write_text(_NEW_LITERALS)
    name = f"extra_literals_{id(path)}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[name] = module
    return name


def test_programs_do_not_depend_on_modules_imported_before(tmp_path):
    strategies = [programs(deps="none", virtual=True, max_instructions=10, max_trip=3, max_loops=3), access_pairs()]
    before = [_draw(strategy, 40) for strategy in strategies]
    name = _import_literals(tmp_path)
    try:
        after = [_draw(strategy, 40) for strategy in strategies]
    finally:
        del sys.modules[name]
    assert [len(b) for b in before] == [40, 40]
    assert after == before
