"""One kernel of the corpus run, in a process of its own: ``corpus_cases_run.py CORPUS KEY``.

Loads the kernel (``neuronsim.machine.nki.load_kernel``), draws its case's inputs
(:mod:`corpus_cases`), traces it (``trace``) and runs the traced program end to end
(``neuronsim.verify.nki.run.run_traced``: NKI findings, compile, race checks, simulation under
several interleavings, outputs against the case's numpy reference), then prints one JSON record
as its last line of standard output.  The process's address space is capped
(``--memory-mb``), so a kernel that outgrows it fails alone, as a crash of its own process.

Outcomes: ``equal`` (outputs equal to the reference, no race, no finding), ``ran`` (no
reference: traced, compiled race-free, simulated, interleavings agree), ``problems`` (it ran;
races, findings or outputs off), ``refused`` (a located refusal or kernel error, ``where`` is
its ``file:line``), ``internal`` (an exception of neuronsim's own code), ``no case``,
``subkernel`` (decorated, but called only from another kernel with on-chip arguments),
``one core`` (refused at its line for a construct beyond one NeuronCore: collectives,
send/receive, core barriers), ``unparsed`` (the corpus file itself, or a module it imports, is
not valid Python), ``as expected`` (refused with the error the case's ``refusal`` names: what
the corpus's own test or doc expects, or Python's own error on the file as copied).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

#: Package roots the corpus's kernels import from (nki-library's kernels use package-relative
#: imports below ``nkilib``; its tests import ``nkilib_src.nkilib`` and ``test.*``).
IMPORT_ROOTS = ("nki-library/src/nkilib_src", "nki-library/src", "nki-library", "nki-samples/src")


#: What the frontend's refusals of multi-core constructs (collectives, send/receive, core
#: barriers) say: such a refusal is the expected answer of a one-core model (outcome ``one core``).
ONE_CORE = "neuronsim models one NeuronCore"


def _syntax_error(path: Path) -> tuple[str, str] | None:
    """``("file.py:LINE", "corpus file does not parse: ...")`` when the corpus file itself is not
    valid Python (a snippet pasted with a missing parenthesis): not neuronsim's failure."""
    import ast

    try:
        ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except SyntaxError as err:
        return f"{path.name}:{err.lineno}", f"corpus file does not parse: SyntaxError: {err.msg}"
    return None


def _where_and_message(text: str) -> tuple[str, str]:
    """``("file.py:LINE", "what")`` of a located error's text (``where`` empty when it has none)."""
    head, sep, rest = text.partition(": ")
    if sep and (".py" in head or head.startswith("<")):
        return head, rest
    return "", text


