"""Chart builders: figure JSON, not pixels."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from benchlib import charts
from benchlib.catalogue import house_color
from benchlib.charts.theme import HEIGHT, lighter


def fig_json(fig) -> dict:
    return json.loads(fig.to_json())


RATIOS = pd.DataFrame({
    "topology": ["semisync", "semisync", "galera", "galera"],
    "durability": ["durable", "relaxed", "durable", "relaxed"],
    "ratio": [0.8, 0.95, 0.6, 0.7], "ci_low": [0.75, 0.9, 0.5, -np.inf], "ci_high": [0.85, 1.0, 0.7, np.inf],
})
BY_THREADS = pd.DataFrame({
    "topology": ["async"] * 3 + ["galera"] * 3, "threads": [1, 8, 64] * 2,
    "tps_mean": [200, 900, 1500, 180, 700, 1000], "lat_pctl_ms": [5, 12, 80, 6, 15, 120],
    "lat_mean_ms": [4, 9, 50, 5, 11, 70],
})


def test_ratio_bars_relaxed_is_a_lighter_wider_bar_behind_durable_each_whisker_in_its_own_half():
    j = fig_json(charts.ratio_bars(RATIOS))
    named = [t for t in j["data"] if t.get("showlegend") is not False]
    assert [t["name"] for t in named] == ["semisync relaxed", "galera relaxed", "semisync durable", "galera durable"]
    relaxed, durable = named[0], named[2]
    assert durable["marker"]["color"] == house_color("semisync")
    assert relaxed["marker"]["color"] == lighter(house_color("semisync"))
    assert relaxed["width"] > durable["width"] and j["layout"]["barmode"] == "overlay"
    # one interval per bar, each on an invisible bar in its own half: durable's over the left half, relaxed's over
    # the right; an unbounded interval (galera relaxed) gets none (plotly would draw it as a cap on the bar's top)
    assert all("error_y" not in t for t in named)
    carriers = [t for t in j["data"] if t.get("showlegend") is False]
    assert [(t["x"], t["offset"]) for t in carriers] == [(["semisync"], 0.0), (["semisync"], -0.4), (["galera"], -0.4)]
    assert all(t["marker"]["color"].endswith(",0)") and t["width"] == 0.4 for t in carriers)
    assert carriers[0]["error_y"]["array"] == pytest.approx([0.05]) and carriers[1]["error_y"]["arrayminus"] == pytest.approx([0.05])
    assert durable["offset"] + durable["width"] / 2 < 0 < carriers[0]["offset"] + carriers[0]["width"] / 2
    assert any(s.get("y0") == 1.0 for s in j["layout"]["shapes"])  # the baseline line


def test_one_durability_draws_plain_centred_bars():
    j = fig_json(charts.ratio_bars(RATIOS[RATIOS.durability == "durable"]))
    named = [t for t in j["data"] if t.get("showlegend") is not False]
    carriers = [t for t in j["data"] if t.get("showlegend") is False]
    assert [t["name"] for t in named] == ["semisync durable", "galera durable"]
    assert all("offset" not in t and "error_y" not in t for t in named)
    assert all("offset" not in t and t["error_y"]["visible"] and t["width"] == 0.6 for t in carriers)
    assert [t["x"] for t in carriers] == [["semisync"], ["galera"]]


def test_category_ticks_are_short_upright_lines_in_natural_order():
    df = pd.DataFrame({"label": ["galera t32 durability=relaxed", "galera t8 durability=durable",
                                 "async t8 fc_limit=16", "async t1 fc_limit=16"],
                       "topology": ["galera", "galera", "async", "async"], "catch_up_s": [0.1, 0.2, 0.3, 0.4]})
    ax = fig_json(charts.catch_up(df))["layout"]["xaxis"]
    assert ax["categoryarray"] == ["async t1 fc_limit=16", "async t8 fc_limit=16", "galera t8 durability=durable",
                                   "galera t32 durability=relaxed"]  # t8 before t32
    assert ax["ticktext"][-1] == "galera<br>32 thr<br>relaxed" and ax["ticktext"][0] == "async<br>1 thr<br>fc limit 16"
    assert ax["tickangle"] == 0
    many = pd.DataFrame({"label": [f"galera{i} oltp_update_index fc_limit=1000" for i in range(20)],
                         "topology": "galera", "catch_up_s": 0.1})
    lay = fig_json(charts.catch_up(many))["layout"]
    ax = lay["xaxis"]
    assert ax["tickangle"] == -90 and ax["ticktext"][0] == "galera0 · update index · fc limit 1000"  # on end: one line
    assert lay["height"] - lay["margin"]["b"] == HEIGHT - 60  # the plot keeps its height: the chart grows instead
    ratio = "group_replication (3 nodes) · oltp_update_index t8 fc_limit=1000"  # views.ratios' label
    assert charts.axes.tick_text(ratio) == "GR<br>3 nodes<br>update index<br>8 thr<br>fc limit 1000"


def test_a_named_cluster_never_takes_a_topology_colour_in_use():
    colours = charts.builders._colors(["semi", "local", "galera"])
    assert colours["galera"] == house_color("galera")
    assert len(set(colours.values())) == 3


def test_same_topology_same_colour_in_every_chart():
    for fig in (charts.throughput_vs_threads(BY_THREADS), charts.latency_vs_threads(BY_THREADS, y_mean="lat_mean_ms")):
        j = fig_json(fig)
        colors = {t["name"].split()[0]: t["line"]["color"] for t in j["data"]}
        assert colors == {"async": house_color("async"), "galera": house_color("galera")}
        assert j["layout"]["template"]["layout"]["width"] == 1200  # a 1200x675 slot


def test_latency_axes_are_logarithmic_and_mean_is_dashed():
    j = fig_json(charts.latency_vs_threads(BY_THREADS, y_mean="lat_mean_ms"))
    assert j["layout"]["yaxis"]["type"] == "log" and j["layout"]["xaxis"]["type"] == "log"
    assert [t["line"]["dash"] for t in j["data"]] == ["solid", "solid", "dash", "dash"]
    assert [t["name"] for t in j["data"]][:2] == ["async p95", "galera p95"]


def test_stability_shades_the_steady_window_and_annotates_flags():
    t = np.arange(1, 31, dtype=float)
    iv = pd.DataFrame({"run_id": ["a"] * 30 + ["b"] * 30, "t_s": np.concatenate([t, t]),
                       "tps": np.r_[np.linspace(100, 1000, 30), np.full(30, 1000.0)], "lat_pctl_ms": 5.0,
                       "config": "c1"})
    j = fig_json(charts.stability_over_time(iv, trim={"a": 10, "b": 0}, labels={"a": "WARMUP", "b": "FLAT"}))
    rects = [s for s in j["layout"]["shapes"] if s["type"] == "rect"]
    assert [(r["x0"], r["x1"]) for r in rects] == [(10.0, 30.0)]  # one steady window: after the latest warm-up cut
    assert [a["text"] for a in j["layout"]["annotations"]] == ["a: WARMUP", "b: FLAT", "steady window"]
    assert len(j["data"]) == 4  # throughput and latency per run
    both = fig_json(charts.stability_over_time(iv, trim={"a": 10, "b": 0}, labels={"a": "W", "b": "F"},
                                               color_by={"a": "semisync", "b": "semisync"}))
    lines = [t["line"] for t in both["data"][::2]]
    assert {x["color"] for x in lines} == {house_color("semisync")}  # a semi-sync run in semi-sync's colour
    assert [x["dash"] for x in lines] == ["solid", "dash"]  # its two runs told apart by dash
    avg = fig_json(charts.stability_over_time(iv, average_by="config"))
    assert [t["name"] for t in avg["data"] if t.get("showlegend", True)] == ["c1"]


def test_flow_control_and_parallel_apply_and_wan():
    sweep = pd.DataFrame({"cluster": "galera", "fc_limit": [16, 256, 4096], "tps_mean": [500, 800, 900],
                          "lag_p95_ms": [5, 40, 400]})
    j = fig_json(charts.flow_control_sweep(sweep))
    assert j["layout"]["xaxis"]["type"] == "log" and j["data"][1]["yaxis"] == "y2"  # throughput above, lag below
    assert j["layout"]["xaxis2"]["tickvals"] == [16, 256, 4096]  # ticked at the limits measured
    # two workloads, two durabilities: a column per workload, a dash per durability; each line varies the limit only
    both = pd.concat([sweep.assign(workload=w, variant=v, tps_mean=sweep.tps_mean * k)
                      for k, (w, v) in enumerate([(w, v) for w in ("oltp_read_write", "oltp_update_index")
                                                  for v in ("durable", "relaxed")], start=1)])
    fig = charts.flow_control_sweep(both)
    assert all(len(t.x) == 3 for t in fig.data)
    j = fig_json(fig)
    assert {t["xaxis"] for t in j["data"]} == {"x", "x2", "x3", "x4"} and len(j["data"]) == 8
    assert [t["name"] for t in j["data"] if t.get("showlegend") is not False] == ["galera durable", "galera relaxed"]
    assert [a["text"] for a in j["layout"]["annotations"]] == ["read write", "update index"]
    par = pd.DataFrame({"cluster": "async", "parallel_threads": [0, 4, 8], "tps_mean": [900] * 3,
                        "lag_p95_ms": [900, 100, 50], "replica_cpu_pct": [30, 60, 80]})
    j = fig_json(charts.parallel_apply(par))
    assert {t["yaxis"] for t in j["data"]} == {"y", "y2", "y3"}
    two = pd.concat([par.assign(variant="durable"), par.assign(variant="relaxed")])  # durability swept too
    j = fig_json(charts.parallel_apply(two))
    assert [(t["name"], t["line"]["dash"]) for t in j["data"][:2]] == [("async durable", "solid"), ("async relaxed", "dash")]
    wan = pd.DataFrame({"topology": ["async", "semisync", "galera"], "rtt_ms": [0, 20, 20],
                        "lat_pctl_ms": [0.4, 21, 22]})
    j = fig_json(charts.latency_vs_rtt(wan))
    assert [t["name"] for t in j["data"]][:2] == ["1 RTT", "2 RTT"] and j["data"][0]["y"] == [0, 20]


def test_lag_over_time_marks_load_end_and_catch_up():
    lag = pd.DataFrame({"node": ["r1", "r2"] * 3, "t_s": [1, 1, 2, 2, 3, 3], "lag_ms": [1, 2, 3, 4, 5, 60]})
    j = fig_json(charts.lag_over_time(lag, load_end=3, catch_up_s=0.5))
    assert [t["name"] for t in j["data"]] == ["r1", "r2"]
    assert any(s["type"] == "rect" and s["x0"] == 3 and s["x1"] == 3.5 for s in j["layout"]["shapes"])


def test_errors_name_the_available_columns():
    with pytest.raises(charts.ChartError, match="no column 'nope'") as err:
        charts.throughput_vs_threads(BY_THREADS, y="nope")
    assert "tps_mean" in err.value.hint
    with pytest.raises(charts.ChartError, match="empty"):
        charts.throughput_vs_threads(BY_THREADS.iloc[:0])


def test_catch_up_bars_with_min_max_whiskers():
    df = pd.DataFrame({"label": ["galera fc16", "galera fc4096"], "topology": "galera", "catch_up_s": [0.2, 3.0],
                       "catch_up_min": [0.1, 2.0], "catch_up_max": [0.4, 5.0]})
    j = fig_json(charts.catch_up(df, error_low="catch_up_min", error_high="catch_up_max"))
    bars, whiskers = j["data"]
    assert bars["type"] == "bar" and bars["marker"]["color"] == house_color("galera") and "error_y" not in bars
    assert whiskers["error_y"]["array"] == pytest.approx([0.2, 2.0])
    assert whiskers["error_y"]["arrayminus"] == pytest.approx([0.1, 1.0]) and whiskers["showlegend"] is False
    assert j["layout"]["barmode"] == "overlay"  # one bar per category, centred: no empty slot per other colour
    one = df.assign(catch_up_min=[0.2, 2.0], catch_up_max=[0.2, 5.0])  # one run: no interval, no whisker
    _, whiskers = fig_json(charts.catch_up(one, error_low="catch_up_min", error_high="catch_up_max"))["data"]
    assert whiskers["x"] == ["galera fc4096"]


def test_sustained_vs_peak_draws_the_bracket_and_marks_flow_control():
    df = pd.DataFrame({"label": ["async", "galera3"], "topology": ["async", "galera"], "peak_tps": [3900.0, 2900.0],
                       "sustained_tps": [1500.0, 2000.0], "first_failing_tps": [1560.0, 2180.0],
                       "fc_limited": [False, True]})
    j = fig_json(charts.sustained_vs_peak(df))
    peaks = [d for d in j["data"] if d["name"].endswith("peak")]
    sustained = [d for d in j["data"] if d["name"].endswith("sustained")]
    assert len(peaks) == len(sustained) == 2 and j["layout"]["barmode"] == "overlay"
    assert peaks[0]["width"] > sustained[0]["width"]  # the peak is the wider bar behind
    assert sustained[1]["marker"]["color"] == house_color("galera")
    assert sustained[1]["error_y"]["array"] == pytest.approx([180.0])
    assert [a["text"] for a in j["layout"]["annotations"]] == ["FC_LIMITED"]


def test_log_axes_label_every_tick_in_full_and_whiskers_stop_at_zero():
    vals, text = charts.axes.log_ticks([4.2, 37, 180])
    assert text == ["5", "10", "20", "50", "100", "200"] and vals[0] == 5
    j = fig_json(charts.latency_vs_threads(BY_THREADS, y_mean="lat_mean_ms"))
    assert j["layout"]["yaxis"]["ticktext"][:3] == ["5", "10", "20"]  # never a bare "2" next to a "10"
    assert j["layout"]["xaxis"]["tickvals"] == [1, 8, 64]  # the thread counts measured
    wide = RATIOS.assign(ci_low=[-0.08, 0.9, 0.5, -np.inf])
    bars = fig_json(charts.ratio_bars(wide))["data"]
    durable = next(t for t in bars if t.get("showlegend") is False and t["offset"] == -0.4)  # semisync durable's whisker
    assert durable["error_y"]["arrayminus"] == pytest.approx([0.8])  # drawn down to zero, not to -0.08
