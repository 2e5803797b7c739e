"""Merging client hosts' sysbench results on a common clock, on outputs captured from real runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlib.sysbench.merge import histogram_percentile, merge_results
from benchlib.sysbench.output import parse_file

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "sysbench"


def test_two_hosts_add_up_second_by_second():
    a = parse_file(FIX / "read_write_t8_closed.txt")
    b = parse_file(FIX / "read_write_t8_closed.txt")
    merged = merge_results({"c1": (100.0, a), "c2": (100.004, b)})
    assert len(merged.intervals) == len(a.intervals)
    assert merged.intervals["tps"].tolist() == pytest.approx((a.intervals["tps"] * 2).tolist())
    assert (merged.intervals["threads"] == a.intervals["threads"] * 2).all()
    assert merged.intervals["lat_pctl_ms"].tolist() == a.intervals["lat_pctl_ms"].tolist()  # max of equals
    s = merged.summary
    assert s["transactions"] == 2 * a.summary["transactions"]
    assert s["tps"] == pytest.approx(2 * a.summary["transactions"] / a.summary["total_time_s"])
    assert s["lat_min_ms"] == a.summary["lat_min_ms"] and s["lat_max_ms"] == a.summary["lat_max_ms"]
    assert s["lat_avg_ms"] == pytest.approx(a.summary["lat_sum_ms"] / a.summary["events"])
    assert merged.histogram["count"].sum() == 2 * a.histogram["count"].sum()
    # the run's percentile from the merged histogram is the one sysbench read from its own (printed to 0.01 ms)
    assert s["lat_pctl_ms"] == histogram_percentile(a.histogram, a.summary["pctl"])
    assert s["lat_pctl_ms"] == pytest.approx(a.summary["lat_pctl_ms"], abs=0.005)


def test_a_host_that_started_a_second_late_loses_the_edges_not_the_alignment():
    a = parse_file(FIX / "read_write_t8_closed.txt")
    late = merge_results({"c1": (100.0, a), "c2": (101.0, a)})
    n = len(a.intervals)
    assert len(late.intervals) == n - 1  # the seconds only one host covered are dropped
    # second k of the common clock: c1's interval k+1 plus c2's interval k
    expect = (a.intervals["tps"].iloc[1:].to_numpy() + a.intervals["tps"].iloc[:-1].to_numpy()).tolist()
    assert late.intervals["tps"].tolist() == pytest.approx(expect)


def test_open_loop_rates_add_up_and_queues_too():
    a = parse_file(FIX / "read_write_t4_rate2000.txt")
    merged = merge_results({"c1": (5.0, a), "c2": (5.0, a)})
    assert merged.target_rate == 2 * a.target_rate and merged.open_loop
    assert merged.intervals["queue_length"].tolist() == (a.intervals["queue_length"] * 2).tolist()


def test_one_host_is_its_own_result():
    a = parse_file(FIX / "read_write_t8_closed.txt")
    assert merge_results({"c1": (0.0, a)}) is a


def test_thread_fairness_pools_every_thread():
    a = parse_file(FIX / "read_write_t8_closed.txt")
    merged = merge_results({"c1": (0.0, a), "c2": (0.0, a)})
    assert list(merged.summary) == list(a.summary)  # the form of one host's summary
    assert merged.summary["fairness_events_avg"] == pytest.approx(a.summary["fairness_events_avg"])
    assert merged.summary["fairness_events_stddev"] == pytest.approx(a.summary["fairness_events_stddev"])
