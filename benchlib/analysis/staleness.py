"""Stale reads: Jepsen's definitions on the stale-read probe's rows, and a rate per configuration with its interval.

For each value the probe's writer commits (one row, a monotonic sequence):
- **known**: when the writer's commit returned, or when a read that returned it (or a later value) completed,
  whichever is first;
- **stale read**: a read sent after a value was known that returns an older value; its staleness is how many known
  values it missed and for how long the first of them had been known;
- **stable latency**: from known until the last read sent afterwards that still missed it (0: none did);
- **never read**: acknowledged, and no read returned it or a later value.
(jepsen-io/jepsen ``checker.clj`` set-full; Codership's causal test uses the same rule with one writer.)

``stale_fractions`` pools the reads of each configuration's runs: the fraction's 95% interval treats runs as the unit
(stale reads come in bursts), by one method whatever the count (``rare_rate``): the design effect is estimated from
the spread between runs (at least 1); the reads are divided by it (the effective count) and shrunk further for the few
runs the spread is estimated from (Korn and Graubard 1998: times (z / t_df)^2, with Satterthwaite's degrees of freedom
(k - 1) deff^2 / (deff - 1)^2, infinite at a design effect of 1, k - 1 when the spread dominates), and the Jeffreys
interval is taken on that count (Brown, Cai and DasGupta 2001; its lower end 0 when none is stale). Nothing in it
switches: a design effect of 1.0001 gives the bound of 1 to within a ten-thousandth. Beside the two-sided 95% interval,
``upper`` is the one-sided 95% upper bound by the same method, the figure to quote for "at most" (none stale,
most often).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import stats

__all__ = ["RareRate", "StaleFraction", "classify", "configuration_columns", "in_words", "rare_rate", "rate_bounds",
           "stable_latency", "stale_fractions"]


def _known(reads: pd.DataFrame, writes: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(values, known times) of every acknowledged value, ascending: ack time or first read returning >= it."""
    acked = writes[writes["error"] == ""].drop_duplicates("seq", keep="last").sort_values("seq")
    seqs = acked["seq"].to_numpy(dtype=np.int64)
    known = acked["t_acked_s"].to_numpy(dtype=float)
    ok = reads[reads["value"].notna()].sort_values("t_returned_s")
    if len(ok) and len(seqs):
        cummax = np.maximum.accumulate(ok["value"].to_numpy(dtype=np.int64))
        first = np.searchsorted(cummax, seqs, side="left")  # the first read (by return) with a value >= seq
        seen = np.where(first < len(ok), ok["t_returned_s"].to_numpy(dtype=float)[np.minimum(first, len(ok) - 1)],
                        np.inf)
        known = np.minimum(known, seen)
    return seqs, np.minimum.accumulate(known[::-1])[::-1] if len(known) else known  # non-decreasing in seq


def classify(reads: pd.DataFrame, writes: pd.DataFrame) -> pd.DataFrame:
    """``reads`` (the raw probe rows) with known_seq, stale, staleness_versions, staleness_ms and read_ms added."""
    out = reads.copy()
    seqs, known = _known(reads, writes)
    base = seqs[0] - 1 if len(seqs) else 0  # the value before the run's first commit: known from the start
    seqs, known = np.concatenate([[base], seqs]), np.concatenate([[-np.inf], known])
    sent = out["t_sent_s"].to_numpy(dtype=float)
    known_seq = seqs[np.searchsorted(known, sent, side="left") - 1]  # the newest value known before it was sent
    failed = out["value"].isna()
    got = out["value"].fillna(0).astype("int64").to_numpy()
    behind = np.clip(known_seq - got, 0, None)
    first_missed = known[np.minimum(np.searchsorted(seqs, got + 1), len(seqs) - 1)]  # when got + 1 became known
    out["known_seq"] = pd.Series(known_seq, index=out.index, dtype="int64")
    out["stale"] = pd.Series(behind > 0, index=out.index, dtype="boolean").mask(failed)
    out["staleness_versions"] = pd.Series(behind, index=out.index, dtype="Int64").mask(failed)
    out["staleness_ms"] = pd.Series(np.where(behind > 0, (sent - first_missed) * 1000, 0.0), index=out.index,
                                    dtype="float64").mask(failed)
    out["read_ms"] = (out["t_returned_s"] - out["t_sent_s"]) * 1000
    return out


