"""Changepoints by PELT with the normal mean-and-variance cost (Killick et al. 2012), as in the
statistics spec: penalty 15 ln n, minimum segment 2. Prefix sums make every segment cost O(1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Segment:
    start: int  # index of the first point
    end: int  # one past the last point
    mean: float
    sd: float

    @property
    def length(self) -> int:
        return self.end - self.start


def pelt(x: np.ndarray, penalty: float | None = None, min_size: int = 2) -> list[int]:
    """Changepoint indices (each the start of a new segment) of ``x``."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    if n < 2 * min_size:
        return []
    beta = 15 * np.log(n) if penalty is None else penalty
    s1 = np.concatenate([[0.0], np.cumsum(x)])
    s2 = np.concatenate([[0.0], np.cumsum(x * x)])
    floor = max(float(np.var(x)) * 1e-6, 1e-12)  # a perfectly flat piece must not cost -inf

    f = np.full(n + 1, np.inf)
    f[0] = -beta
    last = np.zeros(n + 1, dtype=int)
    candidates = np.zeros(n + 1, dtype=int)  # a stack of candidate segment starts
    size = 1
    for t in range(min_size, n + 1):
        # candidates are kept in increasing order: the ones not min_size back yet are at the end
        ready_n = size
        while ready_n and t - candidates[ready_n - 1] < min_size:
            ready_n -= 1
        if ready_n:
            ready = candidates[:ready_n]
            m = t - ready
            mean = (s1[t] - s1[ready]) / m
            c = f[ready] + m * np.log(np.maximum((s2[t] - s2[ready]) / m - mean * mean, floor))
            i = int(c.argmin())
            f[t], last[t] = c[i] + beta, ready[i]
            kept = ready[c <= f[t]]  # pruning: these can still start the last segment of a later optimum
            k = len(kept)
            candidates[:k] = kept
            candidates[k:k + size - ready_n] = candidates[ready_n:size]
            size = k + size - ready_n
        if t <= n - min_size:
            candidates[size] = t
            size += 1
    points, t = [], n
    while t > 0:
        t = int(last[t])
        if t > 0:
            points.append(t)
    return sorted(points)


def segments(x: np.ndarray, points: list[int]) -> list[Segment]:
    x = np.asarray(x, dtype=float)
    bounds = [0, *points, len(x)]
    return [Segment(a, b, float(x[a:b].mean()), float(x[a:b].std(ddof=1)) if b - a > 1 else 0.0)
            for a, b in zip(bounds, bounds[1:]) if b > a]
