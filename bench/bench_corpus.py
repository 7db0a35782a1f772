"""The corpus run: every kernel function of the public NKI corpus, as written, end to end.

Finds the kernel functions of ``--corpus DIR`` (else the folder ``NEURONSIM_NKI_CORPUS`` names; a
folder holding aws-neuron-sdk, nki-samples and nki-library, kept outside the repository;
:mod:`corpus_cases_discover` says what counts), runs each one in a process of its own
with the inputs of its case (:mod:`corpus_cases`; :mod:`corpus_cases_run` is the process), under
a timeout and an address-space cap, so one hang or crash never stops the run.  Prints one line
per kernel, in corpus order::

    OUTCOME   TRS=  SECONDS  KERNEL  [file:line: message]

where ``TRS=`` says traced, compiled race-free, simulated, outputs equal to the case's numpy
reference (``-`` where not reached or no reference), then a TOTAL with the count of each
outcome (``equal``, ``ran``, ``problems``, ``refused``, ``internal``, ``timeout``, ``crashed``,
``no case``, ``subkernel``: a function decorated as a kernel that only another kernel calls,
with on-chip tiles, counted at the end by that kernel's outcome (:func:`by_caller`);
``one core``: refused at its line for a construct beyond one NeuronCore;
``unparsed``: the corpus file, or a module it imports, is not valid Python; ``as expected``:
refused with the error the kernel's corpus test or doc expects, or that Python raises on the
file as copied).  ``--json OUT`` writes one record
per kernel; ``--summary OUT`` the grouped failure summary (counts by outcome, then every cause
of a refusal, problem or internal error with the kernels it blocks, most kernels first).

Usage::

    .venv/bin/python bench/bench_corpus.py --jobs 2                     # the whole corpus
    .venv/bin/python bench/bench_corpus.py --filter nki/test/ --filter mamba --timeout 30
    .venv/bin/python bench/bench_corpus.py --list    # what is found: case / pending (why in the table) / absent
    .venv/bin/python bench/bench_corpus.py --json out/corpus.json --summary out/corpus.txt
    .venv/bin/python bench/bench_corpus.py --records out/corpus.json --summary out/again.txt  # count again
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from corpus_cases_discover import CORPUS_VARIABLE, KernelSite, corpus_folder, discover

HERE = Path(__file__).resolve().parent
OUTCOMES = ("equal", "ran", "problems", "refused", "internal", "timeout", "crashed", "no case", "subkernel",
            "one core", "unparsed", "as expected")
#: Outcomes that count as a kernel running correctly.
GOOD = ("equal", "ran")
#: Outcomes that are the right answer without a run: a multi-core construct refused at its line,
#: a corpus file that is not valid Python.
EXPECTED = ("one core", "unparsed", "as expected")


def run_site(corpus: Path, site: KernelSite, timeout: float, memory_mb: int) -> dict[str, Any]:
    """The record of one kernel, from its own worker process (a timeout or a crash included)."""
    from corpus_cases import CASES

    entry = CASES.get(site.key)  # a case may need a larger cap than the run's (Case.memory_mb)
    memory_mb = max(memory_mb, entry.memory_mb if entry is not None else 0)
    corpus = corpus.resolve()  # (run from the corpus's folder: its lines read nki-library/.../k.py:8)
    command = [sys.executable, str(HERE / "corpus_cases_run.py"), str(corpus), site.key, "--memory-mb", str(memory_mb)]
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
    start = time.perf_counter()
    base = {"kernel": site.key, "traced": False, "race_free": False, "simulated": False, "reference": False,
            "equal": False, "where": f"{site.path}:{site.line}", "instructions": 0}
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=corpus)
    except subprocess.TimeoutExpired:
        return {**base, "outcome": "timeout", "message": f"no result within {timeout:g} s", "seconds": timeout}
    lines = done.stdout.strip().splitlines()
    try:
        record = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        record = None
    if record is None:
        tail = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return {**base, "outcome": "crashed", "message": f"worker exit {done.returncode}: {tail}"[:400],
                "seconds": round(time.perf_counter() - start, 2)}
    return record


def flags(record: dict[str, Any]) -> str:
    marks = (("T", "traced"), ("R", "race_free"), ("S", "simulated"), ("=", "equal"))
    return "".join(mark if record.get(name) else "-" for mark, name in marks)


def line_of(record: dict[str, Any]) -> str:
    text = f"{record['outcome']:<9} {flags(record)} {record.get('seconds', 0):7.1f}s  {record['kernel']}"
    if record["outcome"] not in GOOD:
        where = f"{record['where']}: " if record.get("where") else ""
        text += f"  {where}{record.get('message', '')}"
    return text


def cause_of(record: dict[str, Any]) -> str:
    """The message with what varies between kernels (numbers, quoted names, tensor names) blanked,
    so kernels blocked by one construct group together."""
    message = record.get("message", "")
    message = re.sub(r"^\d+ problem\(s\): ", "", message)
    # a missing module's name is the cause itself: kept whole, the rest blanked around it
    kept = re.findall(r"No module named '[^']*'", message)
    message = re.sub(r"No module named '[^']*'", "@KEPT@", message)
    message = re.sub(r"'[^']*'|\"[^\"]*\"", "'_'", message)
    message = re.sub(r"\b[A-Za-z_]\w*_\d+\b", "<tensor>", message)
    message = re.sub(r"\d+", "N", message)
    for name in kept:
        message = message.replace("@KEPT@", name, 1)
    return f"{record['outcome']}: {message[:160]}"


def by_caller(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each subkernel's record with its caller's outcome: ``ran`` when the kernel whose case runs
    it ran correctly in this run (its code ran inside that checked run), else that kernel's
    outcome (it was not shown to run).  A subkernel whose caller is not in the run (``--filter``)
    stays ``subkernel``."""
    from corpus_cases import CASES

    by_key = {r["kernel"]: r for r in records}
    resolved = []
    for record in records:
        entry = CASES.get(record["kernel"])
        caller = by_key.get(entry.caller) if record["outcome"] == "subkernel" and entry is not None else None
        if caller is None:
            resolved.append(record)
            continue
        name = caller["kernel"].rsplit("::", 1)[-1]
        if caller["outcome"] in GOOD:
            outcome, message = "ran", f"runs inside {name}, which ran correctly ({caller['outcome']})"
        else:
            outcome, message = caller["outcome"], f"runs inside {name}: {caller.get('message', '')}"
        resolved.append({**record, "outcome": outcome, "message": message, "subkernel_of": caller["kernel"],
                         "traced": caller["traced"], "race_free": caller["race_free"],
                         "simulated": caller["simulated"]})
    return resolved


