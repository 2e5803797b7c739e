"""Ratios on the campaign's blocks: a two-way (round + configuration) model on log run means.

Every repetition round of a campaign runs each configuration once, in a shuffled order: a randomised complete
block design. On this kind of machine whole rounds run faster or slower (another job on the shared cores, the
page cache, thermal state), and run-to-run noise is similar across configurations of one comparison family. So
the log of each run mean is modelled as

    log m = mu + config effect + round effect + e,   e ~ N(0, sigma^2)

fitted by least squares over every configuration of the family (the baseline included). The ratio of two
configurations is exp(difference of their effects) with a t interval on the pooled residual df; it is a ratio of
geometric means, equal to the ratio of means to O(CoV^2), and its interval can never reach zero or below.
Unequal rounds (a failed run) are fine: the design is then unbalanced and the contrast's standard error says so.

Pooling assumes the configurations have similar noise. Levene's test (median-centred) on the residuals checks
it; when it fails, a comparison uses only its own two configurations' runs (the round effect still removed),
which is valid whatever the other configurations' noise.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats

from benchlib.analysis.compare import MARGIN, verdict_of

__all__ = ["BlockFit", "BlockRatio", "block_ratio", "fit", "min_detectable_effect", "rounds_needed"]

LEVENE_ALPHA = 0.05


@dataclass
class BlockFit:
    """A fitted two-way model: configuration effects on the log scale and their covariance."""

    configs: list[str]
    rounds: list
    effects: dict[str, float]  # log scale, relative to the first configuration
    cov: np.ndarray  # covariance of the configuration effects (rows/cols in ``configs`` order)
    sigma: float  # residual SD on the log scale (about the run-to-run CoV once rounds are removed)
    df: int
    residuals: dict[str, np.ndarray]
    runs: dict[str, int]
    round_p: float | None  # F test of the round effect (None: no df for it)

    def contrast(self, a: str, b: str) -> tuple[float, float]:
        """log(a / b) and its standard error."""
        i, j = self.configs.index(a), self.configs.index(b)
        var = self.cov[i, i] + self.cov[j, j] - 2 * self.cov[i, j]
        return self.effects[a] - self.effects[b], math.sqrt(max(var, 0.0))

    def levene_p(self) -> float | None:
        """Levene's test (median-centred) of equal residual spread across configurations; None when it cannot
        be judged: a configuration with under 3 runs (2 rounds leave each one +-d, with no spread of its own)."""
        groups = list(self.residuals.values())
        if len(groups) < 2 or min(len(r) for r in groups) < 3:
            return None
        with np.errstate(divide="ignore", invalid="ignore"):  # two runs a configuration: deviations tie
            p = stats.levene(*groups, center="median").pvalue
        return float(p) if np.isfinite(p) else None


def fit(config, rounds, values) -> BlockFit | None:
    """Least squares of log(values) on configuration and round dummies. None when there is no residual df
    (one run per configuration, or every run in its own round)."""
    config = np.asarray(config, dtype=object)
    rounds = np.asarray(rounds, dtype=object)
    y = np.log(np.asarray(values, dtype=float))
    keep = np.isfinite(y)
    config, rounds, y = config[keep], rounds[keep], y[keep]
    configs = list(dict.fromkeys(config))
    levels = list(dict.fromkeys(rounds))
    n = len(y)
    if len(configs) < 2 or n == 0:
        return None
    xc = np.column_stack([config == c for c in configs[1:]]).astype(float)
    xr = np.column_stack([rounds == r for r in levels[1:]]).astype(float) if len(levels) > 1 else np.empty((n, 0))
    x = np.column_stack([np.ones(n), xc, xr])
    rank = np.linalg.matrix_rank(x)
    df = n - rank
    if df < 1:
        return None
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    resid = y - x @ beta
    rss = float(resid @ resid)
    sigma2 = rss / df
    xtx_inv = np.linalg.pinv(x.T @ x)
    k = len(configs)
    cov = np.zeros((k, k))
    cov[1:, 1:] = sigma2 * xtx_inv[1:k, 1:k]
    effects = {configs[0]: 0.0, **{c: float(beta[i + 1]) for i, c in enumerate(configs[1:])}}
    round_p = None
    if xr.shape[1]:
        x0 = np.column_stack([np.ones(n), xc])
        b0, *_ = np.linalg.lstsq(x0, y, rcond=None)
        rss0 = float(((y - x0 @ b0) ** 2).sum())
        dfr = rank - np.linalg.matrix_rank(x0)
        if dfr > 0 and rss > 0:
            round_p = float(stats.f.sf(((rss0 - rss) / dfr) / sigma2, dfr, df))
    return BlockFit(configs, levels, effects, cov, math.sqrt(sigma2), int(df),
                    {c: resid[config == c] for c in configs}, {c: int((config == c).sum()) for c in configs},
                    round_p)


def min_detectable_effect(sigma: float, rounds: int, df: int, power: float = 0.8) -> float:
    """The smallest true ratio (as a fraction above 1) that a 95% interval of a pairwise contrast excludes 1
    with ``power``, at ``rounds`` runs a side: exp((t_0.975 + t_power) * sigma * sqrt(2 / rounds)) - 1."""
    if rounds < 1 or df < 1 or not np.isfinite(sigma):
        return math.inf
    return math.expm1((stats.t.ppf(0.975, df) + stats.t.ppf(power, df)) * sigma * math.sqrt(2 / rounds))


def rounds_needed(log_ratio: float, sigma: float, configs: int, margin: float = MARGIN, cap: int = 100) -> int | None:
    """Rounds (runs a side) after which an interval of the current width per run would settle the verdict, if
    the ratio stayed where it is: the 95% interval clears the margin (FASTER/SLOWER) or the 90% interval fits
    inside it (EQUIVALENT). None when the ratio sits on the margin (no number of rounds settles it)."""
    edge = math.log1p(margin)
    gap, level = (abs(log_ratio) - edge, 0.975) if abs(log_ratio) > edge else (edge - abs(log_ratio), 0.95)
    if gap <= 1e-9 or not np.isfinite(sigma):
        return None
    for n in range(2, cap + 1):
        df = max(1, (n - 1) * max(1, configs - 1))
        if stats.t.ppf(level, df) * sigma * math.sqrt(2 / n) < gap:
            return n
    return cap


@dataclass
class BlockRatio:
    ratio: float
    ci_low: float
    ci_high: float
    ci90_low: float
    ci90_high: float
    df: int
    sigma: float  # residual SD of log run means (pooled)
    n_a: int
    n_b: int
    verdict: str
    margin: float
    higher_is_better: bool
    pooled: str  # which runs the residual variance comes from
    levene_p: float | None
    round_p: float | None
    mde: float  # minimum detectable effect at the smaller side's runs (80% power)
    rounds_needed: int | None
    p: float | None = None  # two-sided t test of log(a / b) = 0
    q: float | None = None  # Benjamini-Hochberg, set by the caller across comparisons
    notes: list[str] = field(default_factory=list)
    method: str = "two-way (round + configuration) model on log run means, t interval on the pooled residual df"

    def as_dict(self) -> dict:
        return asdict(self)


def block_ratio(config, rounds, values, a: str, b: str, *, higher_is_better: bool = True,
                margin: float = MARGIN) -> BlockRatio | None:
    """Configuration ``a`` against baseline ``b`` from the runs of a whole comparison family (every
    configuration that shares the baseline, the baseline included). None when the model has no residual df."""
    config = np.asarray(config, dtype=object)
    rounds = np.asarray(rounds, dtype=object)
    values = np.asarray(values, dtype=float)
    whole = fit(config, rounds, values)
    if whole is None or a not in whole.effects or b not in whole.effects:
        return None
    notes: list[str] = []
    used, lev = whole, whole.levene_p()
    pooled = f"{len(whole.configs)} configurations"
    if len(whole.configs) > 2 and (lev is None or lev < LEVENE_ALPHA):
        pair = np.isin(config, [a, b])
        own = fit(config[pair], rounds[pair], values[pair])
        if own is not None:
            used, pooled = own, "this pair only"
            notes.append("the variance is pooled over this pair only: " + (
                f"run-to-run noise differs between configurations (Levene p = {lev:.3f})" if lev is not None
                else "with fewer than 3 runs a configuration, equal noise across configurations cannot be checked"))
    est, se = used.contrast(a, b)
    t95, t90 = stats.t.ppf(0.975, used.df), stats.t.ppf(0.95, used.df)
    lo, hi = math.exp(est - t95 * se), math.exp(est + t95 * se)
    lo90, hi90 = math.exp(est - t90 * se), math.exp(est + t90 * se)
    verdict = verdict_of(lo, hi, lo90, hi90, margin, higher_is_better)
    n_a, n_b = used.runs[a], used.runs[b]
    if n_a != n_b or len(set(rounds[np.isin(config, [a, b])])) != max(n_a, n_b):
        notes.append(f"unequal runs ({n_a} vs {n_b}): the unbalanced blocks are fitted as they are")
    need = None
    if verdict == "INCONCLUSIVE":
        need = rounds_needed(est, used.sigma, len(used.configs), margin)
    p = float(2 * stats.t.sf(abs(est) / se, used.df)) if se > 0 else None
    return BlockRatio(math.exp(est), lo, hi, lo90, hi90, used.df, used.sigma, n_a, n_b, verdict, margin,
                      higher_is_better, pooled, lev, whole.round_p,
                      min_detectable_effect(used.sigma, min(n_a, n_b), used.df), need, p, notes=notes)
