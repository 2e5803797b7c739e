"""Across runs: agreement of repetitions (spec D) and ratios against a baseline (spec E).

The unit of inference is the run: its mean (after the warm-up trim) and standard error from
batch means. Seconds are never pooled across runs.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats

from benchlib.manifest import MARGIN  # delta: differences smaller than this are "equivalent"

TARGET = 0.02  # relative half-width of a configuration's 95% interval
CAP = 10  # most runs the adaptive mode adds up to


def runs_needed(cov: float, target: float = TARGET, start: int = 2, cap: int = 1000) -> int:
    """The smallest r with t(0.975, r-1) * CoV / sqrt(r) <= target."""
    if not np.isfinite(cov):
        return cap
    for r in range(max(2, start), cap + 1):
        if stats.t.ppf(0.975, r - 1) * cov / math.sqrt(r) <= target:
            return r
    return cap


@dataclass
class Agreement:
    runs: int
    mean: float
    ci_low: float
    ci_high: float
    half_width_rel: float  # h
    cov: float
    q: float | None
    q_p: float | None
    i2: float | None
    kruskal_p: float | None
    outlier_runs: list[int]
    classes_consistent: bool
    verdict: str  # AGREE | ADD_RUNS | UNRESOLVED
    add: int = 0
    reasons: list[str] = field(default_factory=list)
    runs_needed: int = 0
    notes: list[str] = field(default_factory=list)  # information, not a reason to add runs
    only_wide: bool = False  # the one reason: an interval wider than the target (the runs themselves agree)

    @property
    def label(self) -> str:
        if self.verdict == "ADD_RUNS":
            return f"ADD_RUNS({self.add}, {'; '.join(self.reasons)})"
        if self.verdict == "UNRESOLVED":
            return f"UNRESOLVED ({'; '.join(self.reasons)})"
        return "AGREE"

    def as_dict(self) -> dict:
        return {**asdict(self), "label": self.label}


def grubbs(values, alpha: float = 0.05) -> list[int]:
    """The run (index) that Grubbs' two-sided test calls an outlier at ``alpha``, if any: a false alarm rate of
    ``alpha`` under normality at any run count >= 3 (the modified z-score > 3.5 flagged 12-29% of clean sets of
    3-10 runs)."""
    m = np.asarray(values, dtype=float)
    n = len(m)
    if n < 3:
        return []
    sd = m.std(ddof=1)
    if not sd > 0:
        return []
    i = int(np.argmax(np.abs(m - m.mean())))
    g = abs(m[i] - m.mean()) / sd
    t = stats.t.ppf(1 - alpha / (2 * n), n - 2)
    return [i] if g > (n - 1) / math.sqrt(n) * math.sqrt(t**2 / (n - 2 + t**2)) else []


def agreement(means, ses=None, classes=None, batches=None, *, target: float = TARGET, cap: int = CAP) -> Agreement:
    """Do the runs of one configuration agree? ``means``/``ses`` per run, optional stability classes and
    per-run batch means (for Kruskal-Wallis)."""
    m = np.asarray(means, dtype=float)
    r = len(m)
    mean = float(m.mean()) if r else np.nan
    sd = float(m.std(ddof=1)) if r > 1 else np.nan
    cov = sd / abs(mean) if r > 1 and mean else np.nan
    if r > 1 and np.all(m > 0):  # a positive quantity: its interval on the log scale never reaches zero
        half = stats.t.ppf(0.975, r - 1) * float(np.log(m).std(ddof=1)) / math.sqrt(r)
        lo, hi = mean * math.exp(-half), mean * math.exp(half)
        h = (hi - lo) / 2 / mean
    elif r > 1:
        half = stats.t.ppf(0.975, r - 1) * sd / math.sqrt(r)
        h = half / abs(mean) if mean else np.inf
        lo, hi = mean - half, mean + half
    else:
        h, lo, hi = np.inf, np.nan, np.nan
    q = q_p = i2 = None
    if ses is not None and r > 1:
        se = np.asarray(ses, dtype=float)
        if np.all(np.isfinite(se)) and np.all(se > 0):
            w = 1 / se**2
            pooled = np.sum(w * m) / np.sum(w)
            q = float(np.sum(w * (m - pooled) ** 2))
            q_p = float(stats.chi2.sf(q, r - 1))
            i2 = max(0.0, (q - (r - 1)) / q) if q > 0 else 0.0
    outliers = grubbs(m)
    kw = None
    if batches is not None and len(batches) > 1 and all(len(b) >= 2 for b in batches):
        kw = float(stats.kruskal(*batches).pvalue)
    consistent = True
    if classes:
        kinds = set(classes)
        consistent = len(kinds) == 1 or kinds <= {"FLAT", "WARMUP"}
    reasons = []
    if r < 3:
        reasons.append("fewer than 3 runs")
    if h > target and np.isfinite(h):  # with one run there is no interval: "fewer than 3 runs" says it
        reasons.append(f"95% interval ±{h:.1%} wider than ±{target:.0%}")
    if outliers:
        reasons.append(f"outlier run {', '.join(str(i + 1) for i in outliers)}")
    if not consistent:
        reasons.append(f"runs disagree in stability class ({', '.join(sorted(set(classes)))})")
    notes = []
    if q_p is not None and q_p < 0.05 and (i2 or 0) >= 0.5:  # information: the normal state of a shared machine
        notes.append(f"runs differ beyond their own noise (Q p={q_p:.3f}, I2={i2:.0%}): more runs narrow the "
                     "interval, longer runs would not")
    need = runs_needed(cov, target) if r > 1 else 3
    if not reasons:
        verdict, add = "AGREE", 0
    elif r >= cap:
        verdict, add = "UNRESOLVED", 0
    else:
        verdict, add = "ADD_RUNS", max(1, min(cap, max(need, 3)) - r)
    only_wide = bool(h > target and np.isfinite(h)) and len(reasons) == 1
    return Agreement(r, mean, lo, hi, h, cov, q, q_p, i2, kw, outliers, consistent, verdict, add, reasons, need,
                     notes, only_wide)


@dataclass
class Ratio:
    ratio: float
    ci_low: float  # 95% Fieller interval (inf / -inf: unbounded)
    ci_high: float
    ci90_low: float
    ci90_high: float
    p: float | None  # Welch's t on the logs of run means
    n_a: int
    n_b: int
    verdict: str  # FASTER | SLOWER | EQUIVALENT | SIGNIFICANT_BUT_SMALL | INCONCLUSIVE
    runs_needed_per_side: int | None
    margin: float
    higher_is_better: bool
    q: float | None = None  # Benjamini-Hochberg, set by compare_all
    notes: list[str] = field(default_factory=list)
    method: str = "ratio of run means, Fieller interval (Welch df), Welch t on logs"

    def as_dict(self) -> dict:
        return asdict(self)


def fieller(a, b, level: float = 0.95) -> tuple[float, float, float]:
    """R = mean(a) / mean(b) with its Fieller interval for independent samples of run means."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    ma, mb = a.mean(), b.mean()
    va = a.var(ddof=1) / len(a) if len(a) > 1 else np.nan
    vb = b.var(ddof=1) / len(b) if len(b) > 1 else np.nan
    r = ma / mb
    if not (np.isfinite(va) and np.isfinite(vb)):
        return float(r), -np.inf, np.inf
    num = (va + r**2 * vb) ** 2
    den = (va**2 / (len(a) - 1) if va else 0.0) + (r**4 * vb**2 / (len(b) - 1) if vb else 0.0)
    df = num / den if den > 0 else 1e9
    t = stats.t.ppf(1 - (1 - level) / 2, df)
    g = t**2 * vb / mb**2
    if g >= 1:
        return float(r), -np.inf, np.inf
    half = (t / abs(mb)) * math.sqrt(va * (1 - g) + r**2 * vb)
    return float(r), float((r - half) / (1 - g)), float((r + half) / (1 - g))


