"""Where compile + check hold their bytes: each pass's own peak, and the line it peaks at.

Workload: ``bench_compile.py``'s synthetic program (a flat program of virtual tiles in phases).
The default pipeline runs with verification, then the race check, as ``bench_compile.py``
runs them, under ``tracemalloc`` (one frame); a thread polls the traced total every half
millisecond and, at each new maximum of the current stage (a pass, its verification, the
check), names the main thread's innermost frames of the package.  Printed per stage: its
peak and what is held at its end, in bytes per instruction beside the program (the program
is built before tracing starts), and the lines it peaked at.

Why traced bytes and not RSS: the stages' peaks are what compile + check of 1e7 instructions
must bring under 8 GiB (issue 31, ``docs/performance-notes.md`` 2.9); the traced figure is
the process's own allocations, repeatable from run to run, where RSS adds the allocator's
arenas.  ``tracemalloc`` slows the run about three times: 1e5 takes about a minute.

Walks that go a fixed number of instances or pairs at a time (``anti-deps``' chunks, the race
check's lookups) hold the same bytes at any size, so at 1e5 they weigh a hundred times what they
weigh at 1e7; ``--as-of 1e7`` shrinks those chunks by N / 1e7 to show each stage's peak in the
proportions of that size (the figures of performance notes 2.9 are taken so).

Usage: ``.venv/bin/python bench/bench_pass_memory.py [N] [--as-of M]`` (default 1e5).
"""

from __future__ import annotations

import argparse
import gc
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import neuronsim.machine
import neuronsim.passes
import neuronsim.verify
from bench_compile import synthetic_program

#: Where the package's rooms are (the checkout when installed editable, else site-packages):
#: only their frames name a peak.
PACKAGE_ROOMS = tuple(str(Path(room.__file__).resolve().parent) for room in
                      (neuronsim.machine, neuronsim.passes, neuronsim.verify))


class StagePeaks:
    """A thread that keeps, per stage label (``stage``, set by the caller), the highest
    :meth:`measure` seen, sampling every ``period`` seconds while the ``with`` block runs; a
    subclass says what it measures and what it keeps beside it (:meth:`keep`)."""

    period = 0.0005
    settle = 0.0  # seconds to go on sampling after the block ends (a last stage's tail)

    def __init__(self, first_stage: str) -> None:
        self.stage = first_stage
        self.peaks: dict = {}
        self._best: dict[str, int] = {}
        self._main = threading.get_ident()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        time.sleep(self.settle)
        self._stop.set()
        self._thread.join()

    def measure(self) -> int:
        raise NotImplementedError

    def keep(self, value: int):
        """What the peaks map holds for a new highest ``value`` (the value itself by default)."""
        return value

    def _poll(self) -> None:
        while not self._stop.is_set():
            value, stage = self.measure(), self.stage
            if value > self._best.get(stage, 0):
                self._best[stage] = value
                self.peaks[stage] = self.keep(value)
            time.sleep(self.period)


class PeakWatch(StagePeaks):
    """Per stage, the highest traced total and where the main thread was then."""

    def __init__(self) -> None:
        super().__init__("start")

    def measure(self) -> int:
        return tracemalloc.get_traced_memory()[0]

    def keep(self, value: int) -> tuple[int, str]:
        return value, self._where()

    def _where(self) -> str:
        frame, names = sys._current_frames().get(self._main), []
        while frame is not None and len(names) < 3:
            code = frame.f_code
            if code.co_filename.startswith(PACKAGE_ROOMS):
                names.append(f"{Path(code.co_filename).name}:{code.co_name}:{frame.f_lineno}")
            frame = frame.f_back
        return " < ".join(names)


def run_staged(program, enter, leave=lambda stage: None):
    """The default pipeline with verification on ``program``; ``enter(stage)`` as each pass and
    each verification starts (``"pass NAME"``, ``"verify NAME"``), ``leave(stage)`` as each
    verification returns.  The last state.  (``bench_stage_rss.py`` labels its stages so too.)"""
    from neuronsim.passes import PassContext, PipelineState, run_passes, runner

    verify, each = runner.verify_state, runner._each_pass

    def verified(new, old, **kw):  # the stage is the pass's verification until it returns
        stage = "verify " + kw.get("after", "?")
        enter(stage)
        try:
            return verify(new, old, **kw)
        finally:
            leave(stage)

    def labelled(value, passes, ctx, **kw):
        advance = kw["advance"]

        def run_one(p, state):
            enter("pass " + p.name)
            return advance(p, state)
        return each(value, passes, ctx, **{**kw, "advance": run_one})

    runner.verify_state, runner._each_pass = verified, labelled
    try:
        return run_passes(PipelineState.of(program), ctx=PassContext(verify=True))
    finally:
        runner.verify_state, runner._each_pass = verify, each


def scale_chunks(factor: float) -> None:
    """The fixed chunks of the walks scaled by ``factor`` (at least 256 each)."""
    import neuronsim.passes.anti_deps as anti_deps
    import neuronsim.verify.race_free as race_free

    for module in (anti_deps, race_free):
        module._CHUNK = max(256, int(module._CHUNK * factor))


def main(argv: list[str] | None = None) -> int:
    from neuronsim.verify.racecheck import check_stream

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", nargs="?", default="1e5")
    parser.add_argument("--as-of", default=None, help="show the peaks in the proportions of this size")
    args = parser.parse_args(argv)
    n = int(float(args.size))
    if args.as_of is not None:
        scale_chunks(n / float(args.as_of))
    program = synthetic_program(n)
    gc.collect()
    tracemalloc.start(1)
    held: dict[str, int] = {}
    with PeakWatch() as watch:
        def enter(stage: str) -> None:
            if stage.startswith("verify "):  # what the pass left, before its verification
                held["pass " + stage[7:]] = tracemalloc.get_traced_memory()[0]
            watch.stage = stage

        def leave(stage: str) -> None:
            held[stage] = tracemalloc.get_traced_memory()[0]

        state = run_staged(program, enter, leave)
        watch.stage = "check"
        check_stream(state.stream, state.stream.resolve(state.deps))
        held["check"] = tracemalloc.get_traced_memory()[0]
        time.sleep(0.01)
    print(f"N={n:,}: bytes per instruction beside the program")
    print(f"  {'stage':28s} {'peak':>7s} {'held':>7s}  peak at")
    for stage, (peak, where) in watch.peaks.items():
        if stage == "start":
            continue
        print(f"  {stage:28s} {peak / n:7.1f} {held.get(stage, 0) / n:7.1f}  {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
