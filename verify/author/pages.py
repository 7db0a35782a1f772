"""The HTML pages of ``profile --html`` and ``compare --html``: timelines (the report's own
drawing, :func:`neuronsim.verify.app.html_report.timeline`, instances on the critical path outlined)
and line listings, one self-contained file (template ``verify/app/templates/author.html.j2``)."""

from __future__ import annotations

from functools import lru_cache

import jinja2

from neuronsim.machine.formats.files import write_text
from neuronsim.machine.formats.jsonio import dumps_strict
from neuronsim.nki.line_profile import LineProfile
from neuronsim.nki.render import source_lines
from neuronsim.verify.app.html_report import timeline

__all__ = ["write_profile_page", "write_compare_page", "listing_rows"]


@lru_cache(maxsize=1)
def _template() -> jinja2.Template:
    env = jinja2.Environment(loader=jinja2.PackageLoader("neuronsim.verify.app", "templates"), autoescape=True)
    env.policies["json.dumps_function"] = dumps_strict  # a template's |tojson writes strict JSON too
    return env.get_template("author.html.j2")


def listing_rows(profile: LineProfile, files: dict[str, str] | None = None) -> list[dict]:
    """One row per line that issued instructions, in file and line order."""
    rows = []
    hot = {f.where for f in profile.critical_lines()[:5]}
    for f in profile.lines:
        file, _, number = f.where.rpartition(":")
        lines = source_lines((files or {}).get(file, file)) if number.isdigit() else None
        code = lines[int(number) - 1] if lines and int(number) <= len(lines) else ""
        rows.append({"line": f.where, "instr": f.instructions, "hot": f.where in hot,
                     "busy": ", ".join(f"{c} {ns:,.1f}" for c, ns in f.busy_ns.items()),
                     "waited": f"{f.waited_ns:,.1f}" if f.waited_ns else "",
                     "on": ", ".join(f"{w} {ns:,.1f}" for w, ns in f.waited_on.items()),
                     "bytes": f"{f.dma_bytes:,}" if f.dma_bytes else "",
                     "crit": f"{100 * f.critical_ns / (profile.makespan_ns or 1):.1f}", "code": code})
    return rows


def _view(label: str, profile: LineProfile, span: float) -> dict:
    return {"label": label, "makespan": profile.makespan_ns, "critical": frozenset(profile.critical),
            "timeline": timeline(profile.trace, span=span)}


def write_profile_page(path: str, profile: LineProfile, source, report) -> None:
    """``profile --html``: the timeline and the listing of one kernel."""
    files = {source[0]: source[0]} if source else None
    html = _template().render(
        title=f"neuronsim profile: {profile.kernel}",
        note=(f"{len(profile.trace)} instances; critical-path instances outlined; "
              f"{len(report.findings)} NKI finding(s)."),
        timelines=[_view(profile.kernel, profile, profile.makespan_ns)],
        listings=[{"label": profile.kernel, "rows": listing_rows(profile, files)}])
    write_text(path, html)


def write_compare_page(path: str, comparison) -> None:
    """``compare --html``: both timelines on one time axis, then both listings."""
    span = max(comparison.a.profile.makespan_ns, comparison.b.profile.makespan_ns)
    sides = (("A " + comparison.a.label, comparison.a), ("B " + comparison.b.label, comparison.b))
    html = _template().render(
        title=f"neuronsim compare: {comparison.a.label} / {comparison.b.label}",
        note=f"B takes {comparison.ratio:.3f} of A's makespan; both timelines share one time axis.",
        timelines=[_view(label, side.profile, span) for label, side in sides],
        listings=[{"label": label, "rows": listing_rows(side.profile)} for label, side in sides])
    write_text(path, html)
