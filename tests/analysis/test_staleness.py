"""Stale reads by Jepsen's definitions, and their rate's interval with runs as the unit (simulated, fixed seeds)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchlib.analysis.staleness import classify, stable_latency, stale_fractions, wilson


def _writes(acks: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"seq": np.arange(1, len(acks) + 1), "t_sent_s": np.array(acks) - 0.01,
                         "t_acked_s": acks, "write_ms": 10.0, "error": ""})


def _reads(rows: list[tuple]) -> pd.DataFrame:  # (node, sent, returned, value or None)
    return pd.DataFrame({"node": [r[0] for r in rows], "setting": "eventual",
                         "t_sent_s": [r[1] for r in rows], "t_returned_s": [r[2] for r in rows],
                         "wait_ms": np.nan, "value": pd.array([r[3] for r in rows], dtype="Int64"),
                         "acked_seq": 0, "error": ["" if r[3] is not None else "timed out" for r in rows]})


def test_a_read_is_stale_when_it_misses_a_value_known_before_it_was_sent():
    writes = _writes([1.0, 2.0, 3.0])
    reads = classify(_reads([
        ("a", 0.5, 0.51, 0),  # nothing known yet: fresh
        ("a", 2.5, 2.51, 1),  # stale by one version: 2 was known from 1.6 (the read below), 900 ms
        ("b", 1.5, 1.6, 2),  # returns 2 before its ack (2.0): 2 is known from 1.6 on
        ("a", 1.7, 1.71, 1),  # sent after 2 was known by that read: stale, 100 ms
        ("b", 3.5, 3.6, None),  # failed: neither stale nor fresh
        ("a", 3.5, 3.51, 0),  # misses 1, 2 and 3: three versions, 1 was known from 1.0
    ]), writes)
    assert reads["known_seq"].tolist() == [0, 2, 1, 2, 3, 3]
    assert reads["stale"].tolist() == [False, True, False, True, pd.NA, True]
    assert reads["staleness_versions"].tolist() == [0, 1, 0, 1, pd.NA, 3]
    assert reads["staleness_ms"].round(6).tolist()[:4] == [0.0, 900.0, 0.0, 100.0]
    assert np.isnan(reads["staleness_ms"][4]) and reads["staleness_ms"][5] == pytest.approx(2500.0)
    assert reads["read_ms"].round(6).tolist()[:2] == [10.0, 10.0]


def test_stable_latency_runs_from_known_to_the_last_read_that_missed_it():
    writes = _writes([1.0, 2.0, 3.0, 4.0])
    reads = classify(_reads([("a", 1.2, 1.21, 0), ("a", 1.4, 1.41, 1), ("b", 2.3, 2.31, 1), ("b", 3.1, 3.11, 3)]),
                     writes)
    st = stable_latency(reads, writes)
    assert st["stable_ms"].round(6).tolist() == [200.0, 300.0, 0.0, 0.0]
    assert st["never_read"].tolist() == [False, False, False, True]


def test_no_stale_read_gives_the_one_sided_upper_bound():
    low, high = wilson(0, 40_000)
    assert low == 0 and high == pytest.approx(3 / 40_000, rel=0.01)  # the rule of three


def _campaign(rng, runs: int, reads: int, p: float, spread: float) -> pd.DataFrame:
    """Runs whose own stale rate varies around ``p`` (beta), stale reads in bursts within a run."""
    frames = []
    for r in range(runs):
        a = p * (1 / spread - 1)
        rate = rng.beta(a, a * (1 - p) / p)
        bursts = rng.random(reads // 20) < rate  # 20 reads in a row share their fate
        stale = np.repeat(bursts, 20)
        frames.append(pd.DataFrame({"run_id": f"r{r}", "cluster": "c", "stale": pd.array(stale, dtype="boolean"),
                                    "staleness_ms": np.where(stale, 50.0, 0.0), "read_ms": 1.0, "wait_ms": np.nan}))
    return pd.concat(frames, ignore_index=True)


def test_the_interval_of_bursty_stale_reads_covers_the_rate_with_runs_as_the_unit():
    rng = np.random.default_rng(7)
    p, hits, naive_hits, trials = 0.05, 0, 0, 300
    for _ in range(trials):
        df = _campaign(rng, runs=5, reads=2000, p=p, spread=0.02)
        row = stale_fractions(df, ["cluster"]).iloc[0]
        hits += row.low <= p <= row.high
        lo, hi = wilson(row.stale, row.reads)  # every read as if independent
        naive_hits += lo <= p <= hi
    assert hits / trials >= 0.90  # near 95%
    assert naive_hits / trials < 0.75  # what treating reads as independent would claim


def test_quantiles_are_over_the_stale_reads():
    df = pd.DataFrame({"run_id": ["a"] * 4, "cluster": "c", "stale": pd.array([True, False, True, None],
                                                                               dtype="boolean"),
                       "staleness_ms": [10.0, 0.0, 30.0, np.nan], "read_ms": [1.0, 2.0, 3.0, np.nan],
                       "wait_ms": np.nan})
    row = stale_fractions(df, ["cluster"]).iloc[0]
    assert (row.reads, row.stale, row.failed) == (3, 2, 1)
    assert row.staleness_ms_max == 30 and row.staleness_ms_p50 == 20 and row.read_ms_p50 == 2
