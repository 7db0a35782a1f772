"""NKIBench: the timing model against a published benchmark's measured trn1 latencies.

NKIBench (AccelOpt, arXiv 2511.15915; https://github.com/zhang677/AccelOpt) holds 14 NKI
kernels taken from LLM workloads, most of them printed by neuronx-cc (fresh ``nl.arange`` per
operand, block arrays of tiles, ``lazy_initialization``), each with a numpy reference that
makes its inputs, and ``experiments/full_complete_local/profile_results.csv``: per kernel the
latency measured on trn1.32xlarge, the HBM, spill and SBUF bytes and the engines' active time
from the Neuron profiler.  The benchmark is third-party code: this script reads a checkout of
it (``--accelopt DIR`` or ``$NEURONSIM_ACCELOPT``; it was written against commit 47e29a7) and
copies nothing from it.

For each kernel: the reference module's ``get_inputs`` (numpy seeded 0) and
``transform_to_nki_inputs`` give the kernel's arguments (arrays to an ``.npz``, numbers as
``--arg``); ``neuronsim run KERNEL::kernel --timing-only --json`` compiles it as a traced
kernel is compiled and simulates it; the table sets the simulated makespan, the DMA bytes and
the ACT / DVE / PE active shares beside the measured ones.  A kernel neuronsim refuses or that
does not finish in ``--timeout`` seconds is a row saying so.  No constant of the model comes
from these figures (docs/timing.md).

Optimized kernels too: ``samples/nki/NAME_optimized.py`` is, by the checkout's README there, the
best kernel AccelOpt found for the NKIBench kernel whose name starts with NAME, and
``experiments/full_complete_local/results/*_best_plan_id.csv`` holds what the profiler measured
of the best kernel of each case.  Each such kernel is a row of its own (its file leaves the
imports to its profiling script, which puts them first; the copy run here does the same, in a
temporary folder), and the table ends with every baseline / optimized pair: the measured
speedup beside the simulated one, and whether the model ranks the two the way the hardware did.

    .venv/bin/python bench/bench_nkibench.py --accelopt DIR [--jobs 2] [--only NAME] [--skip NAME]
"""

from __future__ import annotations

import argparse
import ast
import csv
import importlib.util
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

PROFILES = "experiments/full_complete_local/profile_results.csv"
BEST_PLANS = "experiments/full_complete_local/results"
SAMPLES = "samples/nki"
#: What AccelOpt's profiling scripts write before a sample kernel's code (``samples/nki/profile_*.py``).
PRELUDE = ("import numpy as np\nimport neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"
           "import neuronxcc.nki.typing as nt\nimport neuronxcc.nki.isa as nisa\nfrom neuronxcc.nki import trace\n"
           "from neuronxcc.nki.language import par_dim\n\n")
WITHIN = 0.15
#: The issue's bar for an engine's share of the makespan: within 10 points of the measured one.
SHARE_POINTS = 10
#: The engines whose measured active share the profile gives (PE's column is FLOPs, not time).
PROFILED = {"act": "scalar_engine_active_time_percent", "dve": "vector_engine_active_time_percent"}


def cases(root: Path) -> list[dict]:
    """One dict per profiled kernel: name, kernel and reference files, the measured profile."""
    out = []
    with open(root / PROFILES, newline="") as f:
        for row in csv.DictReader(f):
            kernel = root / "NKIBench" / "kernels" / Path(row["kernel"]).name
            reference = root / "NKIBench" / "reference" / Path(row["task"]).name
            out.append({"name": kernel.stem.rsplit("_", 1)[0], "kernel": kernel, "reference": reference,
                        "measured": json.loads(row["profile"])})
    out.sort(key=lambda c: c["name"])
    return out + optimized_cases(root, out)


def _shape_key(name: str) -> frozenset[str]:
    """A case's name as a set of words: the best-plan table spells ``rope_..._B1_H64_N4096_D128``
    with its sizes in another order (``B1_D128_H64_N4096``)."""
    return frozenset(name.split("_"))


