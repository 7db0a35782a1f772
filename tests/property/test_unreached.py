"""Reads no write reaches (:mod:`neuronsim.machine.order.reach`): dropping them changes no race and no minimum.

The oracles: the brute-force race list (every instance pair, networkx reachability) on small
generated programs, whose tensors may share bytes (a read of a tensor nothing writes can
still meet a write to another tensor placed over it); the exact checker's walk on loop
kernels placed by ``alloc`` (rotating slots, strided DRAM tiles); and the minimum against the
brute-force minimum of :mod:`tests.unit.test_footprint` on the same loop kernels.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from neuronsim.machine.formats.program_json import load_program
from neuronsim.machine.order.stream import stream_of
from neuronsim.passes import compile_program
from neuronsim_tests.oracles import brute_races
from neuronsim_tests.footprint_kit import _oracle_minimum
from neuronsim.machine.build.builder import KernelBuilder
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.strategies import programs
from neuronsim.verify.sync_counts import minimum_sync
from neuronsim.verify.tile_kernels import tile_kernels
from neuronsim.machine.order.reach import reached, without_unreached_reads

SLOW = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(max_examples=60, **SLOW)
@given(programs(deps="random", max_instructions=8, max_loops=2, max_trip=3))
def test_same_races_as_the_whole_program_by_brute_force(program):
    stripped = without_unreached_reads(program)
    assert brute_races(stripped) == brute_races(program)


@settings(max_examples=25, **SLOW)
@given(tile_kernels(max_stages=3, max_trip=3))
def test_loop_kernels_keep_races_and_minimum(kernel):
    placed, _ = compile_program(kernel, "alloc")  # no deps: the checker walks every conflict
    stripped = without_unreached_reads(placed)
    before, after = check_program(placed), check_program(stripped)
    assert (after.total_races, after.races) == (before.total_races, before.races)
    assert minimum_sync(placed).figures.waits == _oracle_minimum(placed)[1]


def test_a_loop_kernels_input_loads_drop_out_and_its_reused_buffer_reads_stay():
    program = load_program("examples/matmul_k_loop.json")
    flags = {name: keep for name, keep in zip(stream_of(program).names, reached(stream_of(program)))}
    assert flags["ld_x"] == (False, True)  # reads DRAM x (never written), writes SBUF xs
    assert flags["mm"] == (True, True, True, True)  # ws, xs (the loads write them), acc twice


def test_a_read_under_a_later_slot_of_a_rotating_write_stays():
    """``c`` lies under slot 1 of ``a`` (two slots rotating over ``i``): the writes of ``a`` reach
    it at odd ``i`` only, and the read of ``c`` races with them."""
    kb = KernelBuilder("rotating_over_c")
    x = kb.dram_input("x", (128, 128), "float32")
    a = kb.sbuf("a", (128, 64), "float32", partition=0, offset=0, slots=2, loop="i")
    c = kb.sbuf("c", (128, 64), "float32", partition=0, offset=256)
    out = kb.sbuf("out", (128, 64), "float32", partition=0, offset=1024)
    with kb.loop("i", 2) as i:
        kb.dma_copy(a, x[:, i * 64:(i + 1) * 64], name="load")
        kb.tensor_copy(out, c, engine="act", name="use")
    program = kb.program()
    stripped = without_unreached_reads(program)
    assert stripped.instruction_map()["use"].reads == program.instruction_map()["use"].reads
    assert stripped.instruction_map()["load"].reads == ()
    races = check_program(program)
    assert races.total_races and check_program(stripped).races == races.races
