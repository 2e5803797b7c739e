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

With measured interference (``benchlib.analysis.interference``: the share of the host's CPU lost to the hypervisor
and to other processes during each run), the model can take it as a covariate (regression adjustment, CUPED's
idea): ``log m = mu + config + round + beta * lost_cpu + e``. The ratio is then the configurations' difference at
equal interference. It is used only when it is safe and useful:

- only for covariates no configuration can move (``interference.COVARIATES``); and not when the data say the
  configuration did move it (an F test of the configuration effect on the covariate, rounds removed, p < 0.01:
  ``REFUSE_P``). A weaker sign for the two configurations of a comparison (p < 0.05) is said in its notes;
- only when the covariate varied (by more than 3% of the CPU, ``MIN_SPREAD``: less moves a run by less than its
  noise), its slope has the sign CPU lost can have (a run that loses CPU is never faster for it, its latency never
  lower), and the adjusted model is the more precise one for the whole family (the mean 95% half-width of the
  configurations' contrasts with the baseline is lower with it than without: one df spent, and a covariate that
  fell unevenly on the configurations widens the contrasts it is collinear with).

Simulated with fixed seeds (tests/analysis/test_blocks.py): the 95% interval covers 94-95% with and without a real
effect of the covariate, and a covariate that the configuration drives is refused.

Pooling assumes the configurations have similar noise. Levene's test (median-centred) on the residuals checks
it; when it fails, a comparison uses only its own two configurations' runs (the round effect still removed),
which is valid whatever the other configurations' noise.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from typing import Any

import numpy as np
from scipy import special

from benchlib.analysis.compare import MARGIN, verdict_of

__all__ = ["BlockFit", "BlockRatio", "block_ratio", "fit", "min_detectable_effect", "rounds_needed"]


# scipy.stats' distributions through their special functions: the same values without the per-call argument checks
# (a campaign's analysis, and each simulation of the tests, calls them thousands of times)
def _t_ppf(q: float, df: float) -> float:
    return float(special.stdtrit(df, q))


def _t_sf(x: float, df: float) -> float:
    return float(special.stdtr(df, -x))


def _f_sf(x: float, dfn: float, dfd: float) -> float:
    return float(special.fdtrc(dfn, dfd, x))


LEVENE_ALPHA = 0.05
REFUSE_P = 0.01  # the configuration effect on a covariate below this p: it is not adjusted for
FLAG_P = 0.05  # ... below this for the two configurations compared: said in the comparison's notes
MIN_SPREAD = 0.03  # a covariate must vary by this much (max - min) over the runs to be adjusted for


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
    slopes: dict[str, tuple[float, float]] = field(default_factory=dict)  # covariate -> (slope, its SE), log scale

    def half_width(self, baseline: str) -> float:
        """The family's precision: the mean 95% half-width (log scale) of every configuration's contrast with
        ``baseline`` (a covariate that is unbalanced across configurations widens these, beside saving noise)."""
        t = _t_ppf(0.975, self.df)
        others = [c for c in self.configs if c != baseline]
        return float(np.mean([t * self.contrast(c, baseline)[1] for c in others])) if others else math.inf

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
        return brown_forsythe_p(groups)


def brown_forsythe_p(groups: list[np.ndarray]) -> float | None:
    """Levene's test centred on the median (Brown and Forsythe): the one-way ANOVA F of each value's absolute
    deviation from its group's median; ``scipy.stats.levene(*groups, center="median")`` without its per-call
    overhead (a campaign's analysis, and each simulation, calls it for every comparison). None when undefined."""
    z = [np.abs(np.asarray(g, dtype=float) - np.median(g)) for g in groups]
    n = np.array([len(g) for g in z], dtype=float)
    k, total = len(z), n.sum()
    means = np.array([g.mean() for g in z])
    grand = float(np.dot(n, means) / total)
    within = float(sum(((g - m) ** 2).sum() for g, m in zip(z, means)))
    between = float(np.dot(n, (means - grand) ** 2))
    if within <= 0 or k < 2 or total <= k:
        return None  # deviations tie (two runs a configuration): no spread to compare
    w = (total - k) / (k - 1) * between / within
    return float(_f_sf(w, k - 1, total - k))


