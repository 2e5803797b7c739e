"""A throughput's dip under a fault: its lowest second, the time back to 95% and its cost in seconds of throughput."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchlib.analysis.dip import before, dip, per_second


def _series(values: list[float], start: float = 1.0):
    t = np.arange(start, start + len(values))
    return t, np.asarray(values, dtype=float)


def test_a_stop_costs_its_length_and_half_speed_costs_half():
    # 10 s at 100, a 4 s stop from 10 s, then 100 again
    t, v = _series([100.0] * 10 + [0.0] * 4 + [100.0] * 10)
    level = before(t, v, 10.0)
    d = dip(per_second(t, v, 10.0, t.max()), level, 10.0)
    assert level == 100 and d["lowest"] == 0 and d["recovered_s"] == 4 and d["area_s"] == 4 and d["lost"] == 400
    # a minute at half speed after the fault, then back
    t, v = _series([100.0] * 10 + [50.0] * 60 + [100.0] * 10)
    d = dip(per_second(t, v, 10.0, t.max()), 100.0, 10.0)
    assert d["area_s"] == pytest.approx(30) and d["recovered_s"] == 60 and d["lowest"] == 50


def test_seconds_without_a_report_count_as_zero_and_a_load_that_never_recovers_costs_until_its_end():
    # 10 s at 100; sysbench said nothing for seconds 11-15, then reported 80 until the load ended at 20 s
    t = np.r_[np.arange(1.0, 11.0), np.arange(16.0, 21.0)]
    v = np.r_[[100.0] * 10, [80.0] * 5]
    s = per_second(t, v, 10.0, 20.0)
    assert list(s.index) == list(range(11, 21)) and (s.loc[11:15] == 0).all()
    d = dip(s, 100.0, 10.0)
    assert math.isnan(d["recovered_s"]) and d["area_s"] == pytest.approx(5 + 5 * 0.2)


def test_a_load_that_never_slowed_costs_nothing():
    t, v = _series([100.0, 98.0, 101.0, 99.0, 100.0, 97.0, 100.0, 99.0])
    d = dip(per_second(t, v, 3.0, t.max()), before(t, v, 3.0), 3.0)
    assert d["recovered_s"] == 0 and d["area_s"] == 0 and d["lost"] == 0