def _scalars(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The kernel's arguments that are not arrays, by parameter name (what the reference gets
    beside the input arrays)."""
    import inspect

    import numpy as np

    try:
        bound = inspect.signature(func).bind_partial(*args, **kwargs).arguments
    except TypeError:  # the trace has accepted the call; a signature it cannot bind adds nothing
        bound = dict(kwargs)
    return {k: v for k, v in bound.items() if not isinstance(v, np.ndarray)}


def _accepting(reference: Any) -> Any:
    """``reference`` called with only the arguments it names: the trace's inputs also hold the
    constants a kernel makes (``nl.shared_identity_matrix``), which no reference asks for."""
    import functools
    import inspect

    parameters = inspect.signature(reference).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return reference
    names = {p.name for p in parameters}

    @functools.wraps(reference)
    def call(**given: Any) -> Any:
        return reference(**{k: v for k, v in given.items() if k in names})

    return call


def run_one(corpus: Path, key: str) -> dict[str, Any]:
    """The record of running kernel ``key`` (module doc)."""
    from corpus_cases import CASES, inputs_of

    record: dict[str, Any] = {"kernel": key, "traced": False, "race_free": False, "simulated": False,
                              "reference": False, "equal": False, "where": "", "message": "", "instructions": 0}
    entry = CASES.get(key)
    if entry is None:
        return {**record, "outcome": "no case", "message": "no case in bench/corpus_cases*.py"}
    if entry.missing:
        return {**record, "outcome": "no case", "message": f"no case: {entry.missing}"}
    if not entry.standalone:
        return {**record, "outcome": "subkernel", "message": f"called from another kernel: {entry.note}"}
    record["reference"] = entry.reference is not None
    path, func = key.split("::")
    unparsed = _syntax_error(corpus / path)
    if unparsed:
        return {**record, "outcome": "unparsed", "where": unparsed[0], "message": unparsed[1]}
    for root in reversed(IMPORT_ROOTS):
        sys.path.insert(0, str(corpus / root))
    from corpus_standins import install

    install()  # torch, neuron_dtypes: imported by the corpus's test harness, absent here

    from neuronsim.machine.ir.errors import ProgramError
    from neuronsim.machine.nki import load_kernel, trace
    from neuronsim.machine.nki.errors import NkiInternalError
    from neuronsim.verify.nki.run import run_traced

    # as when the file runs as a script or under pytest: its folder is on the path, so it can
    # import the modules beside it (the MX deep dive's helpers)
    sys.path.insert(0, str((corpus / path).parent))
    stage = "loading"
    try:
        kernel = load_kernel(f"{corpus / path}::{func}")
        from neuronsim.machine.nki.kernel import unwrap

        args, kwargs = inputs_of(key, entry, unwrap(kernel)[0].__globals__)
        stage = "tracing"
        options = {"grid": entry.grid} if entry.grid is not None else {}
        if entry.machine is not None:  # (else the kernel's own platform_target: a probe)
            options["machine"] = entry.machine
        if entry.ranks > 1:
            options["ranks"] = entry.ranks
        # kernels print (the SDK's print examples); their output is not the record's
        with contextlib.redirect_stdout(io.StringIO()):
            traced = trace(kernel, *args, **options, **kwargs)
            record["traced"] = True
            record["instructions"] = sum(1 for _ in traced.program.instructions())
            stage = "running"
            scalars = _scalars(unwrap(kernel)[0], args, kwargs)
            reference = _accepting(entry.reference) if entry.reference else None
            rtol, atol = entry.tolerance or (None, None)
            report = run_traced(traced, func, reference=reference, kwargs=scalars, rtol=rtol, atol=atol)
            if entry.decode is not None:  # compared as the values the packed outputs hold
                decoded = entry.decode(dict(report.run.outputs))
                report = dataclasses.replace(report, run=dataclasses.replace(report.run, outputs=decoded))
    except NkiInternalError as err:
        where, message = _where_and_message(str(err))
        cause = err.__cause__
        detail = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
        return {**record, "outcome": "internal", "where": where, "message": f"{message}{detail}"[:400]}
    except ProgramError as err:  # NkiError included: a located refusal or the kernel's own error
        where, message = _where_and_message(str(err))
        outcome = "one core" if ONE_CORE in message else "refused"
        if stage == "loading" and message.startswith("SyntaxError: "):
            # a module the kernel's file imports is not valid Python (the kernel's own file is
            # checked above): the corpus as copied cannot run it, on NKI either
            return {**record, "outcome": "unparsed", "where": where,
                    "message": f"a corpus file it imports does not parse: {message}"[:400]}
        if entry.refusal and entry.refusal in message:
            outcome = "as expected"  # the corpus's test expects exactly this failure
        return {**record, "outcome": outcome, "where": where, "message": f"{stage}: {message}"[:400]}
    except MemoryError:
        return {**record, "outcome": "internal", "message": f"{stage}: out of memory (the worker's cap)"}
    except Exception as err:  # noqa: BLE001 - anything else escaping neuronsim is a bug to count
        tb = err.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        at = f" at {Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno}" if tb else ""
        return {**record, "outcome": "internal", "message": f"{stage}: {type(err).__name__}: {err}{at}"[:400]}
    run = report.run
    record["race_free"] = not run.compiled_report.races and not run.report.races
    record["simulated"] = True
    record["warnings"] = [finding.describe()[:300] for finding in report.findings if not finding.is_error]
    problems = report.problems()
    record["equal"] = record["reference"] and not problems
    if problems:
        where, message = _where_and_message(problems[0])
        return {**record, "outcome": "problems", "where": where,
                "message": f"{len(problems)} problem(s): {problems[0]}"[:400]}
    return {**record, "outcome": "equal" if record["reference"] else "ran"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("key")
    parser.add_argument("--memory-mb", type=int, default=4096, help="address-space cap of this process")
    args = parser.parse_args(argv)
    cap = args.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    start = time.perf_counter()
    record = run_one(args.corpus.resolve(), args.key)
    record["seconds"] = round(time.perf_counter() - start, 2)
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
