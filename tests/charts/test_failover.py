"""The failover charts on the recorded failover and rejoin campaigns (data/campaigns/), through the catalogue."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlib.analysis.campaign import analyze
from benchlib.charts.catalogue import figures

DATA = Path(__file__).resolve().parents[2] / "data" / "campaigns"


@pytest.fixture(scope="module")
def failover():
    return analyze(DATA / "failover")


def test_the_catalogue_draws_the_failover_charts_and_leaves_the_throughput_ones_out(failover):
    left_out = {}
    figs = figures(failover, left_out=left_out)
    assert {"failover_timeline", "unavailability", "lost_writes"} <= set(figs)
    assert "ratio_vs_baseline" not in figs and "rejoin" not in figs
    assert "failover timeline" in left_out["stability"]
    timeline = figs["failover_timeline"]
    panels = [a.text for a in timeline.layout.annotations if a.text and " unavailable " not in a.text]
    assert len(failover.failover_summary) == 5 and len([p for p in panels if p.startswith(("gr", "galera", "mysql",
                                                                                           "semisync"))]) == 5
    shaded = [s for s in timeline.layout.shapes if s.fillcolor == "#d62728"]
    assert len(shaded) == 5  # each configuration's unavailability
    points = [t for t in figs["unavailability"].data if t.mode == "markers" and t.marker.symbol is None]
    assert sum(len(t.x) for t in points) == len(failover.failover)  # every fault a dot


def test_the_rejoin_chart_has_a_row_per_cluster_and_path():
    a = analyze(DATA / "rejoin")
    fig = figures(a)["rejoin"]
    rows = {y for t in fig.data for y in t.y}
    assert rows == {"galera by IST", "galera by SST", "gr by incremental recovery", "gr by clone"}