def fit(config, rounds, values, covariates: dict[str, np.ndarray] | None = None) -> BlockFit | None:
    """Least squares of log(values) on configuration and round dummies (and ``covariates``, each a column of the
    design). None when there is no residual df (one run per configuration, or every run in its own round)."""
    config = np.asarray(config, dtype=object)
    rounds = np.asarray(rounds, dtype=object)
    y = np.log(np.asarray(values, dtype=float))
    covariates = {k: np.asarray(v, dtype=float) for k, v in (covariates or {}).items()}
    keep = np.isfinite(y)
    for v in covariates.values():
        keep &= np.isfinite(v)
    config, rounds, y = config[keep], rounds[keep], y[keep]
    covariates = {k: v[keep] for k, v in covariates.items()}
    configs = list(dict.fromkeys(config))
    levels = list(dict.fromkeys(rounds))
    n = len(y)
    if len(configs) < 2 or n == 0:
        return None
    xc = np.column_stack([config == c for c in configs[1:]]).astype(float)
    xr = np.column_stack([rounds == r for r in levels[1:]]).astype(float) if len(levels) > 1 else np.empty((n, 0))
    xz = np.column_stack(list(covariates.values())) if covariates else np.empty((n, 0))
    x = np.column_stack([np.ones(n), xc, xr, xz])
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
    first_z = x.shape[1] - xz.shape[1]
    slopes = {k: (float(beta[first_z + i]), float(math.sqrt(max(sigma2 * xtx_inv[first_z + i, first_z + i], 0.0))))
              for i, k in enumerate(covariates)}
    round_p = None
    if xr.shape[1]:
        x0 = np.column_stack([np.ones(n), xc, xz])
        b0, *_ = np.linalg.lstsq(x0, y, rcond=None)
        rss0 = float(((y - x0 @ b0) ** 2).sum())
        dfr = rank - np.linalg.matrix_rank(x0)
        if dfr > 0 and rss > 0:
            round_p = float(_f_sf(((rss0 - rss) / dfr) / sigma2, dfr, df))
    return BlockFit(configs, levels, effects, cov, math.sqrt(sigma2), int(df),
                    {c: resid[config == c] for c in configs}, {c: int((config == c).sum()) for c in configs},
                    round_p, slopes)


def moved_by_config(config, rounds, z, pair: tuple[str, str] | None = None) -> float | None:
    """p of the configuration effect on covariate ``z`` with the round effect removed (F test; with ``pair``, the t
    test of those two configurations' difference): small when the configuration moves it, which makes it unfit to
    adjust for. None when it cannot be judged (no df, or ``z`` constant)."""
    config = np.asarray(config, dtype=object)
    z = np.asarray(z, dtype=float)
    if not np.isfinite(z).all() or np.ptp(z) == 0:
        return None
    whole = fit(config, rounds, np.exp(z))  # fit() takes logs: exp() makes it a fit of z itself
    if whole is None:
        return None
    if pair is not None:
        est, se = whole.contrast(*pair)
        return float(2 * _t_sf(abs(est) / se, whole.df)) if se > 0 else None
    rounds = np.asarray(rounds, dtype=object)
    levels = list(dict.fromkeys(rounds))
    n = len(z)
    xr = np.column_stack([np.ones(n)] + [rounds == r for r in levels[1:]]).astype(float)
    b, *_ = np.linalg.lstsq(xr, z, rcond=None)
    rss0 = float(((z - xr @ b) ** 2).sum())
    rss1 = whole.sigma ** 2 * whole.df
    dfc = len(whole.configs) - 1
    if dfc < 1 or rss1 <= 0:
        return None
    return float(_f_sf(((rss0 - rss1) / dfc) / (rss1 / whole.df), dfc, whole.df))


