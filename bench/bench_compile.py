"""Compile throughput of the default pipeline at 1e4, 1e5 and 1e6 instructions.

Synthetic flat programs with storage reuse, in the spirit of performance-notes section 3:
a pool of logical SBUF tiles mapped onto fewer physical slots (so different tensors share
bytes), each instruction reading one or two tiles (80 % among the 64 most recently written)
and writing one; DMA loads from DRAM onto three queues from two sequencers, compute on ACT /
DVE / POOL, matmuls on PE into eight PSUM banks evicted by DVE / ACT, and DMA stores back.

Each size runs in its own process (so peak RSS is that size's).  Printed per size: time of
each pass, total compile time with and without verification between passes, instructions per
second (from wall time), CPU time of the process (the machine may be shared: compare the two),
peak RSS, deps written and the race check's verdict on the result for sizes up to 1e5 (the
checker is the slow part at 1e6; pass ``--check`` to force it).

Usage::

    .venv/bin/python bench/bench_compile.py            # 1e4 1e5 1e6
    .venv/bin/python bench/bench_compile.py 1e5 --check
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from machine.ir import Access, Instruction, MemoryKind, Program, Tensor, frozen_mapping  # noqa: E402

LOGICAL_TILES = 4096
PHYSICAL_SLOTS = 512
TILE = (128, 64)  # float32: 256 bytes per partition
PSUM_TILES = 32


def synthetic_program(n: int, seed: int = 0) -> Program:
    """A flat program of ``n`` instructions with storage reuse (see the module doc)."""
    rnd = random.Random(seed)
    tensors: dict[str, Tensor] = {}
    tile_bytes = TILE[1] * 4
    for i in range(LOGICAL_TILES):
        slot = i % PHYSICAL_SLOTS
        tensors[f"t{i}"] = Tensor(f"t{i}", MemoryKind.SBUF, "float32", TILE, partition=0, offset=slot * tile_bytes)
    for i in range(PSUM_TILES):
        tensors[f"p{i}"] = Tensor(f"p{i}", MemoryKind.PSUM, "float32", TILE, partition=0, bank=i % 8, offset=(i // 8 % 4) * tile_bytes)
    rows = max(1, n // 8)
    tensors["x"] = Tensor("x", MemoryKind.DRAM, "float32", (rows, 128, 64), address=0, role="input")
    tensors["y"] = Tensor("y", MemoryKind.DRAM, "float32", (rows, 128, 64), address=rows * 128 * 64 * 4, role="output")
    whole = {f"t{i}": Access(f"t{i}") for i in range(LOGICAL_TILES)}
    pwhole = {f"p{i}": Access(f"p{i}") for i in range(PSUM_TILES)}
    recent: list[str] = []  # recently written SBUF tiles
    evict: list[str] = []   # PSUM tiles written and not yet evicted
    body: list[Instruction] = []
    row_in = row_out = 0
    acc = frozen_mapping({"accumulate": False})
    for k in range(n):
        roll = rnd.random()
        if roll < 0.15 or len(recent) < 4:
            dst = f"t{rnd.randrange(LOGICAL_TILES)}"
            src = Access("x", offset=(row_in % rows) * 8192, pattern=((64, 128), (1, 64)))
            row_in += 1
            inst = Instruction(f"ld{k}", rnd.choice(("sp", "act")), "dma_copy", (src,), (whole[dst],),
                               queue=f"dma{rnd.randrange(2)}")
            recent.append(dst)
        elif roll < 0.22:
            src = rnd.choice(recent[-64:])
            dst = Access("y", offset=(row_out % rows) * 8192, pattern=((64, 128), (1, 64)))
            row_out += 1
            inst = Instruction(f"st{k}", "sp", "dma_copy", (whole[src],), (dst,), queue="dma2")
        elif roll < 0.40:
            a, b = rnd.choice(recent[-64:]), rnd.choice(recent[-64:])
            p = f"p{rnd.randrange(PSUM_TILES)}"
            inst = Instruction(f"mm{k}", "pe", "matmul", (whole[a], whole[b]), (pwhole[p],), acc)
            evict.append(p)
        else:
            dst = f"t{rnd.randrange(LOGICAL_TILES)}"
            if evict and rnd.random() < 0.5:
                src = evict.pop()
                inst = Instruction(f"ev{k}", rnd.choice(("dve", "act")), "tensor_copy", (pwhole[src],), (whole[dst],))
            else:
                src, other = rnd.choice(recent[-64:]), rnd.choice(recent[-64:])
                engine = rnd.choice(("dve", "pool", "act"))
                if engine == "act":
                    inst = Instruction(f"op{k}", engine, "activation", (whole[src],), (whole[dst],))
                else:
                    inst = Instruction(f"op{k}", engine, "tensor_tensor", (whole[src], whole[other]), (whole[dst],))
            recent.append(dst)
        body.append(inst)
        if len(recent) > 256:
            del recent[:128]
        if len(evict) > 64:
            del evict[:32]
    return Program(frozen_mapping(tensors), tuple(body), "trn1")


def run_one(n: int, check: bool, verify: bool) -> dict:
    from passes import PassContext, run_pipeline

    started = time.perf_counter()
    program = synthetic_program(n)
    built = time.perf_counter() - started
    gc.collect()
    gc.freeze()
    gc.disable()
    ctx = PassContext(verify=verify)
    started, cpu = time.perf_counter(), time.process_time()
    compiled = run_pipeline(program, ctx=ctx)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    deps = sum(len(i.deps) for i, _ in compiled.instructions())
    out = {"n": n, "build_s": round(built, 2), "compile_s": round(seconds, 2), "cpu_s": round(cpu, 2), "verify": verify,
           "instr_per_s": round(n / seconds), "deps": deps,
           "passes": {r.spec: round(r.seconds, 2) for r in ctx.records},
           "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}
    if check:
        from verify.racecheck import check_program

        started = time.perf_counter()
        report = check_program(compiled)
        out["check_s"] = round(time.perf_counter() - started, 2)
        out["races"] = len(report.races)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", default=["1e4", "1e5", "1e6"])
    parser.add_argument("--check", action="store_true", help="race-check the result at every size")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-verify", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        n = int(float(args.sizes[0]))
        print(json.dumps(run_one(n, args.check, not args.no_verify)))
        return
    print(f"{'N':>9} {'verify':>6} {'wall s':>8} {'cpu s':>8} {'instr/s':>9} {'peak RSS':>10} {'deps':>8}  passes (wall s)  [race check]")
    for size in args.sizes:
        n = int(float(size))
        for verify in (True, False):
            cmd = [sys.executable, __file__, size, "--child"]
            if args.check or (n <= 100_000 and verify):
                cmd.append("--check")
            if not verify:
                cmd.append("--no-verify")
            result = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
            passes = " ".join(f"{k}={v}" for k, v in result["passes"].items())
            check = f"  [races={result['races']} in {result['check_s']} s]" if "races" in result else ""
            print(f"{n:>9} {str(verify):>6} {result['compile_s']:>8} {result['cpu_s']:>8} {result['instr_per_s']:>9} "
                  f"{result['peak_rss_mib']:>6} MiB {result['deps']:>8}  {passes}{check}", flush=True)


if __name__ == "__main__":
    main()
