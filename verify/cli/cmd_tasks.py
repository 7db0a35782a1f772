"""``neuronsim tasks PROGRAM``: what the task passes decide, per call.

Runs the task pipeline (``--passes``, default :data:`neuronsim.passes.tasks.DEFAULT_TASK_PIPELINE`;
``--faithful`` makes the dependence pass reproduce the seed) on a ``neuronsim.tasks/1`` program
and prints, per call, the deps it ends with (user and compiler-derived, loop fan-ins spelled
out), its final argument directions (with the demotions the pass made), the runtime scope it
ends up in, and the hazards behind its deps; per analysed region, whether it fell back and
why; per placed scope, MANUAL or AUTO and why.  ``-o`` writes the compiled program.

Exit status: 0, or 2 for unusable input (including a bad ``--passes`` string).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import click

from neuronsim.machine.tasks.format import load_tasks
from neuronsim.machine.tasks.ir import TaskProgram
from neuronsim.machine.tasks.serialize import compiler_dep_json, save_tasks
from neuronsim.passes.pipeline import PassContext
from neuronsim.passes.tasks import (
    DEFAULT_TASK_PIPELINE, AutoDeriveTaskDependencies, MaterializeRuntimeScopes, materialize_scopes,
    parse_task_pipeline, run_task_pipeline,
)

from neuronsim.verify.cli.common import (check_not_imported, check_output, emit_json, json_option, max_idle_option,
                                         pass_sources, program_argument, run_command, stdout_for_json)
from neuronsim.verify.cli.task_programs import DEFAULT_MAX_PAIRS, guard_task_passes

__all__ = ["tasks", "task_report", "render_task_report"]


def _scope_of(program: TaskProgram) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, scope in program.scopes_of_calls().items():
        out[name] = ({"mode": "auto", "owner": "runtime", "name": "implicit"} if scope is None else
                     {"mode": "manual" if scope.manual else "auto", "owner": scope.owner, "name": scope.name})
    return out


def task_report(program: TaskProgram, spec: str = DEFAULT_TASK_PIPELINE, *, faithful: bool = False,
                verify: bool = True) -> tuple[TaskProgram, dict[str, Any]]:
    """Run the pipeline; return the compiled program and the report (a ``neuronsim.tasks-report/1`` document)."""
    passes = parse_task_pipeline(spec)
    if faithful:
        passes = [replace(p, faithful=True) if isinstance(p, AutoDeriveTaskDependencies) else p for p in passes]
    analyses, decisions, derived = [], [], {}
    state = {"before": program}

    def after(p, result, ctx) -> None:
        if isinstance(p, AutoDeriveTaskDependencies):
            derived.update({c.name: c.directions for c, _ in state["before"].calls()})
            analyses.append(p.analyze(state["before"]))
        elif isinstance(p, MaterializeRuntimeScopes):
            decisions.extend(materialize_scopes(state["before"])[1])
        state["before"] = result

    ctx = PassContext(verify=verify)
    compiled = run_task_pipeline(program, passes, ctx, after_pass=after)
    analysis = analyses[-1] if analyses else None
    scopes = _scope_of(compiled)
    calls = []
    for call, _ in compiled.calls():
        result = analysis.calls.get(call.name) if analysis else None
        before = derived.get(call.name, call.directions)
        row: dict[str, Any] = {
            "name": call.name, "kernel": call.kernel, "scope": scopes[call.name], "user_deps": list(call.deps),
            "compiler_deps": [compiler_dep_json(d) for d in call.compiler_deps],
            "directions": [d.value for d in call.directions or ()],
            "demoted": {str(i): f"{b.value} -> {a.value}"
                        for i, (a, b) in enumerate(zip(call.directions or (), before or ())) if a != b},
            "analysed": result is not None,
            "hazards": [n.to_json() for n in result.notes] if result else [],
            "fallback": result.fallback.to_json() if result and result.fallback else None,
        }
        calls.append(row)
    regions = [] if analysis is None else [
        {"key": r.key, "kind": r.kind, "name": r.name, "calls": list(r.calls),
         "fallback": r.fallback.to_json() if r.fallback else None} for r in analysis.regions.values()]
    report = {
        "format": "neuronsim.tasks-report/1", "function": compiled.function.name,
        "passes": [{"pass": r.spec, "seconds": round(r.seconds, 6), "deps_after": r.edges, "stats": dict(r.stats)}
                   for r in ctx.records],
        "faithful": bool(analysis and analysis.faithful), "analysed": bool(analysis and analysis.analyzed),
        "whole_layer_manual": bool(analysis and analysis.layer_candidate),
        "regions": regions, "scopes": [d.to_json() for d in decisions], "calls": calls,
    }
    return compiled, report


def _dep_text(dep: dict[str, Any]) -> str:
    if "loop" in dep:
        return f"{dep['on']} (every {'/'.join(dep['calls'])} of loop {dep['loop']})"
    if "carried" in dep:
        return f"{dep['on']} (carried in {dep['carried']})"
    return dep["on"]


def render_task_report(report: dict[str, Any]) -> str:
    """The report for people."""
    lines = [f"function {report['function']}: {len(report['calls'])} calls; "
             + " -> ".join(p["pass"] for p in report["passes"])]
    if not report["analysed"]:
        lines.append("dependence analysis off (analyze_auto_scopes=false): nothing derived")
    for r in report["regions"]:
        what = {"virtual": "whole body (virtual AUTO region)", "scope": f"AUTO scope {r['name'] or r['key']}",
                "container": "function body (calls outside scopes are left to the runtime)"}[r["kind"]]
        if r["fallback"]:
            f = r["fallback"]
            where = f"call {f['call']}" + (f" argument {f['arg']}" if f["arg"] is not None else "")
            prior = f" against {f['prior']}" if f["prior"] else ""
            loop = f" in loop {f['loop']}" if f["loop"] else ""
            lines.append(f"region {what}: FALLBACK ({f['reason']}) at {where}{prior}{loop}: {f['detail']}")
        else:
            lines.append(f"region {what}: analysed, no fallback")
    for d in report["scopes"]:
        lines.append(f"scope {d['where']}: {d['mode'].upper()} ({d['reason']})")
    for c in report["calls"]:
        scope = c["scope"]
        lines.append(f"{c['name']} = {c['kernel']}(...)  in {scope['mode'].upper()} scope"
                     + (f" {scope['name']}" if scope["name"] else "") + f" [{scope['owner']}]"
                     + ("" if c["analysed"] else "  (not analysed)"))
        deps = ", ".join(c["user_deps"]) or "-"
        derived = ", ".join(_dep_text(d) for d in c["compiler_deps"]) or "-"
        lines.append(f"    deps: user [{deps}]  compiler [{derived}]")
        demoted = "; ".join(f"arg {i}: {text}" for i, text in c["demoted"].items())
        lines.append(f"    directions: {', '.join(c['directions'])}" + (f"  (demoted {demoted})" if demoted else ""))
        seen = set()
        for h in c["hazards"]:
            via = {"edge": f"edge on {h['on']}", "user": "covered by a user dep", "fallback": "fallback",
                   "runtime": "left to runtime tracking (a region that fell back)"}[h["outcome"]]
            shifted = " (previous iteration)" if h["previous_iteration"] else ""
            text = f"    {'/'.join(h['hazards'])} arg {h['arg']} vs {h['prior']} arg {h['prior_arg']}{shifted}: {via}"
            if text not in seen:
                seen.add(text)
                lines.append(text)
    return "\n".join(lines)


@click.command("tasks")
@program_argument
@click.option("--passes", "passes_spec", default=DEFAULT_TASK_PIPELINE, show_default=True, metavar="SPEC",
              help="Task pipeline: pass names in order, options in braces.")
@click.option("--faithful", is_flag=True,
              help="Reproduce the seed's dependence analysis (loop back-edge hole included).")
@click.option("-o", "--output", "output", default=None, metavar="OUT", help="Also write the compiled task program.")
@click.option("--no-verify", is_flag=True, help="Skip the checks between passes.")
@click.option("--max-pairs", type=click.IntRange(min=1), default=DEFAULT_MAX_PAIRS, show_default=True, metavar="N",
              help="Refuse programs whose calls make more pairs for the dependence analysis (checked first).")
@json_option
@max_idle_option()
@run_command
def tasks(program: str, passes_spec: str, faithful: bool, output: str | None, no_verify: bool, max_pairs: int,
          as_json: bool) -> int:
    """Run the task passes on PROGRAM (neuronsim.tasks/1): derived deps, directions and scopes, per call."""
    stdout_for_json(as_json, {"-o": output})
    check_output(output, "-o", (program, *pass_sources(passes_spec)))
    prog = load_tasks(program)
    guard_task_passes(prog, max_pairs)
    compiled, report = task_report(prog, passes_spec, faithful=faithful, verify=not no_verify)
    if output is not None:
        check_not_imported(output, "-o")
        save_tasks(compiled, output)
    if as_json:
        emit_json(report)
    else:
        click.echo(render_task_report(report), err=output == "-")
    return 0
