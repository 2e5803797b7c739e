"""Simulated per-second series with known truth, fixed seeds."""

from __future__ import annotations

import numpy as np


def ar1(n: int, rho: float, sd: float, rng: np.random.Generator) -> np.ndarray:
    """Stationary AR(1) noise with marginal standard deviation ``sd``."""
    e = rng.normal(0, sd * np.sqrt(1 - rho**2), n)
    x = np.empty(n)
    x[0] = rng.normal(0, sd)
    for i in range(1, n):
        x[i] = rho * x[i - 1] + e[i]
    return x


def tps(n=300, mean=1000.0, sd=30.0, rho=0.6, seed=0, shape=None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    base = mean + ar1(n, rho, sd, rng)
    return base if shape is None else base + shape(t)
