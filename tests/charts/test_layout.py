"""The real-browser layout check: it passes on a published report and catches what a reader would stumble on."""

from __future__ import annotations

import shutil
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio
import pytest

from benchlib.charts.errors import ChartError
from benchlib.charts.export import find_browser
from benchlib.charts.layout import check_page
from benchlib.report import publish

DATA = Path(__file__).resolve().parents[2] / "data" / "campaigns"
needs_browser = pytest.mark.skipif(find_browser() is None, reason="needs Chromium")


@pytest.mark.browser
@needs_browser
@pytest.mark.parametrize("campaign", ["topologies", "apply", "consistency"])
def test_a_published_report_passes_at_1280_px(tmp_path, campaign):
    shutil.copytree(DATA / campaign, tmp_path / campaign, ignore=shutil.ignore_patterns("notebooks", ".lock", "report"))
    report = publish(tmp_path / campaign, notebooks=False, static=False)
    lay = check_page(report.page)
    assert lay.ok, "\n".join(lay.problems)
    assert lay.viewport == 1280 and lay.page_width <= 1280
    assert len(lay.charts) >= 5 and all(c.texts > 5 and c.title_lines >= 2 for c in lay.charts)
    # the findings section names each headline comparison, one sentence each
    assert lay.findings and len(lay.finding_items) == len(report.headline) >= 3
    for sentence in report.headline:
        assert any(sentence.split(" (")[0] in item for item in lay.finding_items)
    if campaign == "topologies":  # 10 s runs: no stability chart, a note instead
        assert "stability" in report.left_out and "too short" in report.page.read_text()


def _page(tmp_path: Path, *figs: go.Figure, extra: str = "") -> Path:
    body = "".join(pio.to_html(f, full_html=False, include_plotlyjs=i == 0) for i, f in enumerate(figs))
    page = tmp_path / "page.html"
    page.write_text(f"<!doctype html><html><body>{body}{extra}</body></html>")
    return page


@pytest.mark.browser
@needs_browser
def test_overlapping_text_a_missing_subtitle_and_a_wide_page_are_caught(tmp_path):
    crowded = go.Figure(go.Scatter(x=[1, 2], y=[1, 2]))
    crowded.update_layout(title=dict(text="A chart<br><sup>its context</sup>", x=0.05, y=0.95), width=700,
                          height=400, margin=dict(t=80))
    crowded.add_annotation(text="an annotation on the title", xref="paper", yref="paper", x=0.0, y=1.25,
                           xanchor="left", showarrow=False)
    crowded.add_annotation(text="past the edge", xref="paper", yref="paper", x=1.05, y=0.5, xanchor="left",
                           showarrow=False)
    bare = go.Figure(go.Bar(x=["a"], y=[1]))
    bare.update_layout(title="No subtitle", width=600, height=300)
    lay = check_page(_page(tmp_path, crowded, bare, extra='<div style="width:1500px">wide</div>'))
    text = "\n".join(lay.problems)
    assert "the page is 1500 px wide" in text or "px wide in a 1280 px window" in text
    assert "'an annotation on the title' overlaps" in text or "overlaps 'an annotation on the title'" in text
    assert "'past the edge' runs past the chart's edge" in text
    assert "no subtitle under the title 'No subtitle'" in text
    assert lay.findings is None and not lay.ok


def test_a_missing_page_is_one_clear_error(tmp_path):
    with pytest.raises(ChartError, match="no page at"):
        check_page(tmp_path / "nope.html")