def verdict_of(lo: float, hi: float, lo90: float, hi90: float, margin: float, higher_is_better: bool) -> str:
    """Spec E's verdict from a ratio's 95% and 90% intervals: beyond the margin, inside it, or neither."""
    up, down = ("FASTER", "SLOWER") if higher_is_better else ("SLOWER", "FASTER")
    if lo > 1 + margin:
        return up
    if hi < 1 - margin:
        return down
    if lo90 >= 1 - margin and hi90 <= 1 + margin:
        return "EQUIVALENT"
    if lo > 1 or hi < 1:
        return "SIGNIFICANT_BUT_SMALL"
    return "INCONCLUSIVE"


def ratio(a, b, *, higher_is_better: bool = True, margin: float = MARGIN) -> Ratio:
    """Configuration ``a`` against baseline ``b`` (run means). For latency pass ``higher_is_better=False``:
    the ratio stays a / b, and FASTER means a's latency is lower."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    r, lo, hi = fieller(a, b, 0.95)
    _, lo90, hi90 = fieller(a, b, 0.90)
    p = None
    notes = []
    if len(a) > 1 and len(b) > 1 and np.all(a > 0) and np.all(b > 0):
        with warnings.catch_warnings():  # runs that agree to the last digits (a WAN's commit latency): scipy warns
            warnings.simplefilter("ignore", RuntimeWarning)  # of precision loss; the p-value stays usable
            p = float(stats.ttest_ind(np.log(a), np.log(b), equal_var=False).pvalue)
    if min(len(a), len(b)) <= 3:
        notes.append("with 3 or fewer runs per side a rank test cannot reach p < 0.05; the interval is what counts")
    verdict = verdict_of(lo, hi, lo90, hi90, margin, higher_is_better)
    need = None
    if verdict == "INCONCLUSIVE":
        covs = [x.std(ddof=1) / x.mean() for x in (a, b) if len(x) > 1 and x.mean()]
        cov = max(covs) if covs else np.nan
        need = int(math.ceil(15.7 * cov**2 / margin**2)) if np.isfinite(cov) else None
    return Ratio(r, lo, hi, lo90, hi90, p, len(a), len(b), verdict, need, margin, higher_is_better, notes=notes)


def adjust(ratios: list[Ratio]) -> list[Ratio]:
    """Benjamini-Hochberg q-values across many comparisons against one baseline (in place)."""
    idx = [i for i, r in enumerate(ratios) if r.p is not None and np.isfinite(r.p)]
    if idx:
        q = stats.false_discovery_control([ratios[i].p for i in idx])
        for i, v in zip(idx, q):
            ratios[i].q = float(v)
    return ratios