def totals(records: list[dict[str, Any]]) -> str:
    counts = Counter(r["outcome"] for r in records)
    good = sum(counts[o] for o in GOOD)
    share = 100.0 * good / len(records) if records else 0.0
    # the acceptance's share: kernels that run correctly or get their expected answer, of those
    # with a run of their own (a subkernel runs inside its caller's case)
    own = len(records) - counts["subkernel"]
    right = good + sum(counts[o] for o in EXPECTED)
    right_share = 100.0 * right / own if own else 0.0
    parts = ", ".join(f"{counts[o]} {o}" for o in OUTCOMES if counts[o])
    inside = sum(1 for r in records if r.get("subkernel_of"))
    counted = f" ({inside} subkernels counted by the kernel that runs them)" if inside else ""
    return (f"TOTAL {len(records)} kernels: {parts}{counted}; running correctly {good} ({share:.1f} %); "
            f"running correctly or refused as expected {right} of {own} with a run of their own ({right_share:.1f} %)")


def summary(records: list[dict[str, Any]], seconds: float) -> str:
    """The grouped failure summary (module doc)."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        if record["outcome"] not in GOOD:  # expected refusals listed too, under their own outcome
            groups[cause_of(record)].append(record)
    out = [totals(records), f"wall time {seconds:.0f} s", ""]
    out += [f"  {o:<9} {sum(1 for r in records if r['outcome'] == o)}" for o in OUTCOMES]
    out += ["", "causes, by kernels blocked:"]
    for cause, hit in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])):
        out.append(f"\n[{len(hit)}] {cause}")
        out += [f"    {r['kernel']}  ({r.get('where') or '-'})" for r in hit]
    return "\n".join(out) + "\n"


def write_outputs(records: list[dict[str, Any]], seconds: float, json_out: Path | None,
                  summary_out: Path | None) -> None:
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(records, indent=1) + "\n")
    if summary_out:
        summary_out.parent.mkdir(parents=True, exist_ok=True)
        summary_out.write_text(summary(records, seconds))


def recount(path: Path, json_out: Path | None, summary_out: Path | None) -> int:
    """``--records``: a saved run (or records of your own) counted again, as the run counts them."""
    try:
        records = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        print(f"{path}: not a readable records file: {err}", file=sys.stderr)
        return 2
    bad = next((i for i, r in enumerate(records) if not isinstance(r, dict) or not {"kernel", "outcome"} <= r.keys()),
               None) if isinstance(records, list) else -1
    if bad is not None:
        where = f"{path}" if bad < 0 else f"{path}: [{bad}]"
        print(f"{where}: expected a list of records with 'kernel' and 'outcome' (what --json writes)", file=sys.stderr)
        return 2
    records = by_caller(records)
    for record in records:
        print(line_of(record))
    print(totals(records))
    write_outputs(records, 0.0, json_out, summary_out)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", help=f"the corpus folder (default: ${CORPUS_VARIABLE})")
    parser.add_argument("--jobs", type=int, default=1, help="kernels run at once")
    parser.add_argument("--filter", action="append", default=[],
                        help="only kernels whose key contains this (repeat: any of them)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per kernel")
    parser.add_argument("--memory-mb", type=int, default=4096, help="address-space cap per kernel")
    parser.add_argument("--json", type=Path, help="write one record per kernel here")
    parser.add_argument("--summary", type=Path, help="write the grouped failure summary here")
    parser.add_argument("--list", action="store_true", help="list the kernel functions found, run nothing")
    parser.add_argument("--records", type=Path, help="count the records a run wrote with --json instead of running "
                        "(subkernels by their caller, TOTAL, --json, --summary)")
    args = parser.parse_args(argv)
    if args.records:
        return recount(args.records, args.json, args.summary)
    corpus = corpus_folder(args.corpus)
    if isinstance(corpus, str):
        print(corpus, file=sys.stderr)
        return 2
    if args.jobs < 1 or args.timeout <= 0 or args.memory_mb < 256:
        print("--jobs must be >= 1, --timeout > 0, --memory-mb >= 256", file=sys.stderr)
        return 2
    sites = [s for s in discover(corpus) if not args.filter or any(f in s.key for f in args.filter)]
    if args.list:
        from corpus_cases import CASES

        for site in sites:
            entry = CASES.get(site.key)
            status = "absent" if entry is None else "pending" if entry.missing else "case"
            print(f"{site.found_by:<9} {status:<7} {site.key}")
        print(f"{len(sites)} kernel functions")
        return 0
    start = time.perf_counter()
    records: list[dict[str, Any]] = []
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_site, corpus, s, args.timeout, args.memory_mb) for s in sites]
        for future in futures:  # in corpus order, each as soon as it and those before it are done
            records.append(future.result())
            print(line_of(records[-1]), flush=True)
    records = by_caller(records)
    for record in records:
        if record.get("subkernel_of"):
            print(line_of(record), flush=True)
    seconds = time.perf_counter() - start
    print(f"{totals(records)}; {seconds:.0f} s with --jobs {args.jobs}")
    write_outputs(records, seconds, args.json, args.summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
