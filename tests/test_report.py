"""Publishing: charts as PNG/SVG/HTML, the report page, and a real headless-Chromium check that it renders."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from benchlib.charts.export import find_browser, static_export_available
from benchlib.report import publish

DATA = Path(__file__).resolve().parents[1] / "data" / "campaigns"
needs_browser = pytest.mark.skipif(not static_export_available(), reason="needs kaleido and Chromium")
# publishing exports images and executes notebooks; its one publish (a module fixture, a minute) on one worker
pytestmark = [pytest.mark.browser, pytest.mark.kernel, pytest.mark.xdist_group("report")]


def png_size_and_colours(path: Path) -> tuple[int, int, int]:
    """Width, height and the number of distinct byte values of the decoded (filtered) pixel data."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, size = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            size = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    return size[0], size[1], len(set(zlib.decompress(idat)))


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("pub")
    shutil.copytree(DATA / "wan", root / "wan", ignore=shutil.ignore_patterns("notebooks", ".lock", "report"))
    return publish(root / "wan")


@needs_browser
def test_every_chart_in_three_formats(report):
    charts = report.folder / "charts"
    names = {p.stem for p in charts.iterdir() if p.name != "plotly.min.js"}  # the charts' one copy of plotly.js
    assert {"ratio_vs_baseline", "throughput_vs_threads", "wan_latency", "lag"} <= names
    assert "stability" not in names and "stability" in report.left_out  # 10 s runs: left out, with a note
    for name in names:
        for ext in ("png", "svg", "html"):
            assert (charts / f"{name}.{ext}").stat().st_size > 1000, f"{name}.{ext}"
    w, h, colours = png_size_and_colours(charts / "wan_latency.png")
    assert (w, h) == (2400, 1350) and colours > 20  # 2x a 1200x675 slot, not blank
    svg = (charts / "wan_latency.svg").read_text()
    assert svg.startswith("<svg") and svg.count("@font-face") == 1 and "data:font/woff;base64," in svg
    assert 'font-family:"Liberation Sans"' in svg and len(svg) < 150_000  # the font embedded, subset to the text
    assert 'src="http' not in (charts / "wan_latency.html").read_text()  # no CDN: opens offline, plotly.js beside it
    assert report.image_seconds and max(report.image_seconds) < 30


@needs_browser
def test_report_page_headline_then_warnings_then_verdicts_and_notebooks(report):
    page = report.page.read_text()
    assert (page.index('<h2 id="findings">Findings</h2>') < page.index("<h2>Warnings</h2>") < page.index('class="chart"')
            < page.index("<h2>Against the baseline</h2>") < page.index("<h2>Runs</h2>"))
    lead = page[page.index("Findings</h2>"):page.index("<h2>Warnings</h2>")]
    assert "throughput" in lead and "95% interval" in lead and "margin δ = 2%" in lead
    # one plain sentence per comparison: how much, its interval, how many runs, whether it is real; then its why
    top = re.sub(r"<div class='why'>.*?</div>", "", lead)
    assert top.count("<li>") == 4 and top.count("× the throughput of ") == 4
    assert "2 runs against 2" in lead and "the difference is real" in lead
    warnings = page[page.index("<h2>Warnings</h2>"):page.index('class="chart"')]
    assert warnings.count("<summary>") < 5  # grouped by kind with a count, not a row per configuration
    assert page.count("<script") >= 1 and 'src="http' not in page  # no CDN: opens offline
    # one copy of plotly.js, beside the charts, shared by the page and every chart's own page
    assert 'src="charts/plotly.min.js"' in page and len(list(report.folder.rglob("plotly.min.js"))) == 1
    assert all('src="plotly.min.js"' in f.read_text() for f in report.files if f.suffix == ".html")
    weight = sum(f.stat().st_size for f in report.folder.rglob("*") if f.is_file())
    assert weight < 10e6, weight  # charts, notebooks, page and one plotly.js (each chart page embedding it: ~40 MB)
    assert {p.stem.split("-")[0] for p in report.notebooks} >= {"wan", "stability", "lag", "compare"}
    for nb in report.notebooks:
        assert f'href="notebooks/{nb.name}"' in page and nb.exists()


