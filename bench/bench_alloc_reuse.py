"""How much storage reuse the allocator creates, on generated programs and on the scenarios.

Allocator-created reuse is what gives the dependence passes their anti and output work: two
instances on *different* tensors (one of them virtual before allocation) that touch one
physical byte, one of them writing (:func:`tests.alloc_oracles.reuse_pairs`, brute force
over unrolled cells).  Printed for ``alloc`` (multi-buffering loop-body tiles) and
``alloc{rotate=false}`` (one placement per tensor, the allocator before multi-buffering):

* per generator (:func:`neuronsim.verify.tile_kernels.tile_kernels`, loop kernels over virtual tiles;
  :func:`neuronsim.verify.strategies.programs` with every tensor virtual): the share of programs with
  some reuse, reuse pairs per program, the share with a rotating tensor, tensors rotated and
  bytes saved per program (``ctx.stats["alloc"]``);
* per scenario with virtual tiles: tensors rotated, bytes used, and the nominal makespan
  under the exact minimum sync (every conflicting pair that rules 1-3 leave unordered waits: what ideal
  dependence passes achieve), with one placement per tensor and with multi-buffering.

Usage::

    .venv/bin/python bench/bench_alloc_reuse.py            # 200 programs per generator
    .venv/bin/python bench/bench_alloc_reuse.py --count 60 --no-scenarios
"""

from __future__ import annotations

import argparse

from neuronsim.machine.sim.simulator import simulate
from neuronsim.machine.order.stream import stream_of
from neuronsim.passes import compile_program
from neuronsim.testing.alloc_oracles import reuse_pairs
from neuronsim.verify.racecheck import check_waits
from neuronsim.verify.app.scenario_runs import all_scenarios, scenario_name
from neuronsim.verify.strategies import programs
from neuronsim.verify.tile_kernels import examples, tile_kernels

SPECS = ("alloc", "alloc{rotate=false}")


def reuse_figures(sample, spec: str) -> dict[str, float]:
    """Shares and means over ``sample`` for one allocation spec."""
    n = len(sample)
    with_reuse = pairs = rotating = rotated = saved = 0
    for program in sample:
        placed, ctx = compile_program(program, spec)
        stats = ctx.stats.get("alloc", {})
        found = reuse_pairs(program, placed)
        with_reuse += found > 0
        pairs += found
        rotating += stats.get("rotated", 0) > 0
        rotated += stats.get("rotated", 0)
        saved += stats.get("bytes-saved", 0)
    return {"with_reuse": with_reuse / n, "pairs": pairs / n, "rotating": rotating / n, "rotated": rotated / n,
            "bytes_saved": saved / n}


def ideal_makespan(program) -> float:
    """Nominal makespan when exactly the conflicting pairs rules 1-3 leave unordered wait."""
    stream = stream_of(program)
    targets: list[list[int]] = [[] for _ in range(len(stream))]
    for race in check_waits(program, [()] * len(stream)).races:
        targets[race.second_id].append(race.first_id)
    return simulate(program, waits=targets, functional=False).trace.makespan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200, help="programs per generator")
    parser.add_argument("--no-scenarios", action="store_true")
    args = parser.parse_args()
    generators = {
        "tile_kernels": tile_kernels(),
        "programs(virtual)": programs(deps="none", virtual=True, placed=False, max_instructions=12, max_trip=4),
    }
    print(f"{'generator':<20} {'alloc spec':<22} {'with reuse':>10} {'pairs/prog':>10} {'rotating':>9} "
          f"{'rotated/prog':>12} {'saved B/prog':>12}")
    for label, strategy in generators.items():
        sample = examples(strategy, args.count)
        for spec in SPECS:
            f = reuse_figures(sample, spec)
            print(f"{label:<20} {spec:<22} {f['with_reuse']:>10.0%} {f['pairs']:>10.1f} {f['rotating']:>9.0%} "
                  f"{f['rotated']:>12.2f} {f['bytes_saved']:>12.0f}")
    if args.no_scenarios:
        return
    print(f"\n{'scenario':<24} {'rotated':>7} {'bytes used (one / multi)':>26} "
          f"{'ideal makespan ns (one / multi)':>32} {'ratio':>6}")
    for module in all_scenarios():
        program = module.build()
        if not program.has_virtual_tensors:  # placed by the kernel itself: alloc has nothing to do
            print(f"{scenario_name(module):<24} {'-':>7} {'placed by the kernel':>26}")
            continue
        one, ctx_one = compile_program(program, "alloc{rotate=false}")
        multi, ctx_multi = compile_program(program, "alloc")
        a, b = ideal_makespan(one), ideal_makespan(multi)
        used = f"{ctx_one.stats['alloc']['bytes-used']} / {ctx_multi.stats['alloc']['bytes-used']}"
        print(f"{scenario_name(module):<24} {ctx_multi.stats['alloc']['rotated']:>7} {used:>26} "
              f"{f'{a:.0f} / {b:.0f}':>32} {b / a:>6.2f}")


if __name__ == "__main__":
    main()