def stable_latency(reads: pd.DataFrame, writes: pd.DataFrame) -> pd.DataFrame:
    """Per acknowledged value: seq, known_s, stable_ms (0: no read sent after known missed it) and never_read."""
    seqs, known = _known(reads, writes)
    ok = reads[reads["value"].notna()].sort_values("value")
    values = ok["value"].to_numpy(dtype=np.int64)
    # the latest send time among the reads that returned a value below each seq ([0]: no such read)
    last_miss = np.concatenate([[-np.inf], np.maximum.accumulate(ok["t_sent_s"].to_numpy(dtype=float))])
    latest = last_miss[np.searchsorted(values, seqs, side="left")]
    stable = np.maximum(0.0, latest - known) * 1000
    top = values.max() if len(values) else -1
    return pd.DataFrame({"seq": seqs, "known_s": known, "stable_ms": stable, "never_read": seqs > top})


@dataclass(frozen=True)
class StaleFraction:
    runs: int
    reads: int
    stale: int
    failed: int
    fraction: float
    low: float  # the two-sided 95% interval
    high: float
    upper: float  # the one-sided 95% upper bound
    design_effect: float
    staleness_ms_p50: float  # over the stale reads
    staleness_ms_p99: float
    staleness_ms_max: float
    read_ms_p50: float  # over every read that returned
    read_ms_p99: float
    wait_ms_p50: float  # the causal wait (NaN: none)


@dataclass(frozen=True)
class RareRate:
    """A rate of rare events pooled over runs: ``fraction`` with its two-sided 95% interval (``low``, ``high``) and
    one-sided 95% upper bound (``upper``), the design effect and the effective count the interval was taken on."""

    fraction: float
    low: float
    high: float
    upper: float
    design_effect: float
    effective_n: float


def rare_rate(events, trials, level: float = 0.95) -> RareRate:
    """The rate of ``events`` (per run) in ``trials`` (per run), runs as the unit: see the module docstring. Continuous
    in the design effect and in the counts; exact Jeffreys intervals at a design effect of 1."""
    n, s = np.asarray(trials, dtype=float), np.asarray(events, dtype=float)
    total, k = n.sum(), len(n)
    if total <= 0:
        return RareRate(math.nan, math.nan, math.nan, math.nan, math.nan, 0.0)
    p = s.sum() / total
    deff = 1.0
    if k > 1 and 0 < p < 1:
        var = k / (k - 1) * np.sum((s - p * n) ** 2) / total ** 2  # the ratio estimator's variance, runs as units
        deff = max(1.0, float(var / (p * (1 - p) / total)))
    return rate_bounds(p, total, k, deff, level)


def rate_bounds(p: float, total: float, runs: int, deff: float, level: float = 0.95) -> RareRate:
    """The bounds of a rate ``p`` of ``total`` trials over ``runs`` runs at design effect ``deff`` (``rare_rate``)."""
    alpha = 1 - level
    n_eff = total / deff
    if deff > 1:  # the spread between runs is estimated from k runs: fewer effective trials, smoothly
        df = (runs - 1) * deff ** 2 / (deff - 1) ** 2
        n_eff *= (stats.norm.ppf(1 - alpha / 2) / stats.t.ppf(1 - alpha / 2, df)) ** 2
    x = p * n_eff
    a, b = x + 0.5, n_eff - x + 0.5
    low = 0.0 if x <= 0 else float(stats.beta.ppf(alpha / 2, a, b))
    high = 1.0 if x >= n_eff else float(stats.beta.ppf(1 - alpha / 2, a, b))
    upper = 1.0 if x >= n_eff else float(stats.beta.ppf(1 - alpha, a, b))
    return RareRate(p, low, high, upper, deff, n_eff)


