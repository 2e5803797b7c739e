"""Static export's deadlines: a Chromium that never answers is reported and stopped, not waited on (kaleido's own
sync server waits forever for a browser whose thread died; that hung a notebook cell for 300 s in CI)."""

from __future__ import annotations

import time

import pytest

from benchlib.charts.errors import ChartError
from benchlib.charts.export import Exporter


def _running(pid: int) -> bool:
    try:
        return open(f"/proc/{pid}/stat").read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.long
def test_a_browser_that_never_answers_is_reported_named_and_stopped(tmp_path, monkeypatch):
    fake = tmp_path / "chromium"
    fake.write_text(f"#!/bin/sh\necho $$ > {tmp_path}/pid\nexec sleep 600\n")
    fake.chmod(0o755)
    monkeypatch.setenv("BROWSER_PATH", str(fake))
    t0 = time.monotonic()
    with pytest.raises(ChartError, match=rf"Chromium \({fake}\) did not start within 7 s"):
        Exporter(timeout_s=2).__enter__()
    assert time.monotonic() - t0 < 20
    pid = int((tmp_path / "pid").read_text())
    assert not _running(pid), "the browser that never answered is still running"


def test_a_notebook_chart_is_sized_to_its_cell_and_its_export_keeps_its_size():
    import plotly.graph_objects as go

    from benchlib.charts.catalogue import with_caption
    from benchlib.charts.export import _CellSized
    from benchlib.charts.theme import HEIGHT, TEMPLATE, WIDTH

    fig = go.Figure(go.Bar(x=["a", "b"], y=[1, 2]))
    fig.update_layout(template=TEMPLATE, title="t")
    with_caption(fig, "Bar: ratio of mean throughput to the baseline's; whisker: 95% interval, two-way model "
                      "(round + configuration) on log run means over 3 rounds. Relaxed durability lighter.")
    shown = _CellSized().to_mimebundle(fig.to_plotly_json())["application/vnd.plotly.v1+json"]
    layout = shown["layout"]
    assert "width" not in layout and "width" not in layout["template"]["layout"] and layout["autosize"]
    assert layout["height"] == HEIGHT + 16  # its own height, grown by the caption's new line
    caption = layout["annotations"][0]["text"]
    assert caption.count("<br>") == 1 and all(len(line) <= _CellSized.CAPTION_CHARS for line in caption.split("<br>"))
    assert shown["config"]["responsive"] is True
    # the figure itself is untouched: PNG and SVG export at the blog's fixed size
    assert fig.layout.template.layout.width == WIDTH and "<br>" not in fig.layout.annotations[0].text