@needs_browser
def test_report_layout_in_a_real_browser_at_1280_px(report):
    from benchlib.charts.layout import check_page

    lay = check_page(report.page)
    assert lay.ok, "\n".join(lay.problems)
    assert len(lay.charts) == len([p for p in report.files if p.suffix == ".html"])
    assert len(lay.finding_items) == len(report.headline) == 4


@needs_browser
def test_report_renders_in_headless_chromium(report, tmp_path):
    browser = find_browser()
    flags = [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--window-size=1280,2400", "--virtual-time-budget=15000"]
    url = report.page.as_uri()
    dom = subprocess.run([*flags, "--dump-dom", url], capture_output=True, text=True, timeout=120).stdout
    assert dom.count('class="main-svg"') >= 2 * 4  # plotly drew its SVG layers for the charts
    assert dom.count("plot-container") >= 4
    shot = tmp_path / "shot.png"
    subprocess.run([*flags, f"--screenshot={shot}", url], capture_output=True, timeout=120)
    w, h, colours = png_size_and_colours(shot)
    assert (w, h) == (1280, 2400) and colours > 50  # not a blank page


def test_a_verdict_shared_by_many_ratios_is_said_once_over_their_list(tmp_path):
    import dataclasses

    import numpy as np

    from benchlib.analysis.campaign import analyze
    from benchlib.report import SAME_VERDICT, _findings, headline

    a = analyze(DATA / "topologies")
    galera = a.comparisons[a.comparisons.cluster == "galera"]  # like async but for its mode: one verdict for all
    one_run = galera.assign(n=1, n_baseline=1, ci_low=-np.inf, ci_high=np.inf, verdict="INCONCLUSIVE",
                            sigma_log=np.nan, runs_needed_per_side=np.nan)
    single = dataclasses.replace(a, comparisons=one_run)  # as a campaign of one repetition: no interval anywhere
    lines = headline(single)
    assert len(lines) >= SAME_VERDICT and all("(no interval; 1 run against 1)" in line for line in lines)
    lead = _findings(single, tmp_path)[0]
    assert lead.count("1 run is too few to measure the noise") == 1  # said once, over the list
    assert f"for these {len(lines)} ratios:<ul>" in lead
    assert re.sub(r"<div class='why'>.*?</div>", "", lead).count("<li>") == len(lines) + 1  # each ratio under it


def test_a_publish_killed_midway_leaves_nothing_that_looks_like_a_report(tmp_path):
    """The report is written into a hidden folder and renamed when whole: SIGKILL in the middle leaves no report
    folder (the next publish sweeps the hidden one), and the next publish writes a whole one."""
    import os
    import signal
    import sys
    import time

    campaign = tmp_path / "wan"
    shutil.copytree(DATA / "wan", campaign, ignore=shutil.ignore_patterns("notebooks", ".lock", "report"))
    cmd = [sys.executable, "-m", "benchlib.cli", "publish", str(campaign)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        # killed once it is writing: the hidden folder holds a chart
        while not list((campaign / "report").glob(".unfinished-*/charts/*")) and time.monotonic() < deadline:
            assert proc.poll() is None, "publish ended before it could be killed"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    left = list((campaign / "report").iterdir())
    assert left and all(p.name.startswith(".unfinished-") for p in left)  # nothing a reader takes for a report
    assert not list((campaign / "report").glob("*/report.html"))

    r = publish(campaign, notebooks=False, static=False)
    assert r.page.exists() and r.page.parent.parent == campaign / "report"
    assert [p.name for p in (campaign / "report").iterdir()] == [r.folder.name]  # the killed one's leftovers swept
    assert all(f.exists() for f in r.files)
