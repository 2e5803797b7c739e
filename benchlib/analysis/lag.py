"""Is replica lag growing over a run? (statistics spec F)

The lag series (the worst node's heartbeat lag, or transactions behind) after the warm-up is
fitted as L_t = a + b t + AR(1) errors by iterated Cochrane-Orcutt (what statsmodels' GLSAR
iterative_fit does), with a 90% interval on the slope b. SUSTAINED when the whole interval lies
below epsilon, GROWING when it lies above, else INCONCLUSIVE (run longer). Plain OLS would call a
bounded but strongly autocorrelated lag "growing" far too often.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats

from benchlib.analysis.series import batch_means, mann_kendall

WARMUP_MIN_S = 60
TIME_FLOOR_MS_PER_S = 1.0  # epsilon for time lag: 1 ms more lag every second (60 ms a minute)
BACKLOG_SHARE = 0.005  # epsilon for transactions behind: 0.5% of the achieved TPS


@dataclass
class LagGrowth:
    verdict: str  # SUSTAINED | GROWING | INCONCLUSIVE
    slope: float  # per second
    slope_low: float  # 90%
    slope_high: float
    epsilon: float
    rho: float
    n: int
    skipped_s: float
    mk_p: float | None
    start_median: float | None
    end_median: float | None
    notes: list[str] = field(default_factory=list)
    method: str = "OLS with AR(1) errors (iterated Cochrane-Orcutt), 90% interval on the slope"

    def as_dict(self) -> dict:
        return asdict(self)


def cochrane_orcutt(t: np.ndarray, y: np.ndarray, iterations: int = 20) -> tuple[float, float, float, float, int]:
    """Slope, its standard error, rho and intercept of y = a + b t + AR(1); and residual df."""
    x = np.column_stack([np.ones_like(t), t])
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    rho = 0.0
    for _ in range(iterations):
        e = y - x @ beta
        new = float(np.dot(e[1:], e[:-1]) / np.dot(e[:-1], e[:-1])) if np.dot(e[:-1], e[:-1]) > 0 else 0.0
        new = min(max(new, -0.99), 0.99)
        xs = x[1:] - new * x[:-1]
        ys = y[1:] - new * y[:-1]
        beta, *_ = np.linalg.lstsq(xs, ys, rcond=None)
        done = abs(new - rho) < 1e-4
        rho = new
        if done:
            break
    xs = x[1:] - rho * x[:-1]
    ys = y[1:] - rho * y[:-1]
    resid = ys - xs @ beta
    df = len(ys) - 3  # two coefficients and rho
    s2 = float(resid @ resid) / max(df, 1)
    cov = s2 * np.linalg.inv(xs.T @ xs)
    return float(beta[1]), float(np.sqrt(cov[1, 1])), rho, float(beta[0]), df


def lag_growth(lag, t_s=None, *, trim_s: float = 0.0, epsilon: float | None = None, tps: float | None = None,
               unit: str = "ms") -> LagGrowth:
    """Growth test on one lag series (``unit`` "ms" for time lag, "trx" for transactions behind, where
    epsilon defaults to 0.5% of ``tps``)."""
    y = np.asarray(lag, dtype=float)
    t = np.arange(len(y), dtype=float) if t_s is None else np.asarray(t_s, dtype=float)
    ok = np.isfinite(y) & np.isfinite(t)
    y, t = y[ok], t[ok]
    notes = []
    start = t.min() if len(t) else 0.0
    skip = max(WARMUP_MIN_S, trim_s)
    if len(t) and t.max() - start < 2 * skip:
        notes.append(f"run shorter than 2 x {skip:g} s: only the warm-up trim ({trim_s:g} s) is skipped")
        skip = trim_s
    keep = t >= start + skip
    y, t = y[keep], t[keep]
    if epsilon is None:
        if unit == "trx":
            epsilon = BACKLOG_SHARE * (tps or 0.0)
            if not tps:
                notes.append("no TPS given: epsilon 0 for transactions behind")
        else:
            epsilon = TIME_FLOOR_MS_PER_S
    if len(y) < 10:
        return LagGrowth("INCONCLUSIVE", np.nan, np.nan, np.nan, epsilon, np.nan, len(y), skip, None, None, None,
                         notes + ["fewer than 10 lag samples after the warm-up"])
    slope, se, rho, _, df = cochrane_orcutt(t - t[0], y)
    tq = stats.t.ppf(0.95, max(df, 1))
    lo, hi = slope - tq * se, slope + tq * se
    verdict = "SUSTAINED" if hi < epsilon else "GROWING" if lo > epsilon else "INCONCLUSIVE"
    b = batch_means(y, count=20)
    mk = mann_kendall(b).p if len(b) >= 8 else None
    w = max(1, len(y) // 5)
    return LagGrowth(verdict, slope, lo, hi, float(epsilon), rho, len(y), float(skip), mk,
                     float(np.median(y[:w])), float(np.median(y[-w:])), notes)
