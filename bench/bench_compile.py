"""Compile + check of 1e4, 1e5 and 1e6 instructions: every pass timed and labelled, in one run.

Workload: a flat program in phases, as a scheduler's output would look.  Each phase of 4,096
instructions works on its own 512 *virtual* SBUF tiles (no placement: the ``alloc`` pass places
them, reusing storage across phases, so anti and output dependences come from the
allocator) and its own virtual PSUM tiles; each instruction reads one or two tiles written
recently (80 % among the 64 most recent) and writes one; DMA loads from DRAM on two queues
from two sequencers, compute on ACT / DVE / POOL, matmuls on PE into PSUM evicted by DVE /
ACT, DMA stores back on a third queue.

Each size runs in its own process (so peak RSS is that size's).  Printed per size: the seconds
of every pass (alloc, build-fdeps, remove-redundancies, anti-deps, dep-reduction), the
verification between passes, the race check of the result (:func:`neuronsim.verify.racecheck.check_stream`
on the pipeline's last state (:class:`neuronsim.passes.PipelineState`): the check reads the deps from its dep
table, and it reuses the instance stream and the physical access events ``anti-deps`` computed on it - a check of
the same program loaded from a file computes both itself, see ``bench_racecheck.py``),
compile + check, the CPU time of the process (compare with wall time:
the machine may be shared), peak RSS, deps written, races found, and, apart, what writing the
program's deps into its instruction objects costs (needed to save it; not part of compile +
check; done after letting go of what saving does not need, the stream and the check's results)
with the whole process's peak RSS after it, and the CPU split into user and system time.  The
goal of issue #9 (compile + check of 1e6 instructions in under 20 s and 2 GiB) is printed as
met or not.

Usage::

    .venv/bin/python bench/bench_compile.py            # 1e4 1e5 1e6
    .venv/bin/python bench/bench_compile.py 1e5
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import resource
import subprocess
import sys
import time

from neuronsim.machine.ir.program import Access, Instruction, MemoryKind, Program, Tensor, frozen_mapping

PHASE = 4096
TILES_PER_PHASE = 512
PSUM_PER_PHASE = 16
TILE = (128, 64)  # float32: 256 bytes per partition
GOAL_S, GOAL_MIB = 20.0, 2048


def synthetic_program(n: int, seed: int = 0) -> Program:
    """A flat program of ``n`` instructions over virtual tiles (see the module doc)."""
    rnd = random.Random(seed)
    tensors: dict[str, Tensor] = {}
    rows = max(1, n // 8)
    tensors["x"] = Tensor("x", MemoryKind.DRAM, "float32", (rows, 128, 64), address=0, role="input")
    tensors["y"] = Tensor("y", MemoryKind.DRAM, "float32", (rows, 128, 64), address=rows * 128 * 64 * 4, role="output")
    body: list[Instruction] = []
    row_in = row_out = 0
    acc = frozen_mapping({"accumulate": False})
    whole: dict[str, Access] = {}

    def tile(name: str, memory: MemoryKind) -> Access:
        if name not in tensors:
            tensors[name] = Tensor(name, memory, "float32", TILE)
            whole[name] = Access(name)
        return whole[name]

    for phase in range(0, n, PHASE):
        p = phase // PHASE
        sb = [f"t{p}_{i}" for i in range(TILES_PER_PHASE)]
        ps = [f"p{p}_{i}" for i in range(PSUM_PER_PHASE)]
        recent: list[str] = []
        evict: list[str] = []
        for k in range(phase, min(n, phase + PHASE)):
            roll = rnd.random()
            if roll < 0.15 or len(recent) < 4:
                dst = rnd.choice(sb)
                src = Access("x", offset=(row_in % rows) * 8192, pattern=((64, 128), (1, 64)))
                row_in += 1
                inst = Instruction(f"ld{k}", rnd.choice(("sp", "act")), "dma_copy", (src,),
                                   (tile(dst, MemoryKind.SBUF),), queue=f"dma{rnd.randrange(2)}")
                recent.append(dst)
            elif roll < 0.22:
                src = rnd.choice(recent[-64:])
                dst = Access("y", offset=(row_out % rows) * 8192, pattern=((64, 128), (1, 64)))
                row_out += 1
                inst = Instruction(f"st{k}", "sp", "dma_copy", (whole[src],), (dst,), queue="dma2")
            elif roll < 0.40:
                a, b = rnd.choice(recent[-64:]), rnd.choice(recent[-64:])
                out = rnd.choice(ps)
                inst = Instruction(f"mm{k}", "pe", "matmul", (whole[a], whole[b]), (tile(out, MemoryKind.PSUM),), acc)
                evict.append(out)
            else:
                dst = rnd.choice(sb)
                if evict and rnd.random() < 0.5:
                    src = evict.pop()
                    inst = Instruction(f"ev{k}", rnd.choice(("dve", "act")), "tensor_copy", (whole[src],),
                                       (tile(dst, MemoryKind.SBUF),))
                else:
                    src, other = rnd.choice(recent[-64:]), rnd.choice(recent[-64:])
                    engine = rnd.choice(("dve", "pool", "act"))
                    if engine == "act":
                        inst = Instruction(f"op{k}", engine, "activation", (whole[src],), (tile(dst, MemoryKind.SBUF),))
                    else:
                        inst = Instruction(f"op{k}", engine, "tensor_tensor", (whole[src], whole[other]),
                                           (tile(dst, MemoryKind.SBUF),))
                recent.append(dst)
            body.append(inst)
            if len(recent) > 256:
                del recent[:128]
            if len(evict) > 64:
                del evict[:32]
    return Program(frozen_mapping(tensors), tuple(body), "trn1")


def run_one(n: int) -> dict:
    from neuronsim.machine.order.deptable import write_deps
    from neuronsim.passes import PassContext, PipelineState, run_passes
    from neuronsim.verify.racecheck import check_stream

    started, before = time.perf_counter(), cpu_usage()
    program = synthetic_program(n)
    built, built_usage = time.perf_counter() - started, cpu_usage(before)
    gc.collect()
    gc.freeze()
    ctx = PassContext(verify=True)
    started, cpu, before = time.perf_counter(), time.process_time(), cpu_usage()
    state = run_passes(PipelineState.of(program), ctx=ctx)
    compile_s = time.perf_counter() - started
    t0 = time.perf_counter()
    report = check_stream(state.stream, state.stream.resolve(state.deps))
    check_s = time.perf_counter() - t0
    cpu, usage = time.process_time() - cpu, cpu_usage(before)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    passes = {r.spec: round(r.seconds, 2) for r in ctx.records}
    result = {"n": n, "virtual_tensors": sum(t.is_virtual for t in program.tensors.values()),
              "build_s": round(built, 2), "compile_s": round(compile_s, 2),
              "verify_s": round(compile_s - sum(r.seconds for r in ctx.records), 2), "check_s": round(check_s, 2),
              "total_s": round(compile_s + check_s, 2), "cpu_s": round(cpu, 2), "passes": passes,
              "peak_rss_mib": round(rss), "races": report.total_races, "access_events": report.access_events,
              "build_usage": built_usage, "usage": usage}
    # saving needs the final structure and its dep table only: the stream, its events, the
    # check's results and the input program go first, as a command writing the program would
    # let them go, so that writing the deps into instruction objects adds to what is left
    structure, table = state.structure, state.table
    del state, report, program
    gc.collect()
    t0 = time.perf_counter()
    saved = structure if table is None else write_deps(structure, table)  # builds the instruction objects
    result["deps"] = sum(len(i.deps) for i, _ in saved.instructions())
    result["materialize_s"] = round(time.perf_counter() - t0, 2)
    result["process_peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return result


def cpu_usage(since: dict | None = None) -> dict:
    """The process's user and system CPU seconds and minor page faults (since ``since``).

    Why apart: on a virtual machine whose host takes freed pages back, the first touch of a
    page costs the guest a fault that grows dearer with the memory in use; that is system time,
    and it is what grows faster than the instructions from 1e6 to 1e7 (performance notes 2.9)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    now = {"user_s": r.ru_utime, "sys_s": r.ru_stime, "faults": r.ru_minflt}
    if since is None:
        return now
    return {k: round(now[k] - since[k], 2) for k in now}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", default=["1e4", "1e5", "1e6"])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_one(int(float(args.sizes[0])))))
        return
    for size in args.sizes:
        out = subprocess.run([sys.executable, __file__, size, "--child"], check=True, capture_output=True, text=True)
        r = json.loads(out.stdout)
        n = r["n"]
        passes = "  ".join(f"{k} {v:.2f}" for k, v in r["passes"].items())
        print(f"N={n:,}  ({r['virtual_tensors']:,} virtual tensors, {r['access_events']:,} access events)", flush=True)
        print(f"  passes (s): {passes}  verification {r['verify_s']:.2f}")
        # the floor: building the synthetic program, pure Python in the same process; on a shared
        # machine compare figures as ratios to it rather than as seconds
        floor = max(r["build_s"], 0.01)
        ratios = "  ".join(f"{k} {v / floor:.2f}" for k, v in [*r["passes"].items(), ("verification", r["verify_s"]),
                                                                 ("compile", r["compile_s"]), ("check", r["check_s"])])
        print(f"  floor (building the program) {r['build_s']:.2f} s; as ratios to it: {ratios}")
        print(f"  compile {r['compile_s']:.2f} s + check {r['check_s']:.2f} s = {r['total_s']:.2f} s wall "
              f"({r['cpu_s']:.2f} s CPU), peak RSS {r['peak_rss_mib']:,} MiB, {r['deps']:,} deps, "
              f"{r['races']} races; writing the deps into instructions (for saving) {r['materialize_s']:.2f} s, "
              f"the whole process's peak RSS then {r['process_peak_rss_mib']:,} MiB")
        b, u = r["build_usage"], r["usage"]
        print(f"  CPU split: building {b['user_s']:.2f} s user + {b['sys_s']:.2f} s system ({b['faults']:,.0f} page "
              f"faults); compile + check {u['user_s']:.2f} s user + {u['sys_s']:.2f} s system ({u['faults']:,.0f} "
              f"page faults); user time {u['user_s'] / max(b['user_s'], 0.01):.2f}x the floor's")
        if n == 1_000_000:
            met = r["total_s"] < GOAL_S and r["peak_rss_mib"] < GOAL_MIB
            print(f"  goal (compile + check of 1e6 in < {GOAL_S:.0f} s and < {GOAL_MIB} MiB): "
                  f"{'met' if met else 'NOT met'}", flush=True)


if __name__ == "__main__":
    main()