def optimized_cases(root: Path, baselines: list[dict]) -> list[dict]:
    """One dict per ``samples/nki/NAME_optimized.py`` whose baseline is one of ``baselines`` and
    whose case the best-plan table measured: run with the baseline's reference, its profile the
    best plan's."""
    measured = {}
    for table in sorted((root / BEST_PLANS).glob("*_best_plan_id.csv")):
        with open(table, newline="") as f:
            measured.update({_shape_key(row["case_name"]): json.loads(row["kernel_metadata"])
                             for row in csv.DictReader(f)})
    out = []
    for path in sorted((root / SAMPLES).glob("*_optimized.py")):
        prefix = path.stem.removesuffix("_optimized") + "_"
        base = next((c for c in baselines if c["name"].startswith(prefix)), None)
        if base is not None and _shape_key(base["name"]) in measured:
            out.append({"name": path.stem, "kernel": path, "reference": base["reference"], "prelude": True,
                        "baseline": base["name"], "measured": measured[_shape_key(base["name"])]})
    return out


def kernel_params(path: Path) -> list[str]:
    """The parameter names of the file's ``kernel`` function (read, not imported: it imports NKI)."""
    tree = ast.parse(path.read_text())
    func = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "kernel")
    return [a.arg for a in func.args.args]


def prepare(case: dict, folder: Path) -> list[str]:
    """Write the kernel's inputs; the arguments of ``neuronsim run`` for it."""
    spec = importlib.util.spec_from_file_location(f"ref_{case['name']}", case["reference"])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    np.random.seed(0)
    values = module.transform_to_nki_inputs(list(module.get_inputs()))
    kernel = case["kernel"]
    if case.get("prelude"):  # the imports its profiling script writes first
        kernel = folder / f"{case['name']}.py"
        kernel.write_text(PRELUDE + case["kernel"].read_text())
    params = kernel_params(kernel)
    arrays = {p: np.ascontiguousarray(v) for p, v in zip(params, values) if hasattr(v, "shape")}
    inputs = folder / f"{case['name']}.npz"
    np.savez(inputs, **arrays)
    args = [f"{Path(kernel).resolve()}::kernel", "--inputs", str(inputs)]
    for p, v in zip(params, values):
        if not hasattr(v, "shape"):
            args += ["--arg", f"{p}={v!r}"]
    return args


def run_one(case: dict, folder: Path, timeout: float, passes: str | None = None) -> dict:
    exe = shutil.which("neuronsim") or str(Path(sys.executable).with_name("neuronsim"))
    folder = folder.resolve()  # (it runs from the kernel's folder)
    args = prepare(case, folder)
    command = [exe, "run", *args, "--timing-only", "--json", "--out", str(folder / case["name"])]
    if passes:
        command += ["--passes", passes]
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              cwd=Path(args[0].partition("::")[0]).parent)  # (its lines: k.py:8)
    except subprocess.TimeoutExpired:
        return {**case, "error": f"not finished in {timeout:g} s"}
    case = {**case, "seconds": time.perf_counter() - started}  # trace, findings, compile, check, simulate
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.startswith("error")] or done.stderr.splitlines()[-1:]
        return {**case, "error": lines[-1] if lines else f"exit {done.returncode}"}
    return {**case, "result": json.loads(done.stdout)}


def _active(result: dict, engine: str) -> float:
    return next((e["active_share"] for e in result["timing"]["engines"] if e["name"] == engine), 0.0)


