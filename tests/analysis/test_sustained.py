"""The sustained-throughput rules (statistics spec F) on series with a known answer, and the search."""

from __future__ import annotations

import numpy as np
import pytest

from benchlib.analysis.sustained import (FC_LIMITED, INCONCLUSIVE, SUSTAINED, UNSUSTAINED, SearchPlan, accepted,
                                         bracket, next_rate, rate_verdict)


def series(rate: float, n: int = 60, *, capacity: float | None = None, lag_growth: float = 0.0, seed: int = 1):
    """Per-second throughput, queue length and worst lag of an open-loop run at ``rate`` against a system
    that serves up to ``capacity`` (Poisson arrivals, AR(1) lag noise)."""
    rng = np.random.default_rng(seed)
    arrivals = rng.poisson(rate, n).astype(float)
    cap = capacity if capacity is not None else np.inf
    served, queue, q = [], [], 0.0
    for a in arrivals:
        q += a
        s = min(q, cap + rng.normal(0, 0.01 * cap) if np.isfinite(cap) else q)
        q -= s
        served.append(s)
        queue.append(q)
    e = np.zeros(n)
    for i in range(1, n):
        e[i] = 0.6 * e[i - 1] + rng.normal(0, 2.0)
    lag = 5 + lag_growth * np.arange(n) + np.abs(e)
    return np.array(served), np.array(queue), np.arange(n, dtype=float), lag


def test_a_rate_below_capacity_is_sustained_with_its_poisson_shortfall_allowed():
    for seed in range(20):
        tps, q, t, lag = series(200, seed=seed)
        v = rate_verdict(200, tps, t_s=t + 1, queue=q, lag_t=t, lag_ms=lag)
        assert v.verdict == SUSTAINED, (seed, v)


def test_a_rate_above_capacity_fails_on_achieved_throughput_and_a_growing_queue():
    tps, q, t, lag = series(1000, capacity=800)
    v = rate_verdict(1000, tps, t_s=t + 1, queue=q, lag_t=t, lag_ms=lag)
    assert v.verdict == UNSUSTAINED and v.queue_verdict == "GROWING"
    assert any("achieved" in r for r in v.reasons) and v.achieved_share < 0.85


def test_growing_replica_lag_fails_a_rate_the_writer_keeps_up_with():
    tps, q, t, lag = series(300, lag_growth=20.0)  # the replicas fall 20 ms further behind every second
    v = rate_verdict(300, tps, t_s=t + 1, queue=q, lag_t=t, lag_ms=lag)
    assert v.verdict == UNSUSTAINED and v.lag_verdict == "GROWING" and "replica lag grows" in v.reasons


def test_flow_control_throttling_is_flagged_and_short_runs_are_inconclusive():
    tps, q, t, lag = series(300)
    assert rate_verdict(300, tps, t_s=t + 1, queue=q, lag_t=t, lag_ms=lag, fc_paused_frac=0.2).verdict == FC_LIMITED
    short = rate_verdict(300, tps[:6], t_s=t[:6] + 1, queue=q[:6], lag_t=t[:6], lag_ms=lag[:6])
    assert short.verdict == INCONCLUSIVE and "run longer" in short.reasons[0]
    full = rate_verdict(300, tps, t_s=t + 1, queue=q, lag_t=t, lag_ms=lag, queue_full=True)
    assert full.verdict == UNSUSTAINED and "overflowed" in "; ".join(full.reasons)


def test_repetitions_need_a_majority_sustained_and_none_unsustained():
    assert accepted([SUSTAINED, SUSTAINED, INCONCLUSIVE])
    assert not accepted([SUSTAINED, SUSTAINED, UNSUSTAINED])
    assert not accepted([SUSTAINED, FC_LIMITED]) and not accepted([])


@pytest.mark.parametrize("capacity", [137, 800, 2450, 9999])
def test_the_search_sweeps_then_bisects_to_a_two_percent_bracket_around_the_capacity(capacity):
    plan = SearchPlan(start=0.5 * capacity * 1.3, step=1.5, precision=0.02)  # peak overstated by 30%
    history: dict[int, bool] = {}
    while (rate := next_rate(history, plan)) is not None:
        assert rate not in history
        history[rate] = rate <= capacity
        assert len(history) < 30
    low, high = bracket(history)
    assert low <= capacity < high and (high - low) / low <= 0.02


def test_the_search_steps_down_when_the_first_rate_fails_and_gives_up_at_the_floor():
    plan = SearchPlan(start=1000, step=2, max_steps_down=3)
    history: dict[int, bool] = {}
    while (rate := next_rate(history, plan)) is not None:
        history[rate] = rate <= 300
    low, high = bracket(history)
    assert low is not None and low <= 300 < high
    nothing: dict[int, bool] = {}
    while (rate := next_rate(nothing, plan)) is not None:
        nothing[rate] = False
    assert bracket(nothing) == (None, 125) and len(nothing) == 4


def test_missing_lag_is_not_sustained_lag():
    """Audit B6: a replicated topology whose lag sampling came back empty is INCONCLUSIVE; only a single server
    (no replicas) is judged without lag."""
    t = np.arange(120, dtype=float)
    tps = 300 + np.random.default_rng(3).normal(0, 5, len(t))
    q = np.zeros(len(t))
    missing = rate_verdict(300, tps, t_s=t + 1, queue=q)
    assert missing.verdict == INCONCLUSIVE and "no lag samples" in "; ".join(missing.reasons)
    assert rate_verdict(300, tps, t_s=t + 1, queue=q, has_replicas=False).verdict == SUSTAINED
