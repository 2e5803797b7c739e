"""The failover charts on the recorded failover and rejoin campaigns (data/campaigns/), through the catalogue."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from benchlib import charts
from benchlib.analysis.campaign import analyze
from benchlib.axes.fault import chart_builders
from benchlib.charts.catalogue import figures

DATA = Path(__file__).resolve().parents[2] / "data" / "campaigns"


@pytest.fixture(scope="module")
def failover():
    return analyze(DATA / "failover")


@pytest.mark.long
def test_the_catalogue_draws_the_failover_charts_and_leaves_the_throughput_ones_out(failover):
    left_out = {}
    figs = figures(failover, left_out=left_out)
    assert {"failover_timeline", "unavailability", "lost_writes"} <= set(figs)
    assert "ratio_vs_baseline" not in figs and "rejoin" not in figs
    assert "failover timeline" in left_out["stability"]
    timeline = figs["failover_timeline"]
    panels = [a.text for a in timeline.layout.annotations if a.text and " unavailable " not in a.text]
    assert len(failover.axis("fault").summary) == 5 and len([p for p in panels if p.startswith(("gr", "galera", "mysql",
                                                                                           "semisync"))]) == 5
    shaded = [s for s in timeline.layout.shapes if s.fillcolor == "#d62728"]
    assert len(shaded) == 5  # each configuration's unavailability
    points = [t for t in figs["unavailability"].data if t.mode == "markers" and t.marker.symbol is None]
    assert sum(len(t.x) for t in points) == len(failover.axis("fault").failover)  # every fault a dot


def test_the_rejoin_chart_has_a_row_per_cluster_and_path():
    a = analyze(DATA / "rejoin")
    fig = figures(a)["rejoin"]
    rows = {y for t in fig.data for y in t.y}
    assert rows == {"galera by IST", "galera by SST", "gr by incremental recovery", "gr by clone"}


def test_the_lost_writes_chart_gives_each_configuration_its_share_with_the_interval_and_the_counts(failover):
    left_out = {}
    figs = figures(failover, left_out=left_out)
    dots, words = figs["lost_writes"].data
    assert list(dots.x) == [0.0] * 5  # nothing lost in the recorded kills: no fault lost any
    assert all(20 < hi < 40 for hi in dots.error_x.array)  # 0 in 9: at most 34% (95%)
    assert all(t.endswith("faults: none (≤ 34%)") and t.startswith("0 of 9") for t in words.text)
    assert "failover_settings" not in figs and "failover_settings" not in left_out  # no setting swept: no data


def test_the_settings_chart_draws_the_prediction_beside_the_faults():
    import pandas as pd

    from benchlib import charts

    runs = pd.DataFrame({"setting": ["gr_member_expel_timeout"] * 4, "value": [0, 0, 5, 5],
                         "unavailability_s": [6.1, 6.3, 21.2, 21.6], "label": ["gr"] * 4, "topology": ["gr"] * 4})
    expected = pd.DataFrame({"setting": ["gr_member_expel_timeout"] * 2, "value": [0, 5], "expected_s": [6.0, 21.0],
                             "words": ["Group Replication: 5 s to suspect + 1 s + 15 x ceil(E/15) s"] * 2})
    fig = chart_builders.unavailability_by_setting(runs, expected)
    dots, medians, line = fig.data
    assert list(dots.y) == [6.1, 6.3, 21.2, 21.6] and list(medians.y) == pytest.approx([6.2, 21.4])
    assert list(line.y) == [6.0, 21.0] and line.line.dash == "dash" and "15 x ceil" in line.hovertemplate
    assert line.name == "predicted by the mechanism"


def test_lost_writes_against_the_moment_draws_a_dot_per_fault_and_a_series_per_configuration():
    runs = pd.DataFrame({"label": ["galera flush 0"] * 3 + ["galera flush 1"] * 2, "topology": "galera",
                         "fault_moment_s": [3.2, 4.7, 5.9, 3.5, 5.1], "lost": [4, 31, 12, 0, 0]})
    fig = chart_builders.lost_against_moment(runs)
    assert [tr.name for tr in fig.data] == ["galera flush 0", "galera flush 1"]
    assert list(fig.data[0].x) == [3.2, 4.7, 5.9] and list(fig.data[0].y) == [4, 31, 12]
    assert "moment" in fig.layout.xaxis.title.text
    with pytest.raises(charts.ChartError):
        chart_builders.lost_against_moment(runs.assign(fault_moment_s=float("nan")))