def report(rows: list[dict]) -> int:
    print(f"{'kernel':42s} {'sim ms':>8s} {'hw ms':>8s} {'sim/hw':>7s} {'DMA MB':>8s} {'HBM MB':>8s}  "
          f"{'ACT sim/hw %':>12s} {'DVE sim/hw %':>12s} {'PE sim/hw %':>11s} {'run s':>6s}")
    ratios, shares = [], []
    for row in rows:
        m = row["measured"]
        if "error" in row:
            print(f"{row['name']:42s} {'-':>8s} {m['latency']:8.3f}  refused: {row['error'][:110]}")
            continue
        r = row["result"]
        ms = r["timing"]["makespan_ns"] / 1e6
        ratio = ms / m["latency"]
        ratios.append(ratio)
        shares.append(all(abs(100 * (_active(r, e) - m[key])) <= SHARE_POINTS for e, key in PROFILED.items()))
        hbm = (m.get("hbm_read_bytes", 0) + m.get("hbm_write_bytes", 0)) / 1e6
        print(f"{row['name']:42s} {ms:8.3f} {m['latency']:8.3f} {ratio:7.2f} {r['timing']['dma_bytes'] / 1e6:8.1f} "
              f"{hbm:8.1f}  {100 * _active(r, 'act'):5.0f}/{100 * m['scalar_engine_active_time_percent']:<6.0f} "
              f"{100 * _active(r, 'dve'):5.0f}/{100 * m['vector_engine_active_time_percent']:<6.0f} "
              f"{100 * _active(r, 'pe'):4.0f}/{100 * m.get('hfu_estimated_percent', 0):<5.0f} {row['seconds']:6.1f}")
    within = sum(abs(math.log(x)) <= math.log(1 + WITHIN) for x in ratios)
    print(f"simulated: {len(ratios)} of {len(rows)}; within 15 % of the measured latency: {within}"
          + (f"; median |ln(sim/hw)| {statistics.median(abs(math.log(x)) for x in ratios):.3f}" if ratios else ""))
    print(f"ACT and DVE active shares both within {SHARE_POINTS} points of the measured ones: {sum(shares)} of "
          f"{len(shares)}")
    print("(PE's measured column is the profiler's estimated hardware FLOPs utilisation, not PE active time; "
          "run s: the wall seconds of `neuronsim run --timing-only` end to end, other runs at once with --jobs)")
    report_pairs(rows)
    return 0


def report_pairs(rows: list[dict]) -> None:
    """Each baseline / optimized pair both of whose kernels simulated: the speedups, and the order."""
    latency = {row["name"]: (row["result"]["timing"]["makespan_ns"] / 1e6, row["measured"]["latency"])
               for row in rows if "result" in row}
    pairs = [(row["baseline"], row["name"]) for row in rows if row.get("baseline")]
    pairs = [(b, o) for b, o in pairs if b in latency and o in latency]
    if not pairs:
        return
    print("baseline / optimized pairs (speedup = baseline latency / optimized latency):")
    kept = 0
    for base, opt in pairs:
        sim, hw = (latency[base][k] / latency[opt][k] for k in (0, 1))
        same = (sim > 1) == (hw > 1) and sim != 1
        kept += same
        print(f"  {opt:40s} measured {hw:5.2f}x  simulated {sim:5.2f}x  {'same order' if same else 'WRONG ORDER'}")
    print(f"pairs in the measured order: {kept} of {len(pairs)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--accelopt", default=os.environ.get("NEURONSIM_ACCELOPT"),
                        help="a checkout of github.com/zhang677/AccelOpt (default: $NEURONSIM_ACCELOPT)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--only", default=None, help="kernels whose name contains this")
    parser.add_argument("--skip", action="append", default=[], help="leave out kernels whose name contains this")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per kernel")
    parser.add_argument("--passes", default=None, metavar="SPEC",
                        help="compile with this pipeline instead of the traced kernels' (neuronsim run --passes)")
    args = parser.parse_args(argv)
    if not args.accelopt or not (Path(args.accelopt) / PROFILES).is_file():
        print(f"error: --accelopt: no {PROFILES} under {args.accelopt!r} (a checkout of AccelOpt)", file=sys.stderr)
        return 2
    chosen = [c for c in cases(Path(args.accelopt)) if (args.only is None or args.only in c["name"])
              and not any(skip in c["name"] for skip in args.skip)]
    with tempfile.TemporaryDirectory(prefix="nkibench-") as tmp:
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            rows = list(pool.map(lambda c: run_one(c, Path(tmp), args.timeout, args.passes), chosen))
    return report(rows)


if __name__ == "__main__":
    sys.exit(main())
