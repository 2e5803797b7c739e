"""Judging a published claim on a campaign: yes, no, not shown, or not measured, with the evidence.

A claim is judged on ratios and shapes, never on absolute TPS of other hardware. ``compare``
decides "a is less (or more) than b" from per-run values of each side (a Fieller interval of
a/b with at least two runs a side, a factor beyond the noise with one) or from paired ratios (a
t interval on their logs); ``ratio_claim`` judges a comparison row against a threshold.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from benchlib.analysis.campaign import CampaignAnalysis

__all__ = ["NO", "NOT_MEASURED", "NOT_SHOWN", "SINGLE_RUN_FACTOR", "YES", "claim", "compare", "fewer_stale", "judge",
           "band_claim", "interval_of", "mean_of", "paired", "pick", "ratio_claim", "ratio_of_ratios", "ratio_row", "remote_claim", "stale_claim",
           "stale_rate", "values"]

YES, NO, NOT_SHOWN, NOT_MEASURED = "yes", "no", "not shown", "not measured"


def pick(df: pd.DataFrame, **where: Any) -> pd.DataFrame:
    for k, v in where.items():
        if k not in df:
            return df[:0]
        df = df[df[k].isin(v)] if isinstance(v, (list, tuple, set)) else df[df[k] == v]
    return df


def ratio_row(a: CampaignAnalysis, metric: str = "tps", **where: Any) -> pd.Series | None:
    """The comparison row (ratio, ci_low, ci_high, verdict) against async; the best over the rows that match
    (the studies report the best flow-control setting)."""
    c = pick(a.comparisons, metric=metric, **where) if not a.comparisons.empty else pd.DataFrame()
    if c.empty:
        return None
    return c.sort_values("ratio").iloc[-1 if metric == "tps" else 0]


def mean_of(df: pd.DataFrame, col: str) -> float:
    v = df[col].dropna() if col in df else pd.Series(dtype=float)
    return float(v.mean()) if len(v) else np.nan


def judge(value: float, low: float, high: float, *, below: float | None = None, above: float | None = None) -> str:
    """yes / no / not shown for 'value is below ``below``' (or above ``above``), given its 95% interval: yes when
    the interval lies on the claimed side, no when it lies on the other, else not shown (whichever side the point
    estimate is on: an interval across the threshold settles neither answer)."""
    if value is None or not np.isfinite(value):
        return NOT_MEASURED
    if not (np.isfinite(low) and np.isfinite(high)):
        return NOT_SHOWN
    if below is not None:
        return YES if high < below else NO if low > below else NOT_SHOWN
    return YES if low > above else NO if high < above else NOT_SHOWN


def claim(text: str, published: str, measured: float | str | None, holds: str, how: str) -> dict[str, Any]:
    if isinstance(measured, float):
        measured = "n/a" if not np.isfinite(measured) else f"{measured:.3g}"
    return {"claim": text, "published": published, "measured": measured if measured is not None else "n/a",
            "holds": holds, "how": how}


def ratio_claim(text: str, published: str, row: pd.Series | None, *, below: float | None = None,
                 above: float | None = None, how: str) -> dict[str, Any]:
    if row is None:
        return claim(text, published, None, NOT_MEASURED, how)
    if np.isfinite(row.ci_low) and np.isfinite(row.ci_high):
        holds = judge(row.ratio, row.ci_low, row.ci_high, below=below, above=above)
        noise = (f"; not settled at run-to-run noise {row.sigma_log:.1%} over {int(row.n)} runs a side"
                 if holds == NOT_SHOWN and "sigma_log" in row and pd.notna(row.sigma_log) else "")
        return claim(text, published, f"{row.ratio:.2f} [{row.ci_low:.2f}, {row.ci_high:.2f}]{noise}", holds, how)
    # no interval (one run a side): as ``compare`` does, only a factor beyond run-to-run noise counts
    f, r = SINGLE_RUN_FACTOR, row.ratio
    if not np.isfinite(r):
        holds = NOT_MEASURED
    elif below is not None:
        holds = YES if r < below / f else NO if r > below * f else NOT_SHOWN
    else:
        holds = YES if r > above * f else NO if r < above / f else NOT_SHOWN
    return claim(text, published, f"{r:.2f} (no interval, one run a side: counts beyond x{f:g})", holds, how)


SINGLE_RUN_FACTOR = 1.25  # with one run a side, a difference counts only beyond 25% (3x the ~8% run-to-run noise here)


def compare(text: str, published: str, a_vals: Any, b_vals: Any, *, less: bool, how: str) -> dict[str, Any]:
    """A claim that a is less (or more) than b, from per-run values of each side. With at least two runs a
    side the 95% Fieller interval of a/b decides (yes: it excludes 1 in the claimed direction; no: in the
    other; else not shown); with one run a side only a difference beyond SINGLE_RUN_FACTOR counts. With
    ``b_vals`` the number 1.0, ``a_vals`` are paired ratios: a t interval on their logs decides."""
    from scipy import stats

    from benchlib.analysis.compare import fieller

    if np.ndim(b_vals) == 0 and b_vals == 1.0 and np.size(a_vals) >= 2:
        logs = np.log(np.asarray(a_vals, dtype=float))
        logs = logs[np.isfinite(logs)]
        if len(logs) >= 2:
            m, se = logs.mean(), logs.std(ddof=1) / np.sqrt(len(logs))
            lo, hi = np.exp(m + np.array([-1, 1]) * stats.t.ppf(0.975, len(logs) - 1) * se)
            right, wrong = (hi < 1, lo > 1) if less else (lo > 1, hi < 1)
            evidence = f"ratio {np.exp(m):.2f} [{lo:.2f}, {hi:.2f}] over {len(logs)} paired configurations"
            return claim(text, published, evidence, YES if right else NO if wrong else NOT_SHOWN, how)
    a = np.atleast_1d(np.asarray(a_vals, dtype=float))
    b = np.atleast_1d(np.asarray(b_vals, dtype=float))
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if not len(a) or not len(b) or b.mean() == 0:
        return claim(text, published, None, NOT_MEASURED, how)
    r = a.mean() / b.mean()
    evidence = f"{a.mean():.4g} vs {b.mean():.4g}"
    if len(a) >= 2 and len(b) >= 2:
        _, lo, hi = fieller(a, b, 0.95)
        evidence += f" (ratio {r:.2f} [{lo:.2f}, {hi:.2f}], {len(a)}+{len(b)} runs)"
        right, wrong = (hi < 1, lo > 1) if less else (lo > 1, hi < 1)
        if not right and not wrong:  # not settled: say the noise it met
            evidence += (f"; not settled at run-to-run CoV {a.std(ddof=1) / a.mean():.1%} and "
                         f"{b.std(ddof=1) / b.mean():.1%}")
    else:
        evidence += f" (ratio {r:.2f}, one run a side: counts beyond x{SINGLE_RUN_FACTOR:g})"
        right = r < 1 / SINGLE_RUN_FACTOR if less else r > SINGLE_RUN_FACTOR
        wrong = r > SINGLE_RUN_FACTOR if less else r < 1 / SINGLE_RUN_FACTOR
    return claim(text, published, evidence, YES if right else NO if wrong else NOT_SHOWN, how)


def interval_of(vals: Any) -> tuple[float, float, float]:
    """Mean of per-run values and its 95% t interval (runs as the unit); NaN bounds with fewer than two runs."""
    from benchlib.analysis.views import t_half

    v = pd.Series(np.asarray(vals, dtype=float)).replace([np.inf, -np.inf], np.nan).dropna()
    if not len(v):
        return np.nan, np.nan, np.nan
    half = t_half(v)
    return float(v.mean()), float(v.mean() - half), float(v.mean() + half)


def band_claim(text: str, published: str, vals: Any, *, low: float = -np.inf, high: float = np.inf,
               scale: float = 1.0, unit: str = "", how: str) -> dict[str, Any]:
    """A claim that a quantity lies in [low, high], from per-run values divided by ``scale``: yes when its 95%
    interval lies inside, no when it lies outside, else not shown; one run: the value alone decides (said so)."""
    m, lo, hi = (x / scale for x in interval_of(vals))
    if not np.isfinite(m):
        return claim(text, published, None, NOT_MEASURED, how)
    inside = lambda x: low <= x <= high  # noqa: E731
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return claim(text, published, f"{m:.3g}{unit} (one run: no interval)", YES if inside(m) else NO, how)
    holds = YES if inside(lo) and inside(hi) else NO if hi < low or lo > high else NOT_SHOWN
    return claim(text, published, f"{m:.3g}{unit} [{lo:.3g}, {hi:.3g}], {len(np.atleast_1d(vals))} runs", holds, how)


def ratio_of_ratios(text: str, published: str, num: pd.Series | None, den: pd.Series | None, *, less: bool,
                    how: str) -> dict[str, Any]:
    """A claim that one ratio against the baseline (``num``, a comparison row) is below (``less``) or above another
    (``den``): their quotient with a 95% interval on the log scale, each row's standard error taken from its own
    interval (t with its df) and the two combined as independent, which is conservative when they share baseline
    runs. Rows without intervals (one run a side) fall back to ``compare``'s factor rule."""
    from scipy import stats

    if num is None or den is None:
        return claim(text, published, None, NOT_MEASURED, how)
    bounded = all(np.isfinite(float(r[c])) and float(r[c]) > 0 for r in (num, den) for c in ("ci_low", "ci_high"))
    if not bounded:
        return compare(text, published, num.ratio, den.ratio, less=less, how=how)

    def se(r: pd.Series) -> tuple[float, float]:
        df = float(r["df"]) if "df" in r and pd.notna(r["df"]) and r["df"] > 0 else float(min(r.n, r.n_baseline) - 1)
        return (np.log(r.ci_high) - np.log(r.ci_low)) / (2 * stats.t.ppf(0.975, max(df, 1))), max(df, 1)

    (s1, d1), (s2, d2) = se(num), se(den)
    diff, s = np.log(num.ratio) - np.log(den.ratio), np.hypot(s1, s2)
    df = s ** 4 / (s1 ** 4 / d1 + s2 ** 4 / d2) if s > 0 else min(d1, d2)  # Welch-Satterthwaite
    lo, hi = np.exp(diff + np.array([-1, 1]) * stats.t.ppf(0.975, df) * s)
    right, wrong = (hi < 1, lo > 1) if less else (lo > 1, hi < 1)
    evidence = f"{num.ratio:.2f} vs {den.ratio:.2f} (quotient {np.exp(diff):.2f} [{lo:.2f}, {hi:.2f}])"
    return claim(text, published, evidence, YES if right else NO if wrong else NOT_SHOWN, how)


