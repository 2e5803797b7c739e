"""Lag growth: bounded-but-autocorrelated lag is not "growing"; real growth is found."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from benchlib.analysis.lag import lag_growth
from tests.analysis.sim import ar1


def test_bounded_ar095_lag_is_rarely_called_growing():
    verdicts = Counter(lag_growth(50 + ar1(600, 0.95, 20, np.random.default_rng(s))).verdict for s in range(100))
    assert verdicts["GROWING"] <= 12  # spec: GLSAR 7%, plain OLS 17-25%


def test_growing_and_sustained_lag():
    rng = np.random.default_rng(1)
    t = np.arange(600)
    grow = lag_growth(20 + 5 * t + ar1(600, 0.8, 20, rng))
    assert grow.verdict == "GROWING" and 4.5 < grow.slope < 5.5 and grow.end_median > grow.start_median
    flat = lag_growth(5 + ar1(600, 0.3, 1, rng))
    assert flat.verdict == "SUSTAINED" and flat.slope_high < flat.epsilon


def test_backlog_epsilon_scales_with_throughput_and_short_runs_say_so():
    rng = np.random.default_rng(2)
    r = lag_growth(100 + 2 * np.arange(90) + ar1(90, 0.5, 5, rng), unit="trx", tps=1000, trim_s=10)
    assert r.epsilon == 5.0 and r.verdict == "SUSTAINED"  # 2 trx/s of growth < 0.5% of 1000 TPS
    assert any("shorter than" in n for n in r.notes) and r.skipped_s == 10


def test_worst_node_per_second_for_every_run_at_once():
    from benchlib.analysis.runs import run_inputs as _inputs

    runs = pd.DataFrame({"run_id": ["r1", "r2"], "load_start_s": [10.0, 50.0], "load_end_s": [12.0, 52.0]})
    lag = pd.DataFrame({"run_id": pd.Categorical(["r1"] * 4 + ["r2"] * 2), "node": ["a", "b", "a", "b", "a", "b"],
                        "t_commit_s": [10.1, 10.2, 11.5, 11.6, 50.5, 50.6], "lag_ms": [3.0, 9.0, 4.0, 2.0, 7.0, 1.0]})
    empty = pd.DataFrame(columns=["run_id", "t_s", "tps", "lat_pctl_ms", "err_per_s"])
    r1, r2 = _inputs(runs, {"intervals": empty, "lag": lag})
    assert list(r1.lag_t) == [0.0, 1.0] and list(r1.lag_worst) == [9.0, 4.0]
    assert list(r2.lag_t) == [0.0] and list(r2.lag_worst) == [7.0] and r2.load_s == 2.0
