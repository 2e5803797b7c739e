"""Intervals that assume no distribution, for the few runs a fault campaign has: a quantile's from order statistics,
a share's exact binomial one (Clopper-Pearson)."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

__all__ = ["quantile_interval", "share_interval"]


def quantile_interval(values: np.ndarray, p: float, level: float = 0.95) -> tuple[float, float]:
    """A distribution-free interval for the ``p`` quantile from order statistics (NaN: beyond the data)."""
    x = np.sort(np.asarray(values, dtype=float))
    x = x[~np.isnan(x)]
    if len(x) < 2:
        return (math.nan, math.nan)
    ci = stats.quantile_test(x, q=float(np.quantile(x, p)), p=p).confidence_interval(level)
    return (float(ci.low), float(ci.high))


def share_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson interval of a share ``k`` of ``n``."""
    if n == 0:
        return (math.nan, math.nan)
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="exact")
    return (float(ci.low), float(ci.high))