def min_detectable_effect(sigma: float, rounds: int, df: int, power: float = 0.8) -> float:
    """The smallest true ratio (as a fraction above 1) that a 95% interval of a pairwise contrast excludes 1
    with ``power``, at ``rounds`` runs a side: exp((t_0.975 + t_power) * sigma * sqrt(2 / rounds)) - 1."""
    if rounds < 1 or df < 1 or not np.isfinite(sigma):
        return math.inf
    return math.expm1((_t_ppf(0.975, df) + _t_ppf(power, df)) * sigma * math.sqrt(2 / rounds))


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
        if _t_ppf(level, df) * sigma * math.sqrt(2 / n) < gap:
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
    adjusted_for: str = ""  # the covariate the ratio is adjusted for ('' when none)
    unadjusted: float | None = None  # the ratio without the adjustment (when adjusted)
    unadjusted_low: float | None = None
    unadjusted_high: float | None = None
    slope: float | None = None  # the covariate's slope on the log scale (per unit: log ratio per share of the CPU)
    covariate_p: float | None = None  # p of the configuration effect on the covariate (family)

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def half_width_rel(self) -> float:
        """The 95% interval's half-width relative to the ratio (the larger side, on the ratio's scale)."""
        return max(self.ci_high / self.ratio - 1, 1 - self.ci_low / self.ratio)


def _adjustment(config, rounds, values, covariates: dict[str, np.ndarray] | None, baseline: str,
                higher_is_better: bool = True
                ) -> tuple[BlockFit | None, BlockFit | None, dict[str, np.ndarray], str, float | None]:
    """(fit without, fit with the usable covariates or None, those covariates, why not adjusted, the covariate's
    configuration p) over the family. CPU lost can only lower throughput and raise latency: a slope of the other
    sign is noise, not an effect to adjust for."""
    whole = fit(config, rounds, values)
    if whole is None or not covariates:
        return whole, None, {}, "", None
    usable, why, p_of = {}, [], None
    for name, z in covariates.items():
        z = np.asarray(z, dtype=float)
        if not np.isfinite(z).all():
            why.append(f"{name} was not measured on every run")
            continue
        if np.ptp(z) < MIN_SPREAD:
            continue  # nothing to adjust for: no note
        p = moved_by_config(config, rounds, z)
        p_of = p
        if p is not None and p < REFUSE_P:
            why.append(f"not adjusted for {name}: it differed by configuration (p = {p:.3f}), so the configuration "
                       "may drive it and adjusting would absorb part of the effect")
            continue
        usable[name] = z
    if not usable:
        return whole, None, {}, "; ".join(why), p_of
    adjusted = fit(config, rounds, values, usable)
    wrong_way = any((b >= 0) if higher_is_better else (b <= 0) for b, _ in (adjusted.slopes.values() if adjusted
                                                                             else []))
    if adjusted is None or baseline not in whole.effects or wrong_way \
            or adjusted.half_width(baseline) >= whole.half_width(baseline):
        return whole, None, {}, "; ".join(why), p_of  # not more precise, or a slope no CPU loss can have
    return whole, adjusted, usable, "; ".join(why), p_of


