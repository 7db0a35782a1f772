"""The API reference page (``docs/api.md``), generated from the docstrings by ``docs/generate.py``.

:data:`API` lists what a user of neuronsim as a library imports: reading and writing programs,
the IR, the pass pipeline and a pass of one's own, the race checker, the simulator and the
fuzzer.  Each entry gets its signature and its docstring, as the code has them; a class also
gets its public methods.  Nothing here is written by hand, so the page cannot drift from the
code (``tests/unit/test_docs.py`` checks it is current).
"""

from __future__ import annotations

import importlib
import inspect
import re

__all__ = ["API", "api_page"]

#: (module, names, what the section is for)
API: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("neuronsim.machine.formats.program_json", ("load_program", "loads_program", "save_program", "dumps_program"),
     "Reading and writing `neuronsim.program/1` documents."),
    ("neuronsim.machine.ir.program", ("Program", "Loop", "Instruction", "Access", "Tensor", "Dep"), "The program IR."),
    ("neuronsim.passes", ("parse_pipeline", "run_pipeline", "PassContext", "DEFAULT_PIPELINE"),
     "The pass pipeline."),
    ("neuronsim.passes.pipeline", ("Pass", "PipelineState", "as_pass"), "Writing a pass of your own."),
    ("neuronsim.verify.racecheck", ("check_program", "check_waits", "RaceReport", "Race"), "The race checker."),
    ("neuronsim.verify.race_report", ("group_races", "suggest_fix", "render_report"), "Race reports for people."),
    ("neuronsim.machine.sim.simulator", ("simulate",), "The simulator."),
    ("neuronsim.verify.fuzz", ("check_pass", "assert_pass_sound", "check_one", "shrink_failure", "save_failure",
                     "FuzzFailure", "FuzzResult"), "Fuzzing a pass."),
    ("neuronsim.machine.tasks.format", ("load_tasks", "loads_tasks"), "Task programs (`neuronsim.tasks/1`)."),
)

_ADDRESS = re.compile(r" at 0x[0-9a-f]+")
_FROZENSET = re.compile(r"frozenset\(\{([^{}]*)\}\)")


def _sorted_sets(text: str) -> str:
    """A frozenset default in its sorted order (a set's repr follows string hashing, which
    changes from one process to the next: the page would never be current)."""
    return _FROZENSET.sub(lambda m: "frozenset({" + ", ".join(sorted(m.group(1).split(", "))) + "})", text)


def _signature(obj) -> str:
    try:
        text = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return ""
    return _sorted_sets(_ADDRESS.sub("", text))


def _doc(obj) -> str:
    return inspect.cleandoc(obj.__doc__) if obj.__doc__ else "(no docstring)"


def _methods(cls) -> list[tuple[str, object]]:
    out = []
    for name, member in cls.__dict__.items():
        if name.startswith("_") or not (inspect.isfunction(member) or isinstance(member, property)):
            continue
        out.append((name, member))
    return out


def _entry(module: str, name: str) -> list[str]:
    obj = getattr(importlib.import_module(module), name)
    if not (inspect.isclass(obj) or callable(obj)):
        return [f"### `{module}.{name}`", "", "```python", f"{name} = {obj!r}", "```", ""]
    kind = "class" if inspect.isclass(obj) else "def"
    lines = [f"### `{module}.{name}`", "", "```python", f"{kind} {name}{_signature(obj)}", "```", "", _doc(obj), ""]
    if inspect.isclass(obj):
        for method, member in _methods(obj):
            if isinstance(member, property):
                head = f"`{name}.{method}` (property)"
                doc = _doc(member.fget) if member.fget and member.fget.__doc__ else ""
            else:
                head = f"`{name}.{method}{_signature(member)}`"
                doc = _doc(member) if member.__doc__ else ""
            lines += [f"- {head}" + (": " + doc.replace("\n", " ") if doc else "")]
        lines.append("")
    return lines


def api_page() -> str:
    """The whole page as Markdown."""
    lines = ["# API reference", "",
             "Generated from the docstrings by `python docs/generate.py` (do not edit by hand).  The command",
             "line is described in the [README](../README.md); this page is for using neuronsim from Python.", ""]
    for module, names, about in API:
        lines += [f"## `{module}`", "", about, ""]
        for name in names:
            lines += _entry(module, name)
    return "\n".join(lines).rstrip() + "\n"