def stale_fractions(reads: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """One row per configuration (``by``: e.g. cluster, setting; [] pools every read into one row): the stale
    fraction of its reads with a 95% interval, runs as the unit (``reads`` needs a ``run_id`` column), and staleness
    and read latency quantiles."""
    rows = []
    for key, g in (reads.groupby(by, sort=True, dropna=False) if by else [((), reads)] if len(reads) else []):
        ok = g[g["stale"].notna()]
        per_run = ok.groupby("run_id").agg(reads=("stale", "size"), stale=("stale", "sum"))
        if per_run.empty:
            continue
        rate = rare_rate(per_run["stale"], per_run["reads"])
        late = ok.loc[ok["stale"].astype(bool), "staleness_ms"]
        q = (lambda s, x: float(s.quantile(x)) if len(s) else math.nan)
        rows.append({**dict(zip(by, key if isinstance(key, tuple) else (key,))), **asdict(StaleFraction(
            runs=len(per_run), reads=int(per_run["reads"].sum()), stale=int(per_run["stale"].sum()),
            failed=int(g["stale"].isna().sum()), fraction=rate.fraction, low=rate.low, high=rate.high,
            upper=rate.upper, design_effect=rate.design_effect,
            staleness_ms_p50=q(late, 0.5), staleness_ms_p99=q(late, 0.99), staleness_ms_max=q(late, 1.0),
            read_ms_p50=q(ok["read_ms"], 0.5), read_ms_p99=q(ok["read_ms"], 0.99),
            wait_ms_p50=q(ok["wait_ms"].dropna(), 0.5)))})
    return pd.DataFrame(rows)


def configuration_columns(table: pd.DataFrame | pd.Series) -> list[str]:
    """The columns of a ``stale_fractions`` table (or the index of one of its rows) that name its configuration
    (the ``by`` it was grouped by), not a figure of it."""
    figures = {f.name for f in dataclasses.fields(StaleFraction)}
    return [k for k in (table.index if isinstance(table, pd.Series) else table.columns) if k not in figures]


def _ms(x: float) -> str:
    return f"{x:.1f}" if x < 10 else f"{x:.0f}"


def _pct(x: float) -> str:
    return f"{x:.2%}" if x < 0.001 else f"{x:.1%}"


def in_words(row: pd.Series, costs: pd.DataFrame | None = None, weakest: pd.Series | None = None) -> str:
    """One configuration's stale reads as a sentence (a row of ``stale_fractions`` by cluster and setting); with
    ``costs`` (its rows of ``a.axis("probe").consistency_costs``: metric, ratio, ci_low, ci_high, weakest) what the
    setting cost the writer, and with ``weakest`` (the weakest setting's row) how much slower its reads were."""
    extra = [f"{k} {row[k]:g}" if isinstance(row[k], float) else f"{k} {row[k]}" for k in configuration_columns(row)
             if k not in ("cluster", "setting") and pd.notna(row[k])]
    where = " ".join([f"{row['cluster']} {row['setting']}", *extra])
    runs = f"{int(row['runs'])} run{'s' if row['runs'] != 1 else ''}"
    if row["stale"] == 0:
        said = (f"{where}: no stale read in {int(row['reads']):,} reads on the other nodes over {runs} "
                f"(one-sided 95% upper bound {_pct(row['upper'])})")
    else:
        said = (f"{where}: {_pct(row['fraction'])} of {int(row['reads']):,} reads on the other nodes were stale "
                f"(95% {_pct(row['low'])}–{_pct(row['high'])}, {runs}), by up to {_ms(row['staleness_ms_max'])} ms "
                f"(median {_ms(row['staleness_ms_p50'])} ms)")
    wait = f", the causal wait {row['wait_ms_p50']:.1f} ms of it" if row["wait_ms_p50"] == row["wait_ms_p50"] else ""
    slower = ""
    if weakest is not None and weakest["read_ms_p50"] > 0 and weakest["setting"] != row["setting"]:
        slower = f", {row['read_ms_p50'] / weakest['read_ms_p50']:.1f}× {weakest['setting']}'s"
    failed = f"; {int(row['failed'])} reads failed" if row["failed"] else ""
    cost = ""
    if costs is not None and len(costs):
        said_of: dict[str, list[str]] = {}
        for c in costs.itertuples():
            if np.isfinite(c.ratio) and c.metric in METRIC_WORDS:
                who, what = METRIC_WORDS[c.metric]
                said_of.setdefault(who, []).append(f"{what} {c.ratio:.2f}× (95% {c.ci_low:.2f}–{c.ci_high:.2f})")
        if said_of:
            cost = f"; against {costs.weakest.iloc[0]}, " + ", ".join(
                f"{who} " + " and ".join(parts) for who, parts in said_of.items())
    return f"{said}; a read took {row['read_ms_p50']:.1f} ms (median){wait}{slower}{failed}{cost}."


#: a cost ratio's metric: whose (the sysbench writers, or a read-split load's readers) and what, in words
METRIC_WORDS = {"tps": ("the writer's", "throughput"), "lat_pctl_ms": ("the writer's", "latency"),
                "read_tps": ("the read split's readers'", "throughput"), "read_lat_ms": ("the read split's readers'",
                                                                                        "latency")}
