"""Progress of long work on standard error: a live bar on a terminal, a summary line otherwise.

A command opens one :class:`Progress` and runs each long stage (unroll, a pass, the race
check, a simulated run) inside :meth:`Progress.stage`, feeding it ``update(done)`` (its unit
is named in the singular).  On a terminal the stage is a transient rich progress bar (gone when the command prints its
result); when standard error is not a terminal (a log, CI) nothing moves, and a stage whose
work reached :data:`SUMMARY_MIN` units prints one summary line when it ends
(``check: 3,000,000 instances in 41.2 s``), so a long batch run still says where its time
went.  Small work prints nothing, and a stage that fails prints nothing either: an error stays
one line.  With ``announce=True`` (``neuronsim run``, whose stages are long well below
:data:`SUMMARY_MIN`) a stage of that much work also says when it starts (``simulate: 5 runs of
25,088 instances ...``), and any stage that took :data:`SLOW_SECONDS` or more prints its
summary line however small its count, so a long run is never silent off a terminal.

>>> import io
>>> out = io.StringIO()
>>> with Progress(live=False, stream=out) as progress:
...     with progress.stage("check", 200_000, unit="instance") as update:
...         update(200_000)
>>> out.getvalue().startswith("check: 200,000 instances in ")
True
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TextIO

from neuronsim.passes.base import program_unread

__all__ = ["Progress", "SUMMARY_MIN", "SLOW_SECONDS", "Update", "pass_progress", "stage_line", "stage_or_nothing"]

#: Work units (instances, examples) from which a stage prints its summary line off a terminal.
SUMMARY_MIN = 100_000

#: Seconds from which an announcing stage prints its summary line, whatever its size.
SLOW_SECONDS = 2.0

#: ``update(done)``, or ``update(done, description)`` to rename the running step.
Update = Callable[..., None]


class Progress:
    """The progress display of one command (a context manager)."""

    def __init__(self, *, live: bool | None = None, stream: TextIO | None = None, summary_min: int = SUMMARY_MIN,
                 announce: bool = False) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.summary_min = summary_min
        self.announce = announce
        self._bar = None
        self.seconds: dict[str, float] = {}
        """Seconds of each stage, by label (a repeated label adds up; a stage an exception ended
        counts too: a compile that found no room before ``run`` traced the kernel again took its time)."""
        self.beside: dict[str, float] = {}
        """Seconds of work that ran on a thread of its own beside the stages (``run``'s user
        reference), by label: inside the stages' seconds and the process's memory already, said
        apart so that a slow reference is not read as a slow simulation (a probe)."""

    def __enter__(self) -> Progress:
        if self.live:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as Bar

            console = Console(file=self.stream, highlight=False, force_terminal=True)
            self._bar = Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            console=console, transient=True)
            self._bar.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)
            self._bar = None

    @contextmanager
    def stage(self, label: str, total: int | None, *, unit: str = "", size: int | None = None) -> Iterator[Update]:
        """Run one stage of ``total`` steps (None: unknown); ``size`` is the work it stands for
        (default ``total``), which decides whether its summary line is printed."""
        started = time.perf_counter()
        work = total if size is None else size
        big = work is not None and work >= self.summary_min
        if self.announce and not self.live and big:
            what = f"{total:,} {_plural(unit, total)}".rstrip() if total is not None else "started"
            self._line(f"{label}: {what}{'' if size is None or size == total else f' ({size:,} in all)'} ...")
        task = self._bar.add_task(label, total=total) if self._bar is not None else None
        reached = [None]

        def update(done: int, description: str | None = None) -> None:
            reached[0] = done
            if task is not None:
                described = {"description": f"{label}: {description}"} if description else {}
                self._bar.update(task, completed=done, **described)

        try:
            yield update
        finally:
            if task is not None:
                self._bar.remove_task(task)
            seconds = time.perf_counter() - started
            self.seconds[label] = self.seconds.get(label, 0.0) + seconds
        if not self.live and (big or (self.announce and seconds >= SLOW_SECONDS and size != -1)):
            if total is None:
                what = "done"
            elif reached[0] is not None and reached[0] < total:  # stopped early (--fail-fast)
                what = f"{reached[0]:,} of {total:,} {_plural(unit, total)}".rstrip()
            else:
                what = f"{total:,} {_plural(unit, total)}".rstrip()
            self._line(f"{label}: {what} in {seconds:.1f} s")

    def _line(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()


@contextmanager
def stage_or_nothing(progress: Progress | None, label: str, total: int | None, *, unit: str = "",
                     size: int | None = None) -> Iterator[Update]:
    """:meth:`Progress.stage` of ``progress``, or a stage that shows nothing when it is None
    (library calls that run without a display)."""
    if progress is None:
        yield lambda *_args: None
        return
    with progress.stage(label, total, unit=unit, size=size) as update:
        yield update


def pass_progress(update: Update, passes: Sequence) -> Callable[..., None]:
    """An ``after_pass`` hook for :func:`passes.run_pipeline`: after pass ``k`` the stage
    shows ``k`` done and names the pass that runs next."""
    names = [p.spec_string() for p in passes]
    done = iter(range(1, len(names) + 1))
    if names:
        update(0, names[0])

    @program_unread
    def hook(_stage, _program, _ctx) -> None:
        k = next(done)
        update(k, names[k] if k < len(names) else None)

    return hook


def stage_line(seconds: dict[str, float], total: float, beside: dict[str, float] | None = None) -> str:
    """One line of what each stage cost, and the rest of ``total`` (files, imports, printing);
    then what ran ``beside`` them on a thread of its own (:attr:`Progress.beside`).

    >>> stage_line({"trace": 1.25, "simulate": 2.0}, 4.0)
    'stages: trace 1.2 s, simulate 2.0 s, other 0.8 s; total 4.0 s'
    >>> stage_line({"simulate": 2.0}, 2.5, {"reference": 1.5}).partition("; ")[2]
    'total 2.5 s (the reference ran 1.5 s on a thread of its own, inside these)'
    """
    parts = [f"{label} {value:.1f} s" for label, value in seconds.items()]
    parts.append(f"other {max(0.0, total - sum(seconds.values())):.1f} s")
    apart = ", ".join(f"the {label} ran {value:.1f} s" for label, value in (beside or {}).items())
    return f"stages: {', '.join(parts)}; total {total:.1f} s" + (f" ({apart} on a thread of its own, inside these)"
                                                                  if apart else "")


def _plural(unit: str, count: int) -> str:
    """``pass`` -> ``passes``, ``instance`` -> ``instances`` (units are given singular)."""
    if count == 1 or not unit:
        return unit
    return unit + ("es" if unit.endswith("s") else "s")
