"""The consistency charts: figure JSON from small frames, and the catalogue's four on a recorded campaign."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchlib import charts
from benchlib.catalogue import house_color

DATA = Path(__file__).resolve().parents[2] / "data" / "campaigns"

FRACTIONS = pd.DataFrame({
    "label": ["gr EVENTUAL", "gr BEFORE", "galera wsrep_sync_wait=0"],
    "topology": ["group_replication", "group_replication", "galera"],
    "fraction": [0.031, 0.0, 0.0], "low": [0.024, 0.0, 0.0], "high": [0.039, 0.0075, 0.006],
    "stale": [31, 0, 0], "reads": [1000, 400, 500],
    "read_ms_p50": [0.8, 2.0, 0.6], "read_ms_p99": [3.0, 9.0, 2.0], "wait_ms_p50": [np.nan, np.nan, np.nan],
})


def _plain(x):
    """Plotly's typed arrays ({dtype, bdata, shape}, base64) as lists."""
    import base64

    if isinstance(x, dict) and "bdata" in x:
        a = np.frombuffer(base64.b64decode(x["bdata"]), dtype=x["dtype"])
        return (a.reshape([int(n) for n in str(x["shape"]).split(",")]) if "shape" in x else a).tolist()
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_plain(v) for v in x]
    return x


def fig_json(fig) -> dict:
    return _plain(json.loads(fig.to_json()))


def test_stale_fractions_draw_each_interval_and_none_stale_as_a_hollow_point_with_its_upper_bound():
    j = fig_json(charts.stale_fractions(FRACTIONS))
    full = [t for t in j["data"] if t["marker"]["symbol"] == "circle"]
    hollow = [t for t in j["data"] if t["marker"]["symbol"] == "circle-open"]
    assert len(full) == 1 and full[0]["x"] == pytest.approx([3.1])
    assert full[0]["error_x"]["array"] == pytest.approx([0.8])
    assert full[0]["error_x"]["arrayminus"] == pytest.approx([0.7])
    assert {y for t in hollow for y in t["y"]} == {"gr BEFORE", "galera wsrep_sync_wait=0"}
    assert all(x == 0 for t in hollow for x in t["x"])
    assert sorted(a for t in hollow for a in t["error_x"]["array"]) == pytest.approx([0.6, 0.75])
    assert full[0]["marker"]["color"] == house_color("group_replication")
    assert j["layout"]["xaxis"]["ticksuffix"] == "%"


def test_staleness_ecdf_is_a_step_line_per_configuration_on_a_log_axis():
    reads = pd.DataFrame({"label": ["a"] * 4 + ["b"] * 2, "topology": ["async"] * 4 + ["galera"] * 2,
                          "staleness_ms": [1.0, 5.0, 20.0, 200.0, 3.0, 0.0]})
    j = fig_json(charts.staleness_ecdf(reads))
    a, b = j["data"]
    assert a["line"]["shape"] == "hv" and a["y"] == pytest.approx([0, 0.25, 0.5, 0.75, 1.0])
    assert a["name"] == "a (4)" and b["name"] == "b (1)"  # a staleness of 0 ms has no place on a log axis
    assert j["layout"]["xaxis"]["type"] == "log"
    with pytest.raises(charts.ChartError, match="no stale read"):
        charts.staleness_ecdf(reads.assign(staleness_ms=0.0))


def test_the_plane_puts_each_configuration_at_its_stale_fraction_and_writer_cost_with_both_intervals():
    points = FRACTIONS.assign(cluster=["gr", "gr", "galera"], setting=["EVENTUAL", "BEFORE", "wsrep_sync_wait=0"],
                              ratio=[1.0, 0.97, 1.0], ratio_low=[np.nan, 0.95, np.nan],
                              ratio_high=[np.nan, 0.99, np.nan])
    j = fig_json(charts.consistency_plane(points, "tps"))
    gr = next(t for t in j["data"] if t["xaxis"] == "x2")  # panels in topology order: galera, then gr
    i = gr["customdata"].index(["BEFORE"])
    assert gr["x"][i] == 0.0 and gr["y"][i] == pytest.approx(0.97)
    assert gr["error_y"]["array"][i] == pytest.approx(0.02) and gr["error_x"]["array"][i] == pytest.approx(0.75)
    assert gr["error_y"]["array"][gr["customdata"].index(["EVENTUAL"])] == 0  # the weakest setting: the reference
    notes = [a["text"] for a in j["layout"]["annotations"]]
    assert notes[:2] == ["galera", "gr"]  # a panel per cluster, then each point's name
    assert sorted(notes[2:]) == ["BEFORE", "EVENTUAL", "wsrep_sync_wait=0"]
    assert j["layout"]["yaxis"]["type"] == "log" and "throughput" in j["layout"]["yaxis"]["title"]["text"]
    lat = fig_json(charts.consistency_plane(points, "lat_pctl_ms"))
    assert "latency" in lat["layout"]["yaxis"]["title"]["text"]


def test_read_latency_shows_the_median_to_p99_and_the_causal_wait():
    df = FRACTIONS.assign(wait_ms_p50=[np.nan, 1.2, np.nan])
    j = fig_json(charts.read_latency(df))
    dots = [t for t in j["data"] if t["name"] != "causal wait (median)"]
    wait = [t for t in j["data"] if t["name"] == "causal wait (median)"]
    assert sum(len(t["x"]) for t in dots) == 3 and len(wait) == 1 and wait[0]["x"] == [1.2]
    assert j["layout"]["xaxis"]["type"] == "log"


@pytest.fixture(scope="module")
def consistency():
    from benchlib.analysis.campaign import analyze

    return analyze(DATA / "consistency")


@pytest.mark.long
def test_the_catalogue_draws_the_four_consistency_charts_of_a_probe_campaign(consistency):
    from benchlib.charts.catalogue import figures

    left: dict[str, str] = {}
    figs = figures(consistency, left_out=left)
    assert {"stale_reads", "staleness", "consistency_plane", "read_latency"} <= set(figs)
    plane = fig_json(figs["consistency_plane"])
    # open-loop loads: the cost shows in latency where every configuration held its rate, else in throughput
    c = consistency.configs
    held = (c.tps_mean >= 0.95 * c.rate).all()
    assert ("latency" if held else "throughput") in plane["layout"]["yaxis"]["title"]["text"]
    # one point per cluster, setting and write rate
    assert sum(len(t["x"]) for t in plane["data"] if t.get("mode") == "markers") == len(consistency.axis("probe").stale_reads)
