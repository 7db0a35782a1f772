"""``neuronsim report``: the page renders in headless Chromium with no console error and no
request beyond the file itself, and shows the races, the engines and the waits.

Chromium is Debian's (``/usr/bin/chromium``; ``.ci/run`` installs it), driven by Playwright
with ``executable_path`` (Playwright's own browser download is never used).  Without it these
tests fail: they do not skip.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from neuronsim.machine.formats.program_json import load_program, save_program
from neuronsim.machine.sim.simulator import simulate
from neuronsim.passes import compile_program

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
ENGINES = ("pe", "act", "dve", "pool", "sp", "dma0", "dma1", "dma2")


@pytest.fixture(scope="module")
def browser():
    assert os.path.exists(CHROMIUM), (
        f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium; .ci/run does it)")
    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        yield launched
        launched.close()


def _report(program: str, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from neuronsim.verify.cli import main; main()", "report", program,
                           "-o", str(out)],
                          capture_output=True, text=True, timeout=300)


def _open(browser, path: Path, shot: Path):
    """Load the page; return it with every console message, page error, request and failure."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    seen = {"console": [], "errors": [], "requests": [], "failed": []}
    page.on("console", lambda m: seen["console"].append((m.type, m.text)))
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    page.on("request", lambda r: seen["requests"].append(r.url))
    page.on("requestfailed", lambda r: seen["failed"].append(r.url))
    page.goto(path.resolve().as_uri(), wait_until="load")
    page.screenshot(path=str(shot), full_page=True)
    return page, seen


def _assert_clean(seen: dict, path: Path) -> None:
    assert seen["errors"] == []
    assert [m for m in seen["console"] if m[0] in ("error", "warning")] == []
    assert seen["failed"] == []
    assert seen["requests"] == [path.resolve().as_uri()], "the page fetched something besides itself"


def _assert_screenshot(shot: Path) -> None:
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_racy_program_page_shows_races_fixes_engines_and_waits(browser, tmp_path):
    out = tmp_path / "racy.html"
    run = _report("examples/matmul_k_loop_racy.json", out)
    assert run.returncode == 0, run.stderr
    assert "3 race(s)" in run.stdout
    page, seen = _open(browser, out, tmp_path / "racy.png")
    _assert_clean(seen, out)
    _assert_screenshot(tmp_path / "racy.png")
    assert page.text_content("#race-count").strip() == "3 race(s)"
    groups = page.query_selector_all(".race-group")
    assert [(g.get_attribute("data-first"), g.get_attribute("data-second")) for g in groups] == [("mm", "ld_x")]
    assert json.loads(page.text_content(".fix-dep")) == {"on": "mm", "loop_carried": True}
    pairs = [row.inner_text().split("\t")[:3] for row in page.query_selector_all("tr.pair")]
    assert pairs == [["WAR", "mm[0]", "ld_x[1]"], ["WAR", "mm[0]", "ld_x[2]"], ["WAR", "mm[1]", "ld_x[2]"]]
    assert [e.text_content() for e in page.query_selector_all("text.engine")] == list(ENGINES)
    engine_rows = [row.query_selector("td").text_content() for row in page.query_selector_all("#engine-table tr")[1:]]
    assert engine_rows == ["pe", "act", "dve", "sp", "dma0", "dma1", "dma2"]   # pool runs nothing
    trace = simulate(load_program("examples/matmul_k_loop_racy.json"), functional=False).trace
    assert len(page.query_selector_all("path.arrow")) == sum(len(r.waits_met) for r in trace.records)
    # the instances of the racing pairs are outlined (mm on pe, ld_x on its queue and its trigger)
    racy = {int(e.get_attribute("data-id")) for e in page.query_selector_all("rect.bar.racy")}
    names = {trace.records[i].name for i in racy}
    assert names == {"mm[0]", "mm[1]", "ld_x[1]", "ld_x[2]"}
    # the script runs: hovering a pair highlights its two instances; zoom changes the drawing's width
    page.hover("tr.pair >> nth=0")
    assert len(page.query_selector_all("rect.bar.hl")) >= 2
    assert page.get_attribute("#timeline-svg", "width") == "100%"  # the timeline fills its container ...
    box = page.eval_on_selector("#timeline-svg", "e => [e.getBoundingClientRect().width, e.parentElement.clientWidth]")
    assert abs(box[0] - box[1]) <= 2
    page.click("#zoom-in")
    assert page.get_attribute("#timeline-svg", "width") == "200%"  # ... and zooms by its percentage
    page.close()


def test_compiled_kernel_page_is_race_free_with_a_footprint_chart(browser, tmp_path):
    compiled = tmp_path / "matmul_tiled.json"
    save_program(compile_program(load_program("scenarios/matmul_tiled.json"))[0], str(compiled))
    out = tmp_path / "tiled.html"
    run = _report(str(compiled), out)
    assert run.returncode == 0, run.stderr
    page, seen = _open(browser, out, tmp_path / "tiled.png")
    _assert_clean(seen, out)
    _assert_screenshot(tmp_path / "tiled.png")
    assert page.text_content("#race-count").strip() == "race-free"
    assert page.query_selector_all(".race-group") == []
    stages = [row.query_selector("td").text_content() for row in page.query_selector_all("#footprint-table tr")[1:]]
    assert stages == ["given", "dep-reduction"]
    assert len(page.query_selector_all("#footprint-svg rect")) >= 3
    assert len(page.query_selector_all("rect.bar")) > 52   # every instance, DMA triggers besides
    page.close()


def test_unusable_input_and_unwritable_output_exit_2_and_write_nothing(tmp_path):
    # virtual tensors are placed with alloc first, and the note says so (not an error)
    virtual = _report("scenarios/matmul_tiled.json", tmp_path / "v.html")
    assert virtual.returncode == 0 and "alloc" in virtual.stderr and "Traceback" not in virtual.stderr
    (tmp_path / "v.html").unlink()
    missing = _report("examples/matmul_k_loop.json", tmp_path / "no" / "r.html")
    assert missing.returncode == 2 and "--output" in missing.stderr and len(missing.stderr.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_a_long_run_draws_a_prefix_and_says_so():
    from neuronsim.verify.app.html_report import build_report, render_html, timeline

    program = load_program("examples/matmul_k_loop.json")
    trace = simulate(program, functional=False).trace
    drawn = timeline(trace, limit=5)
    assert (drawn["drawn"], drawn["total"]) == (5, 14)
    assert {b["id"] for b in drawn["bars"]} == {0, 1, 2, 3, 4}
    assert all(a["title"].split(" waits for ")[0] in {r.name for r in trace.records[:5]} for a in drawn["arrows"])
    report = build_report(program, "k")
    html = render_html(dataclasses.replace(report, timeline=drawn))
    assert "Showing the first 5 of 14 instances in program order." in html
    assert "Showing the first" not in render_html(report)
