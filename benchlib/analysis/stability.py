"""Warm-up, stability class and within-run estimate of one per-second series (statistics spec A, B, C).

``assess(series)`` returns a ``RunAssessment``: the warm-up trim decided by the data (MSER-5 on
batch means, extended to the start of the steady segment when the changepoint class is WARMUP),
the main class (FLAT, WARMUP, SLOWDOWN, NO_STEADY_STATE, OSCILLATING) with orthogonal flags (DRIFT,
HIGH_JITTER, STALLS, NOT_SETTLED, LONG_WARMUP), and the mean after trimming with a standard
error from batch means (per-second samples are autocorrelated: never treated as independent).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from benchlib.analysis.changepoint import Segment, pelt, segments
from benchlib.analysis.series import as_array, batch_means, lag1, mann_kendall, runs_of

FLAT, WARMUP, SLOWDOWN, NO_STEADY_STATE, OSCILLATING = "FLAT", "WARMUP", "SLOWDOWN", "NO_STEADY_STATE", "OSCILLATING"
PRECEDENCE = [NO_STEADY_STATE, SLOWDOWN, OSCILLATING, WARMUP, FLAT]


MIN_LEFT = 5  # batches: NOT_SETTLED looks for the MSER minimum up to nb - 5 (the spec's default: nb - 1)
MIN_BATCH_S = 5  # shortest batch mean: seconds of a run are correlated over a few seconds
MIN_TREND_BATCHES = 8  # a window with fewer 5 s batches (40 s) gets no trend test


@dataclass(frozen=True)
class Warmup:
    trim_s: int
    trim_frac: float
    flags: tuple[str, ...]  # NOT_SETTLED, LONG_WARMUP
    method: str = "MSER-5"


def mser5(y, batch: int = 5) -> Warmup:
    """Warm-up trim by MSER on ``batch``-second batch means (White 1997; Franklin & White 2008)."""
    y = as_array(y)
    b = batch_means(y[: len(y) // batch * batch], batch)
    nb = len(b)
    if nb < 4:
        return Warmup(0, 0.0, ("TOO_SHORT",))
    # the "unrestricted" search keeps at least MIN_LEFT batches: with fewer, the ratio is noise
    mser = np.array([np.sum((b[d:] - b[d:].mean()) ** 2) / (nb - d) ** 2 for d in range(max(1, nb - MIN_LEFT + 1))])
    flags = []
    if int(np.argmin(mser)) > nb / 2:
        flags.append("NOT_SETTLED")
    d = int(np.argmin(mser[: nb // 2 + 1]))  # the trim: at most half the run
    trim = d * batch
    frac = trim / len(y)
    if frac > 0.25:  # never over half (audit B12): a longer warm-up is NO_STEADY_STATE, judged by assess
        flags.append("LONG_WARMUP")
    return Warmup(trim, frac, tuple(flags))


@dataclass(frozen=True)
class Oscillation:
    period_s: float
    amplitude_rel: float  # amplitude / mean
    ratio: float  # periodogram / AR(1) background at the peak
    threshold: float


def oscillation(y, *, alpha: float = 0.01, min_cycles: int = 4, min_amplitude: float = 0.02) -> Oscillation | None:
    """The strongest periodic component standing above an AR(1) background (spec B.4), or None."""
    y = as_array(y)
    n = len(y)
    if n < 4 * min_cycles:
        return None
    t = np.arange(n)
    detrended = y - np.polyval(np.polyfit(t, y, 1), t)
    # zero-padded to 2n: periods between two Fourier bins lost up to 64% of their power (audit B4: detection
    # fell from 100% to 37%); the padded bins are all tested, and counted in the threshold
    spec = np.abs(np.fft.rfft(detrended, 2 * n)) ** 2 * 2 / n**2  # a sinusoid of amplitude A gives A^2/2
    k = np.arange(len(spec))
    test = (k >= 2 * min_cycles) & (k < n)
    if not test.any():
        return None
    f = k[test] / (2 * n)
    rho = min(max(lag1(detrended), 0.0), 0.99)
    shape = (1 - rho**2) / (1 + rho**2 - 2 * rho * np.cos(2 * np.pi * f))
    power = spec[test]
    background = shape * power.mean() / shape.mean()
    ratio = power / background
    m = int(test.sum())
    threshold = -np.log(alpha / m)
    i = int(np.argmax(ratio))
    if ratio[i] <= threshold or not y.mean():
        return None
    # the peak's bin is 1/n wide: refine frequency and amplitude by least-squares sinusoids around it
    best = (0.0, f[i])
    for fr in np.linspace(f[i] - 1 / n, f[i] + 1 / n, 41):
        basis = np.column_stack([np.cos(2 * np.pi * fr * t), np.sin(2 * np.pi * fr * t)])
        coef, *_ = np.linalg.lstsq(basis, detrended, rcond=None)
        best = max(best, (float(np.hypot(*coef)), fr))
    amplitude = best[0] / abs(y.mean())
    if amplitude >= min_amplitude:
        return Oscillation(float(1 / best[1]), float(amplitude), float(ratio[i]), float(threshold))
    return None


def _outliers(y: np.ndarray) -> np.ndarray:
    """Outside rolling median +- 3 (P90 - P10); values under 10% of the median are stalls, not outliers."""
    s = pd.Series(y)
    w = max(20, len(y) // 10)
    med = s.rolling(w, center=True, min_periods=1).median()
    spread = s.rolling(w, center=True, min_periods=1).quantile(0.9) - s.rolling(w, center=True, min_periods=1).quantile(0.1)
    out = ((s - med).abs() > 3 * spread).to_numpy()
    return out & (y >= 0.1 * np.median(y))


def _classify(segs: list[Segment], n: int, higher_is_better: bool) -> tuple[str, int]:
    """Main changepoint class and where the steady state starts (spec B.3)."""
    last = segs[-1]
    delta = 0.01 * abs(last.mean)

    def equivalent(s: Segment) -> bool:
        return abs(s.mean - last.mean) <= max(last.sd, delta)

    tail_start = int(n * 0.75)
    # a change inside the steady tail: a segment starting there that is not equivalent to the last one (spec B.3;
    # audit B8: it compared adjacent segments' SDs)
    if any(b.start > tail_start and not equivalent(b) for b in segs[1:-1]):
        return NO_STEADY_STATE, last.start
    steady = len(segs) - 1
    while steady > 0 and equivalent(segs[steady - 1]):
        steady -= 1
    earlier = [s for s in segs[:steady] if not equivalent(s)]
    if not earlier:
        return FLAT, 0
    better = [s for s in earlier if (s.mean > last.mean) == higher_is_better]
    return (SLOWDOWN if better else WARMUP), segs[steady].start


@dataclass
class RunAssessment:
    """What the statistics spec reports per run (section G)."""

    n_s: int
    trim_s: int
    trim_frac: float
    mean: float
    se: float
    n_eff: float
    batches: int
    cov: float  # per-second, after the trim
    cov_batch10: float  # of 10-second batch means
    main: str
    flags: list[str] = field(default_factory=list)
    oscillation: Oscillation | None = None
    drift_p: float | None = None
    drift_rel: float | None = None  # Theil-Sen slope x duration / mean
    stalls: int = 0
    longest_stall_s: int = 0
    changepoints: list[int] = field(default_factory=list)
    method: str = "MSER-5 on 5 s batch means; PELT (normal mean+var, 15 ln n); SE from batch means"

    @property
    def label(self) -> str:
        parts = [self.main if self.main != OSCILLATING or not self.oscillation else
                 f"OSCILLATING(period={self.oscillation.period_s:.0f}s, amplitude={self.oscillation.amplitude_rel:.0%})"]
        for f in self.flags:
            parts.append(f"STALLS({self.stalls}, longest {self.longest_stall_s}s)" if f == "STALLS" else f)
        return " ".join(parts)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["label"] = self.label
        return d


def within_run(y, trim_s: int = 0) -> tuple[float, float, float, int]:
    """Mean after ``trim_s``, its standard error from batch means (t interval on batches - 1 df),
    n_eff = n (1 - rho) / (1 + rho), and the number of batches (spec C, batch length from the audit)."""
    x = as_array(y)[trim_s:]
    n = len(x)
    if n < 2:
        return (float(x.mean()) if n else np.nan), np.nan, float(n), 0
    # batches of at least 5 s and 5 integrated autocorrelation times tau = (1 + rho) / (1 - rho), at most a
    # quarter of the run (audit B3: 20 batches of 1-4 s on short runs, or of n/20 s at rho >= 0.9, were too
    # short and understated the SE); simulated coverage of the t interval 93-95% at rho 0.5-0.8, 40-300 s
    rho = max(lag1(x), 0.0)  # negative lag-1 correlation would give n_eff > n: kept at n (conservative)
    tau = (1 + rho) / (1 - rho) if rho < 0.999 else float(n)
    size = max(1, min(max(MIN_BATCH_S, n // 20, math.ceil(5 * tau)), n // 4))
    b = batch_means(x, size=size)
    se = float(b.std(ddof=1) / np.sqrt(len(b))) if len(b) >= 2 else np.nan
    n_eff = n * (1 - rho) / (1 + rho)
    return float(x.mean()), se, float(n_eff), len(b)


def assess(series, *, higher_is_better: bool = True) -> RunAssessment:
    """Warm-up, class, flags and estimate of one per-second series (throughput: higher is better;
    latency and lag: pass ``higher_is_better=False``)."""
    y = as_array(series)
    n = len(y)
    stalled = (y < 0.1 * np.median(y)) if higher_is_better and n else np.zeros(n, dtype=bool)
    # stalls are reported as STALLS, not fitted: warm-up and changepoints see the other seconds
    live = np.flatnonzero(~stalled)
    ys = y[live]
    warm = mser5(ys)
    flags = list(warm.flags)
    keep = ~_outliers(ys) if len(ys) >= 10 else np.ones(len(ys), dtype=bool)
    idx = np.flatnonzero(keep)
    points = [int(live[idx[p]]) for p in pelt(ys[keep])] if len(ys) >= 10 else []
    segs = segments(ys, [int(np.searchsorted(live, p)) for p in points]) if len(ys) else []
    main, steady_start = _classify(segs, len(ys), higher_is_better) if segs else (FLAT, 0)
    trim = max(warm.trim_s, steady_start) if main == WARMUP else warm.trim_s
    trim = int(live[trim]) if trim < len(live) else n  # back to seconds of the whole run
    if main == WARMUP:
        if trim / max(n, 1) > 0.5:
            main = NO_STEADY_STATE
        elif trim / max(n, 1) > 0.25 and "LONG_WARMUP" not in flags:
            flags.append("LONG_WARMUP")
    steady = y[trim:]
    osc = oscillation(steady)
    if osc and PRECEDENCE.index(OSCILLATING) < PRECEDENCE.index(main):
        main = OSCILLATING
    mean, se, n_eff, k = within_run(y, trim)
    drift_p = drift_rel = None
    # DRIFT on the MSER-trimmed window (audit B1: after the WARMUP-extended trim a rising trend was partly cut
    # away), on batch means of at least 5 s (audit B2: 1-4 s batches of short runs gave 20% false DRIFT)
    window = y[int(live[warm.trim_s]) if warm.trim_s < len(live) else n:]
    k = min(20, len(window) // MIN_BATCH_S)
    if k >= MIN_TREND_BATCHES and mean:
        size = len(window) // k
        b = batch_means(window, size=size)
        trend = mann_kendall(b, np.arange(len(b)) * size)
        drift_p, drift_rel = trend.p, trend.slope * len(window) / abs(mean)
        if trend.p < 0.05 and abs(drift_rel) >= 0.02:
            flags.append("DRIFT")
    calm = steady[~stalled[trim:]]  # jitter is measured between stalls
    cov = float(calm.std(ddof=1) / abs(calm.mean())) if len(calm) > 1 and calm.mean() else np.nan
    b10 = batch_means(steady, 10)
    cov10 = float(b10.std(ddof=1) / abs(b10.mean())) if len(b10) > 1 and b10.mean() else np.nan
    if cov >= 0.10:
        flags.append("HIGH_JITTER")
    stall_runs = runs_of(stalled)
    if stall_runs:
        flags.append("STALLS")
    return RunAssessment(n, trim, trim / n if n else 0.0, mean, se, n_eff, k, cov, cov10, main, flags, osc, drift_p,
                         drift_rel, len(stall_runs), max((r for _, r in stall_runs), default=0), points)
