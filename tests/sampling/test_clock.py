"""Clock offsets from bracketed samples: the lowest round trip wins; negative lag is kept."""

from __future__ import annotations

import random

import pytest

from benchlib.sampling.clock import OffsetEstimator, corrected_lag_s


def test_the_lowest_round_trip_sample_bounds_the_offset():
    rng = random.Random(5)
    true_offset = 0.0375  # the remote clock is 37.5 ms ahead
    est = OffsetEstimator(window=32)
    t = 100.0
    for _ in range(200):
        up, down = rng.uniform(0.0002, 0.02), rng.uniform(0.0002, 0.02)  # asymmetric, jittery paths
        est.add(t, t + up + true_offset, t + up + down)
        t += 0.1
    off = est.estimate()
    assert abs(off.offset_s - true_offset) <= off.error_s <= 0.01
    assert off.samples == 200 and off.rtt_s == pytest.approx(2 * off.error_s)
    assert off.to_local(200.0 + true_offset) == pytest.approx(200.0, abs=off.error_s)
    with pytest.raises(ValueError, match="answered before it was sent"):
        est.add(5.0, 5.0, 4.0)
    assert OffsetEstimator().estimate() is None


def test_cross_host_lag_is_corrected_and_never_clamped():
    est_a, est_b = OffsetEstimator(), OffsetEstimator()
    est_a.add(10.0, 10.5 + 0.001, 10.002)   # host A is 0.5 s ahead
    est_b.add(10.0, 9.8 + 0.001, 10.002)    # host B is 0.2 s behind
    a, b = est_a.estimate(), est_b.estimate()
    # committed on B at B-time 20.0 (sampler 20.2), applied on A at A-time 20.75 (sampler 20.25): 50 ms lag
    assert corrected_lag_s(20.75, 20.0, a, b) == pytest.approx(0.05, abs=0.002)
    # an apply seen "before" its commit is skew, and is returned negative
    assert corrected_lag_s(20.6, 20.0, a, b) < 0
