"""The sysbench output parser, on real sysbench 1.0.20 output (tests/fixtures/sysbench/capture.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from benchlib.schema import INTERVALS, SchemaError
from benchlib.sysbench.output import LineParser, SysbenchParseError, parse_file, parse_text

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "sysbench"
COMPLETE = ["read_write_t8_closed.txt", "read_write_t4_rate2000.txt", "update_index_t4_rate300.txt",
            "point_select_t2_p99_nohistogram.txt", "galera_write_only_conflicts.txt"]


@pytest.mark.parametrize("name", COMPLETE)
def test_mean_interval_tps_agrees_with_the_summary(name):
    r = parse_file(FIX / name)
    assert r.complete and not r.truncated
    assert abs(r.intervals.tps.mean() / r.summary["tps"] - 1) < 0.005


@pytest.mark.parametrize("name", COMPLETE)
def test_frames_follow_the_schema(name):
    r = parse_file(FIX / name)
    INTERVALS.validate(r.intervals)
    assert list(r.intervals.t_s) == [float(i) for i in range(1, len(r.intervals) + 1)]
    # every thread runs until the last interval, in which they finish one by one
    assert (r.intervals.threads.iloc[:-1] == r.threads).all() and r.intervals.threads.iloc[-1] <= r.threads


def test_closed_loop_run():
    r = parse_file(FIX / "read_write_t8_closed.txt")
    assert (r.version, r.threads, r.target_rate, r.report_interval_s) == ("1.0.20", 8, None, 1.0)
    assert not r.open_loop and len(r.intervals) == 10
    assert r.intervals.queue_length.isna().all() and r.intervals.concurrency.isna().all()
    assert (r.intervals.pctl == 95).all()
    row = r.intervals.iloc[0]
    assert row.qps == pytest.approx(row.reads_per_s + row.writes_per_s + row.other_per_s, rel=1e-3)
    s = r.summary
    assert s["transactions"] == s["events"] and s["pctl"] == 95
    assert s["queries_total"] == s["queries_read"] + s["queries_write"] + s["queries_other"]
    assert s["total_time_s"] == pytest.approx(10.0, abs=0.1)
    assert s["lat_min_ms"] <= s["lat_avg_ms"] <= s["lat_pctl_ms"] <= s["lat_max_ms"]
    assert {"fairness_events_avg", "fairness_events_stddev", "fairness_time_s_avg"} <= set(s)


def test_histogram_counts_every_event():
    r = parse_file(FIX / "read_write_t8_closed.txt")
    assert r.histogram.lat_ms.is_monotonic_increasing
    assert r.histogram["count"].sum() == r.summary["events"]
    # values are the buckets' lower bounds: the first bucket holds the fastest event
    first, second = r.histogram.lat_ms.iloc[:2]
    assert first <= r.summary["lat_min_ms"] < second


def test_open_loop_queue_grows_beyond_capacity():
    r = parse_file(FIX / "read_write_t4_rate2000.txt")
    assert r.open_loop and r.target_rate == 2000
    q = r.intervals.queue_length
    assert q.notna().all() and q.is_monotonic_increasing and q.iloc[-1] > q.iloc[0] > 0
    assert (r.intervals.concurrency.iloc[:-1] == 4).all() and r.intervals.concurrency.iloc[-1] <= 4
    assert r.summary["tps"] < 2000


def test_open_loop_within_capacity_keeps_an_empty_queue():
    r = parse_file(FIX / "update_index_t4_rate300.txt")
    assert r.target_rate == 300 and r.intervals.queue_length.max() <= 5
    assert r.summary["tps"] == pytest.approx(300, rel=0.1)


def test_other_percentile_and_no_histogram():
    r = parse_file(FIX / "point_select_t2_p99_nohistogram.txt")
    assert (r.intervals.pctl == 99).all() and r.summary["pctl"] == 99
    assert r.histogram.empty and list(r.histogram.columns) == ["lat_ms", "count"]


def test_galera_certification_conflicts_show_as_errors():
    r = parse_file(FIX / "galera_write_only_conflicts.txt")
    assert r.intervals.err_per_s.gt(0).all()
    assert r.summary["ignored_errors"] > 0 and r.summary["err_per_s"] > 0


def test_killed_run_parses_up_to_the_cut():
    r = parse_file(FIX / "read_write_killed.txt")
    assert r.truncated and not r.complete
    assert "without sysbench's final summary" in r.truncation
    assert len(r.intervals) == 3 and r.summary == {}


def test_output_cut_mid_line():
    text = (FIX / "read_write_t8_closed.txt").read_text()
    cut = text.index("[ 4s ]") + 25  # inside the 4th interval line
    r = parse_text(text[:cut], "cut.txt")
    assert r.truncated and "mid-line" in r.truncation
    assert len(r.intervals) == 3


def test_fatal_errors_are_collected():
    r = parse_file(FIX / "unreachable_server.txt")
    assert not r.complete and not r.truncated
    assert any("error 2002" in f for f in r.fatal)
    assert r.intervals.empty


@pytest.mark.parametrize("mangle, lineno_of, why", [
    (lambda t: t.replace("[ 5s ] thds: 8 tps:", "[ 5s ] thds: 8 tsp:"), "[ 5s ]", "not a per-second interval line"),
    (lambda t: t.replace("SQL statistics:", "SQL statistics:\n    transactions: lots"), "transactions: lots",
     "not a summary line"),
    (lambda t: re.sub(r"(total time:\s+)\S+", r"\1tens", t), "tens", "not a number"),
    (lambda t: t.replace("[ 5s ] thds", "oops\n[ 5s ] thds"), "oops", "unexpected line among the per-second"),
])
def test_malformed_input_names_file_line_and_text(mangle, lineno_of, why):
    text = mangle((FIX / "read_write_t8_closed.txt").read_text())
    with pytest.raises(SysbenchParseError) as info:
        parse_text(text, "bad.txt")
    err = info.value
    expected_line = next(i for i, line in enumerate(text.splitlines(), 1) if lineno_of in line)
    assert (err.source, err.lineno) == ("bad.txt", expected_line)
    assert lineno_of in err.line and why in err.message
    assert err.message.startswith(f"bad.txt:{expected_line}: ")


def test_bad_histogram_row():
    text = (FIX / "read_write_t8_closed.txt").read_text().replace("|*", "|#", 1)
    with pytest.raises(SysbenchParseError, match="not a histogram row"):
        parse_text(text, "bad.txt")


def test_live_feed_returns_each_interval_as_it_completes():
    closed = LineParser("live")
    got = [iv for line in (FIX / "read_write_t8_closed.txt").read_text().splitlines() if (iv := closed.feed(line))]
    assert [iv.t_s for iv in got] == [float(i) for i in range(1, 11)]
    opened = LineParser("live")
    got = [iv for line in (FIX / "read_write_t4_rate2000.txt").read_text().splitlines() if (iv := opened.feed(line))]
    assert len(got) == 6 and all(iv.queue_length is not None for iv in got)  # completed by the queue line


def test_schema_rejects_wrong_columns_and_types():
    r = parse_file(FIX / "read_write_t8_closed.txt")
    with pytest.raises(SchemaError, match="missing columns \\['tps'\\]"):
        INTERVALS.validate(r.intervals.drop(columns="tps"))
    with pytest.raises(SchemaError, match="column 'threads' is float64"):
        INTERVALS.validate(r.intervals.astype({"threads": "float64"}))
    assert isinstance(INTERVALS.empty(), pd.DataFrame)


def test_a_server_lost_mid_run_parses_every_line_sysbench_prints():
    """A primary killed (SIGKILL) during a real run: FATAL lines, '(last message repeated 1 times)', no summary."""
    r = parse_file(FIX / "point_select_primary_killed.txt")
    assert len(r.intervals) >= 3 and not r.summary
    assert r.fatal and all("Lost connection" in f for f in r.fatal)
    text = (FIX / "point_select_primary_killed.txt").read_text()
    assert "(last message repeated 1 times)" in text  # the line that used to be rejected


def test_the_failure_reason_folds_repeated_fatal_lines():
    from benchlib.sysbench.process import fatal_reason

    r = parse_file(FIX / "point_select_primary_killed.txt")
    reason = fatal_reason(r, 1)
    distinct = len(set(r.fatal))
    assert distinct < len(r.fatal) and reason.count("Lost connection") == min(3, distinct)
    assert reason.endswith(f"and {distinct - 3} more") if distinct > 3 else True
    assert fatal_reason(None, -9) == "sysbench exited with -9"
