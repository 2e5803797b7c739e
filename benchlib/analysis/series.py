"""Small building blocks on per-second series: batch means, autocorrelation, Mann-Kendall, runs of seconds."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats


def as_array(values) -> np.ndarray:
    x = np.asarray(values, dtype=float)
    return x[np.isfinite(x)]


def batch_means(x: np.ndarray, size: int | None = None, count: int | None = None) -> np.ndarray:
    """Means of consecutive non-overlapping batches: of ``size`` seconds, or ``count`` equal batches
    (the remainder at the start is dropped, so the end of the run, the steady part, is kept whole)."""
    x = np.asarray(x, dtype=float)
    if count is not None:
        size = max(1, len(x) // count)
    if not size or len(x) < size:
        return np.array([])
    k = len(x) // size
    return x[len(x) - k * size:].reshape(k, size).mean(axis=1)


def lag1(x: np.ndarray) -> float:
    """Lag-1 autocorrelation (0 for series too short or constant)."""
    x = np.asarray(x, dtype=float)
    if len(x) < 3:
        return 0.0
    d = x - x.mean()
    den = float(np.dot(d, d))
    return float(np.dot(d[1:], d[:-1]) / den) if den > 0 else 0.0


@dataclass(frozen=True)
class Trend:
    """Mann-Kendall on a short series (batch means) with the Theil-Sen slope per unit of ``t``."""

    s: int
    z: float
    p: float
    slope: float
    slope_low: float
    slope_high: float


def mann_kendall(y: np.ndarray, t: np.ndarray | None = None) -> Trend:
    y = np.asarray(y, dtype=float)
    n = len(y)
    t = np.arange(n, dtype=float) if t is None else np.asarray(t, dtype=float)
    if n < 3:
        return Trend(0, 0.0, 1.0, 0.0, 0.0, 0.0)
    diff = np.sign(y[None, :] - y[:, None])
    s = int(np.triu(diff, 1).sum())
    _, counts = np.unique(y, return_counts=True)
    var = (n * (n - 1) * (2 * n + 5) - np.sum(counts * (counts - 1) * (2 * counts + 5))) / 18.0
    z = 0.0 if var <= 0 or s == 0 else (s - np.sign(s)) / np.sqrt(var)
    p = float(2 * stats.norm.sf(abs(z)))
    slope, _, lo, hi = stats.theilslopes(y, t, 0.95)
    return Trend(s, float(z), p, float(slope), float(lo), float(hi))


def runs_of(mask: np.ndarray) -> list[tuple[int, int]]:
    """(start, length) of every run of True in ``mask``."""
    out, start = [], None
    for i, m in enumerate(mask):
        if m and start is None:
            start = i
        elif not m and start is not None:
            out.append((start, i - start))
            start = None
    if start is not None:
        out.append((start, len(mask) - start))
    return out