def paired(a: pd.DataFrame, b: pd.DataFrame, col: str, keys: tuple[str, ...] = ("cluster", "workload", "threads")
            ) -> np.ndarray:
    """Ratios a/b of ``col`` for the configurations both sides share (the other dimensions paired away)."""
    keys = tuple(k for k in keys if k in a and k in b)
    if a.empty or b.empty:
        return np.array([])
    j = a.groupby(list(keys))[col].mean().to_frame("a").join(b.groupby(list(keys))[col].mean().to_frame("b"),
                                                             how="inner")
    return (j.a / j.b).replace([np.inf, -np.inf], np.nan).dropna().to_numpy(float)


def values(df: pd.DataFrame, col: str) -> np.ndarray:
    return df[col].dropna().to_numpy(float) if col in df and len(df) else np.array([])


def remote_claim(text: str, published: str, system: str) -> dict[str, Any]:
    return claim(text, published, None, NOT_MEASURED, f"{system} needs a remote lab (issue 6)")


def stale_rate(a: CampaignAnalysis, **where: Any) -> pd.Series | None:
    """The stale-read fraction (``benchlib.analysis.staleness.stale_fractions``: fraction, 95% low and high, reads,
    stale, runs) of the probe's reads in the ok runs whose parameters match ``where`` (``pick``'s rules: the
    ``system`` run fact, ``consistency`` the setting's name, any run parameter), pooled; None when there are none."""
    from benchlib.analysis.staleness import stale_fractions

    reads = a.axis("probe").probe_reads
    if reads.empty:
        return None
    runs = pick(a.runs[a.runs.status == "ok"], **{("read_consistency" if k == "consistency" else k): v
                                                    for k, v in where.items()})
    table = stale_fractions(reads[reads.run_id.isin(set(runs.run_id))], [])
    return table.iloc[0] if len(table) else None


