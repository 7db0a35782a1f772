"""Issue 23, part 5: one palette for every picture, colour-blind safe, defined once.

The PNG timeline, the task timeline, the footprint chart and the HTML report all take their
colours from :mod:`neuronsim.machine.sim.palette`; an op has one colour everywhere; DMA triggers are not the
colour of any transfer; the dependence kinds share no colour with an op; titles name the
program and the run; count axes have integer ticks; the HTML time axis has round ticks."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from neuronsim.machine.formats.program_json import load_program  # noqa: E402
from neuronsim.machine.sim.palette import DMA_TRIGGER, KIND_COLORS, OP_COLORS, op_color  # noqa: E402
from neuronsim.machine.model.optable import OP_TABLE  # noqa: E402
from neuronsim.machine.sim.simulator import simulate  # noqa: E402
from neuronsim.verify.app.html_report import build_report, render_html  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def test_every_op_has_its_own_colour_and_no_colour_means_two_things():
    assert set(OP_COLORS) == set(OP_TABLE)
    assert len(set(OP_COLORS.values())) == len(OP_COLORS)
    taken = {c.upper() for c in OP_COLORS.values()}
    assert not taken & {c.upper() for c in KIND_COLORS.values()}
    assert DMA_TRIGGER.upper() not in taken


def _captured_axes(monkeypatch):
    import matplotlib.pyplot as plt

    seen = []
    import neuronsim.verify.app.drawings as drawings

    def keep(fig, path, **options):
        seen.append(fig)

    monkeypatch.setattr(drawings, "save_figure", keep)
    return seen, plt


def test_png_timeline_uses_the_palette_and_names_program_and_run(monkeypatch, tmp_path):
    seen, _ = _captured_axes(monkeypatch)
    from neuronsim.verify.app.drawings import plot_timeline

    trace = simulate(load_program(ROOT / "examples" / "matmul_k_loop.json"), functional=False, seeds=[2]).runs[0].trace
    plot_timeline(trace, tmp_path / "t.png", program="matmul_k_loop")
    ax = seen[0].axes[0]
    assert ax.get_title().startswith("matmul_k_loop, seed 2: ")
    faces = {matplotlib.colors.to_hex(c).upper() for coll in ax.collections for c in coll.get_facecolors()}
    assert {op_color("matmul").upper(), op_color("dma_copy").upper(), DMA_TRIGGER.upper()} <= faces
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "DMA trigger (on its sequencer)" in labels


def test_footprint_chart_has_integer_ticks_headroom_and_the_program_name(monkeypatch, tmp_path):
    import importlib

    # the module (the package exports the command)
    footprint = importlib.import_module("neuronsim.verify.cli.cmd_footprint")

    seen = []
    monkeypatch.setattr(footprint, "save_figure", lambda fig, path, **o: seen.append(fig))
    from neuronsim.verify.sync_counts import sync_report

    report = sync_report([("given", load_program(ROOT / "examples" / "matmul_k_loop.json"))])
    footprint._plot(report, str(tmp_path / "f.png"), "matmul_k_loop.json")
    ax = seen[0].axes[0]
    assert ax.get_title() == "matmul_k_loop.json: sync footprint on trn1"
    ticks = ax.get_yticks()
    assert all(float(t).is_integer() for t in ticks)
    minimum = max(line.get_ydata().max() for line in ax.get_lines())
    assert ax.get_ylim()[1] > minimum  # the minimum line is not under the frame


def test_html_report_uses_the_palette_round_ticks_and_names_the_run():
    report = build_report(load_program(ROOT / "examples" / "matmul_k_loop_racy.json"), "matmul_k_loop_racy.json")
    page = render_html(report)
    fills = set(re.findall(r'fill="(#[0-9A-Fa-f]{6})"', page))
    assert {op_color("matmul"), op_color("dma_copy"), DMA_TRIGGER} <= fills
    assert "#4e79a7" not in page and "#f28e2b" not in page  # the old per-picture palette is gone
    assert [t["label"] for t in report.timeline["ticks"]] == [str(k) for k in range(8)]
    assert "Timeline: matmul_k_loop_racy.json, nominal run" in page
    assert 'width="100%"' in page
