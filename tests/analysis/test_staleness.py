"""Stale reads by Jepsen's definitions, and their rate's interval with runs as the unit (simulated, fixed seeds)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from benchlib.analysis.staleness import classify, rare_rate, rate_bounds, stable_latency, stale_fractions


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
    r = rare_rate([0, 0, 0, 0], [10_000] * 4)
    assert r.low == 0 and r.design_effect == 1
    assert r.upper == pytest.approx(stats.beta.ppf(0.95, 0.5, 40_000.5))  # Jeffreys: about 1.92 / n
    assert r.upper < r.high  # the one-sided bound is below the two-sided interval's upper end


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
        a = p * (1 / 0.02 - 1)
        rates = rng.beta(a, a * (1 - p) / p, size=5)  # each run its own rate around p
        stale = rng.binomial(2000 // 20, rates) * 20  # 20 reads in a row share their fate
        r = rare_rate(stale, [2000] * 5)
        hits += r.low <= p <= r.high
        ci = stats.binomtest(int(stale.sum()), 10_000).proportion_ci(method="wilson")  # every read as if independent
        lo, hi = ci.low, ci.high
        naive_hits += lo <= p <= hi
    assert hits / trials >= 0.90  # near 95%
    assert naive_hits / trials < 0.75  # what treating reads as independent would claim
    row = stale_fractions(_campaign(rng, runs=5, reads=2000, p=p, spread=0.02), ["cluster"]).iloc[0]
    assert row.design_effect > 1 and row.low < row.fraction < row.upper < row.high  # the table is rare_rate's


def _coverage(seed: int, expected: float, cv: float, trials: int = 1500, runs: int = 10, reads: int = 10_000):
    """Coverage of the two-sided interval and of the one-sided upper bound over ``trials`` campaigns of ``runs`` runs
    of ``reads`` reads, the true rate drawn (log-uniform) within a factor 2 of ``expected`` events in all (a
    neighbourhood, as discrete intervals are judged: at one rate the coverage jumps with the counts it admits); each
    run's rate varies around it by a gamma of coefficient of variation ``cv`` (0: none, binomial counts)."""
    rng = np.random.default_rng(seed)
    two = one = 0
    for _ in range(trials):
        p = expected * np.exp(rng.uniform(np.log(0.5), np.log(2))) / (runs * reads)
        rates = p * (rng.gamma(1 / cv ** 2, cv ** 2, size=runs) if cv else np.ones(runs))
        r = rare_rate(rng.binomial(reads, np.minimum(rates, 1)), [reads] * runs)
        two += r.low <= p <= r.high
        one += p <= r.upper
    return two / trials, one / trials


@pytest.mark.parametrize("expected", [3, 30])
@pytest.mark.parametrize("cv", [0.0, 0.5])
def test_rare_event_bounds_cover_near_95_percent_with_and_without_overdispersion(expected, cv):
    """3 and 30 events in 100,000 reads over 10 runs: both bounds cover 93-97%; at 1 event the counts are too
    few for any interval to cover less than about 98% (the next test)."""
    two, one = _coverage(expected * 10 + int(cv * 10), expected, cv)
    assert 0.93 <= two <= 0.97, two
    assert 0.93 <= one <= 0.97, one


@pytest.mark.parametrize("cv", [0.0, 0.5])
def test_at_one_event_in_100000_the_bounds_err_on_the_safe_side(cv):
    two, one = _coverage(1 + int(cv * 10), 1, cv)
    assert 0.95 <= two <= 0.985 and one >= 0.95, (two, one)


@pytest.mark.parametrize("stale", [0, 1, 3, 30])
def test_no_bound_jumps_when_the_design_effect_leaves_1(stale):
    """The spread between runs moved from none (design effect 1.0000) to barely some (1.0001): the bounds move by
    far less than 5% (the old rule switched z for Student's t(k-1) there: 2.9 times the bound at 3 in 144,000)."""
    n = 144_000
    at_1, nudged = rate_bounds(stale / n, n, 3, 1.0), rate_bounds(stale / n, n, 3, 1.0001)
    for f in ("low", "high", "upper"):
        a, b = getattr(at_1, f), getattr(nudged, f)
        assert abs(b - a) <= 0.05 * max(a, 1e-12), (f, a, b)
    assert rare_rate([stale, 0, 0], [n / 3] * 3).upper == pytest.approx(
        rate_bounds(stale / n, n, 3, rare_rate([stale, 0, 0], [n / 3] * 3).design_effect).upper)


def test_quantiles_are_over_the_stale_reads():
    df = pd.DataFrame({"run_id": ["a"] * 4, "cluster": "c", "stale": pd.array([True, False, True, None],
                                                                               dtype="boolean"),
                       "staleness_ms": [10.0, 0.0, 30.0, np.nan], "read_ms": [1.0, 2.0, 3.0, np.nan],
                       "wait_ms": np.nan})
    row = stale_fractions(df, ["cluster"]).iloc[0]
    assert (row.reads, row.stale, row.failed) == (3, 2, 1)
    assert row.staleness_ms_max == 30 and row.staleness_ms_p50 == 20 and row.read_ms_p50 == 2