def block_ratio(config, rounds, values, a: str, b: str, *, higher_is_better: bool = True,
                margin: float = MARGIN, covariates: dict[str, np.ndarray] | None = None) -> BlockRatio | None:
    """Configuration ``a`` against baseline ``b`` from the runs of a whole comparison family (every
    configuration that shares the baseline, the baseline included), adjusted for ``covariates`` where that is safe
    and narrows the family's intervals (module docstring). None when the model has no residual df."""
    config = np.asarray(config, dtype=object)
    rounds = np.asarray(rounds, dtype=object)
    values = np.asarray(values, dtype=float)
    covariates = {k: np.asarray(v, dtype=float) for k, v in (covariates or {}).items()}
    plain, adjusted, usable, why, cov_p = _adjustment(config, rounds, values, covariates, b, higher_is_better)
    if plain is None or a not in plain.effects or b not in plain.effects:
        return None
    whole = adjusted or plain
    notes: list[str] = [why] if why else []
    used, lev = whole, whole.levene_p()
    unadjusted_fit = plain
    pooled = f"{len(whole.configs)} configurations"
    if len(whole.configs) > 2 and (lev is None or lev < LEVENE_ALPHA):
        pair = np.isin(config, [a, b])
        own = fit(config[pair], rounds[pair], values[pair], {k: v[pair] for k, v in usable.items()})
        own_plain = fit(config[pair], rounds[pair], values[pair])
        if own is not None and (not usable or own_plain is None or own.half_width(b) < own_plain.half_width(b)):
            used, pooled, unadjusted_fit = own, "this pair only", own_plain or plain
        elif own_plain is not None:
            used, pooled, unadjusted_fit, usable = own_plain, "this pair only", own_plain, {}
        if pooled == "this pair only":
            notes.append("the variance is pooled over this pair only: " + (
                f"run-to-run noise differs between configurations (Levene p = {lev:.3f})" if lev is not None
                else "with fewer than 3 runs a configuration, equal noise across configurations cannot be checked"))
    est, se = used.contrast(a, b)
    t95, t90 = _t_ppf(0.975, used.df), _t_ppf(0.95, used.df)
    lo, hi = math.exp(est - t95 * se), math.exp(est + t95 * se)
    lo90, hi90 = math.exp(est - t90 * se), math.exp(est + t90 * se)
    verdict = verdict_of(lo, hi, lo90, hi90, margin, higher_is_better)
    n_a, n_b = used.runs[a], used.runs[b]
    if n_a != n_b or len(set(rounds[np.isin(config, [a, b])])) != max(n_a, n_b):
        notes.append(f"unequal runs ({n_a} vs {n_b}): the unbalanced blocks are fitted as they are")
    need = None
    if verdict == "INCONCLUSIVE":
        need = rounds_needed(est, used.sigma, len(used.configs), margin)
    p = float(2 * _t_sf(abs(est) / se, used.df)) if se > 0 else None
    extra: dict[str, Any] = {}
    if usable and used.slopes:
        name = next(iter(usable))
        e0, s0 = unadjusted_fit.contrast(a, b)
        t0 = _t_ppf(0.975, unadjusted_fit.df)
        slope = used.slopes[name][0]
        extra = {"adjusted_for": name, "unadjusted": math.exp(e0), "unadjusted_low": math.exp(e0 - t0 * s0),
                 "unadjusted_high": math.exp(e0 + t0 * s0), "slope": slope, "covariate_p": cov_p}
        pair_p = moved_by_config(config, rounds, usable[name], (a, b))
        if pair_p is not None and pair_p < FLAG_P:
            notes.append(f"{name} differed between these two configurations (p = {pair_p:.3f}): if the configuration "
                         f"caused it, the adjustment absorbed part of its effect (unadjusted: {math.exp(e0):.3f})")
    elif cov_p is not None:
        extra = {"covariate_p": cov_p}
    return BlockRatio(math.exp(est), lo, hi, lo90, hi90, used.df, used.sigma, n_a, n_b, verdict, margin,
                      higher_is_better, pooled, lev, whole.round_p,
                      min_detectable_effect(used.sigma, min(n_a, n_b), used.df), need, p, notes=notes,
                      **_method(bool(extra.get("adjusted_for"))), **extra)


def _method(adjusted: bool) -> dict[str, Any]:
    return {"method": "two-way (round + configuration) model on log run means with the CPU lost to others as a "
                      "covariate, t interval on the residual df"} if adjusted else {}