def _rate_words(r: pd.Series) -> str:
    if r["stale"] == 0:
        return (f"0 stale in {int(r['reads']):,} reads (one-sided 95% upper bound {r['upper']:.2%}, "
                f"{int(r['runs'])} runs)")
    return (f"{r['fraction']:.2%} stale (95% {r['low']:.2%}–{r['high']:.2%}) of {int(r['reads']):,} reads, "
            f"{int(r['runs'])} runs, up to {r['staleness_ms_max']:.0f} ms")


def stale_claim(text: str, published: str, rate: pd.Series | None, *, stale: bool, how: str,
                control: pd.Series | None = None) -> dict[str, Any]:
    """A claim that reads are stale (``stale``) or that they are not, from a ``stale_rate``. One stale read shows
    that reads can be stale: yes for a claim of staleness, no for a claim of none. No stale read in n reads
    bounds the fraction (its one-sided 95% upper bound is said); it refutes a claim of staleness only when ``control``
    (the same load under a weaker setting) did read stale values, so that the probe could see them; else not
    shown."""
    if rate is None:
        return claim(text, published, None, NOT_MEASURED, how + "; no stale-read probe in this campaign")
    seen = _rate_words(rate)
    if control is not None:
        seen += f"; the weaker setting: {_rate_words(control)}"
    if rate["stale"] > 0:
        return claim(text, published, seen, YES if stale else NO, how)
    could_see = control is not None and control["stale"] > 0
    return claim(text, published, seen, (NO if stale else YES) if could_see else NOT_SHOWN, how)


def fewer_stale(text: str, published: str, a: pd.Series | None, b: pd.Series | None, how: str) -> dict[str, Any]:
    """A claim that ``a`` reads fewer stale values than ``b``: yes when a's 95% interval lies below b's, no when
    above, else not shown."""
    if a is None or b is None:
        return claim(text, published, None, NOT_MEASURED, how + "; no stale-read probe in this campaign")
    seen = f"{_rate_words(a)} vs {_rate_words(b)}"
    holds = YES if a["high"] < b["low"] else NO if a["low"] > b["high"] else NOT_SHOWN
    return claim(text, published, seen, holds, how)
