"""Two campaigns compared: the configurations both measured, matched, each with the ratio of its measure (B over A)
and a 95% interval that counts the day-to-day variation two separate campaigns add, and what differs between them
(server versions and settings, the host and its load, sysbench's options, benchlib's revision).

Why an interval of its own: inside one campaign the configurations are measured in interleaved rounds on the same
day, so the runs' spread is the whole noise of a ratio (``benchlib.analysis.compare``). Two campaigns are two
days: a host that runs 3% slower this week moves every run of the campaign together, and no number of runs inside
either campaign shows it. On the log scale a campaign's mean of a configuration is

    log m = log mu + d + e,    d ~ N(0, tau^2) once per campaign,    e ~ N(0, s^2 / (n m^2)) from its n runs

so the log ratio of two campaigns has variance ``s_a^2/(n_a m_a^2) + s_b^2/(n_b m_b^2) + 2 tau^2``: the runs'
part shrinks with more runs, the day's part does not (Kalibera & Jones 2013's levels, here two: run and campaign).

``tau`` (the day-to-day relative spread) comes from history, in this order: the value given (``day_cov``); an
estimate from the other campaigns of the history folders that measured the same configuration more than once
(DerSimonian-Laird's moment estimator over every such configuration, the two compared campaigns left out, so that a
real change between them does not widen its own interval); else ``DAY_COV``, the estimate over the recorded
campaigns (``bench/day_to_day.py`` prints it). The output says which.

Analysis code: reads run stores, nothing of the lab.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd
from scipy import stats

from benchlib.analysis.campaign import analyze
from benchlib.analysis.compare import verdict_of
from benchlib.analysis.runs import NOT_CONFIG, AnalysisError, param_columns, throughput_runs
from benchlib.manifest import MARGIN, Manifest
from benchlib.run_index import RunIndex
from benchlib.store import list_runs, read_manifest

__all__ = ["DAY_COV", "METRICS", "CampaignComparison", "Difference", "compare_campaigns", "day_to_day", "match_keys",
           "ratio_across"]

#: the day-to-day relative spread of a configuration's campaign mean when no history says otherwise: 6.2% estimated
#: over the recorded campaigns (data/campaigns: the quick campaign made three times on a quiet, a busy and a disturbed
#: host, and two campaigns that share async configurations; 0-6.5% with one campaign left out), bench/day_to_day.py
DAY_COV = 0.06

#: measure -> (the per-run column of the analysis, whether higher is better, its words)
METRICS: dict[str, tuple[str, bool, str]] = {
    "tps": ("tps_mean", True, "throughput (trimmed mean, transactions/s)"),
    "latency": ("lat_pctl_ms", False, "latency percentile (ms)"),
    "lag": ("lag_p95_ms", False, "replica lag p95 (ms)"),
}

#: run facts that make a configuration what it is besides its parameters: two clusters of one campaign may differ
#: only there (a WAN's round trip, the durability the lab gave it)
FACT_KEYS = ["system", "placement", "rtt_ms", "lab_durability", "binlog", "cluster_servers"]


@dataclass(frozen=True)
class Difference:
    what: str
    a: str
    b: str


@dataclass
class CampaignComparison:
    a: Path
    b: Path
    metric: str
    keys: list[str]  # the columns a configuration is matched on
    matched: pd.DataFrame  # per configuration: keys, runs/mean of each side, ratio (B/A), intervals, verdict
    only_a: pd.DataFrame  # configurations only A measured (keys)
    only_b: pd.DataFrame
    differences: list[Difference]
    day_cov: float
    day_cov_source: str
    margin: float = MARGIN
    notes: list[str] = field(default_factory=list)

    def words(self) -> str:
        """The comparison as a terminal shows it."""
        _, higher, what = METRICS[self.metric]
        lines = [f"B = {self.b}  against  A = {self.a}", f"measure: {what}; ratio = B / A"
                 f" ({'above' if higher else 'below'} 1 is better for B)",
                 f"day-to-day variation: {self.day_cov:.1%} per campaign ({self.day_cov_source}); the interval "
                 f"counts it twice, once per campaign, beside each campaign's run-to-run spread", ""]
        if self.matched.empty:
            lines.append("no configuration measured by both")
        else:
            shown = self.matched.copy()
            keys = [k for k in self.keys if shown[k].nunique(dropna=False) > 1] or self.keys[:1]
            table = shown[keys].astype(str)
            table["A"] = [f"{m:,.4g} ({n})" for m, n in zip(shown.mean_a, shown.runs_a)]
            table["B"] = [f"{m:,.4g} ({n})" for m, n in zip(shown.mean_b, shown.runs_b)]
            table["B/A"] = shown.ratio.map(lambda r: f"{r:.3f}")
            table["95% interval"] = [_interval(lo, hi) for lo, hi in zip(shown.ci_low, shown.ci_high)]
            table["runs alone"] = [_interval(lo, hi) for lo, hi in zip(shown.within_low, shown.within_high)]
            table["verdict"] = shown.verdict
            lines += [table.to_string(index=False), "(n): runs; runs alone: the interval without the day-to-day part",
                      ""]
        for side, frame in (("A", self.only_a), ("B", self.only_b)):
            if not frame.empty:
                lines.append(f"only in {side}: {len(frame)} configuration(s), e.g. "
                             + ", ".join(f"{k}={frame.iloc[0][k]}" for k in frame.columns))
        lines.append("what differs:" if self.differences else "what differs: nothing benchlib records")
        lines += [f"  {d.what}: {d.a}  ->  {d.b}" for d in self.differences]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def _interval(lo: float, hi: float) -> str:
    return "-" if not (np.isfinite(lo) and np.isfinite(hi)) else f"[{lo:.3f}, {hi:.3f}]"


def _norm(s: pd.Series) -> pd.Series:
    """A key column comparable across campaigns: numbers as numbers (threads 8 and 8.0 alike), missing as "-"."""
    n = pd.to_numeric(s, errors="coerce")
    out = s.astype(object).where(n.isna(), n.map(lambda x: f"{x:g}"))
    return out.where(s.notna(), "-").astype(str)


def match_keys(*tables: pd.DataFrame) -> list[str]:
    """The columns configurations are matched on (of ``runs`` tables as the store gives them): every parameter but
    the cluster's name, the repetition and the configuration's hash, and the facts that set clusters apart (system,
    placement, round trip, durability, binary log, servers a cluster)."""
    keys: list[str] = []
    for t in tables:
        keys += [c for c in param_columns(t) if c not in NOT_CONFIG and c != "cluster"]
        keys += [c for c in FACT_KEYS if c in t]
    return list(dict.fromkeys(keys))


def _keyed(table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    out = table.copy()
    for k in keys:
        out[k] = _norm(out[k]) if k in out else "-"
    return out


def _side(values: np.ndarray) -> tuple[float, float, int]:
    """mean, the variance of the log of the mean (delta method), runs."""
    n = len(values)
    m = float(values.mean())
    v = float(values.var(ddof=1)) / (n * m * m) if n > 1 and m > 0 else math.nan
    return m, v, n


def _log_interval(y: float, va: float, vb: float, na: int, nb: int, tau: float, level: float) -> tuple[float, float]:
    var = va + vb + 2 * tau * tau
    # Welch-Satterthwaite degrees of freedom, the day's part taken as known (infinite degrees of freedom)
    df = var * var / (va * va / (na - 1) + vb * vb / (nb - 1)) if va + vb > 0 else math.inf
    half = stats.t.ppf(0.5 + level / 2, df) * math.sqrt(var)
    return math.exp(y - half), math.exp(y + half)


def ratio_across(a: np.ndarray, b: np.ndarray, tau: float, higher: bool = True, margin: float = MARGIN
                 ) -> dict[str, Any]:
    """Run means ``b`` of one campaign against ``a`` of another: the ratio of means, its 95% interval on the log
    scale with the day-to-day variance ``tau``^2 once per campaign (Welch-Satterthwaite degrees of freedom, the
    day's part known; never narrower than the runs' own), the verdict against ``margin``, and the same interval
    without the day's part (the runs alone)."""
    ma, va, na = _side(np.asarray(a, dtype=float))
    mb, vb, nb = _side(np.asarray(b, dtype=float))
    out: dict[str, Any] = {"runs_a": na, "mean_a": ma, "runs_b": nb, "mean_b": mb,
                           "ratio": mb / ma if ma else math.nan}
    if not (np.isfinite(va) and np.isfinite(vb)) or ma <= 0 or mb <= 0:
        return {**out, "ci_low": math.nan, "ci_high": math.nan, "within_low": math.nan, "within_high": math.nan,
                "verdict": "INCONCLUSIVE", "why": "fewer than 2 runs"}
    y = math.log(mb / ma)
    wlo, whi = _log_interval(y, va, vb, na, nb, 0.0, 0.95)
    wlo90, whi90 = _log_interval(y, va, vb, na, nb, 0.0, 0.90)
    # never narrower than the runs alone: with few runs and a small day's part, the degrees of freedom the known
    # part adds could otherwise shrink the t quantile more than the variance grows
    lo, hi = _log_interval(y, va, vb, na, nb, tau, 0.95)
    lo, hi = min(lo, wlo), max(hi, whi)
    lo90, hi90 = _log_interval(y, va, vb, na, nb, tau, 0.90)
    lo90, hi90 = min(lo90, wlo90), max(hi90, whi90)
    return {**out, "ci_low": lo, "ci_high": hi, "within_low": wlo, "within_high": whi,
            "verdict": verdict_of(lo, hi, lo90, hi90, margin, higher), "why": ""}


def day_to_day(runs: pd.DataFrame, keys: list[str], *, measure: str = "summary_tps",
               campaign: str = "campaign_path") -> tuple[float | None, int, int]:
    """The day-to-day relative spread tau of a configuration's campaign mean, from ``runs`` (ok runs of many
    campaigns, e.g. the run index's) that measured a configuration (``keys``) in two campaigns or more, each with two
    runs or more: DerSimonian-Laird's moment estimator pooled over the configurations (each its own mean). Returns
    tau (None when no configuration repeats), the configurations and the campaigns it rests on."""
    runs = _keyed(runs[runs[measure] > 0], keys)
    per = runs.groupby([*keys, campaign], dropna=False)[measure].agg(["mean", "var", "count"]).reset_index()
    per = per[(per["count"] >= 2) & (per["var"] > 0)]
    per["y"] = np.log(per["mean"])
    per["v"] = per["var"] / (per["count"] * per["mean"] ** 2)
    q = dof = c = 0.0
    configs, campaigns = 0, set()
    for _, g in per.groupby(keys, dropna=False):
        if len(g) < 2:
            continue
        w = 1 / g.v
        ybar = float((w * g.y).sum() / w.sum())
        q += float((w * (g.y - ybar) ** 2).sum())
        dof += len(g) - 1
        c += float(w.sum() - (w * w).sum() / w.sum())
        configs += 1
        campaigns |= set(g[campaign])
    if not configs or c <= 0:
        return None, 0, 0
    return math.sqrt(max(0.0, (q - dof) / c)), configs, len(campaigns)


def _history_tau(history: Iterable[str | Path], leave_out: set[Path], keys: list[str]) -> tuple[float | None, str]:
    index = RunIndex(history)
    runs = index.sql("SELECT * FROM runs WHERE status = 'ok'")
    compared = runs.campaign_path.map(lambda p: Path(p).resolve()).isin(leave_out)
    # day to day on the same kind of machine: another CPU's campaigns add the machines' difference
    cpus = set(runs.loc[compared, "host_cpu_model"].dropna()) if "host_cpu_model" in runs else set()
    runs = runs[~compared]
    if cpus:
        runs = runs[runs.host_cpu_model.isin(cpus)]
    runs = throughput_runs(runs)
    tau, configs, campaigns = day_to_day(runs, [k for k in keys if k in runs] or ["system"])
    on = f" on the same CPU ({', '.join(sorted(cpus))})" if cpus else ""
    if tau is None:
        return None, f"no configuration measured in two other campaigns of the history{on}"
    return tau, f"estimated from {configs} configuration(s) measured again across {campaigns} other campaigns{on}"


def _first_manifest(folder: Path, system: str) -> Manifest | None:
    for run in list_runs(folder):
        m = read_manifest(run)
        if m.status == "ok" and m.lab is not None and m.lab.system == system:
            return m
    return None


#: items of a compound setting (wsrep_provider_options) that name the lab's own paths and addresses: every lab has
#: its own, so they are no difference between campaigns
_PLACE = re.compile(r"(dir|addr|port|host|name)$")


def _items(value: str) -> dict[str, str] | None:
    """A compound setting's items (``a = 1; b = 2``), or None for a plain value."""
    if ";" not in value or "=" not in value:
        return None
    pairs = (p.split("=", 1) for p in value.split(";") if "=" in p)
    return {k.strip(): v.strip() for k, v in pairs if not _PLACE.search(k.strip())}


def _dict_diffs(what: str, a: dict[str, Any], b: dict[str, Any], limit: int = 12,
                skip: Iterable[str] = ()) -> list[Difference]:
    """The keys both sides record with different values (a key one side lacks was not recorded there: an older
    benchlib recorded fewer)."""
    out: list[Difference] = []
    for k in sorted(set(a) & set(b) - set(skip)):
        va, vb = str(a[k]), str(b[k])
        if va == vb:
            continue
        ia, ib = _items(va), _items(vb)
        if ia is not None and ib is not None:
            out += [Difference(f"{what} {k}: {i}", ia.get(i, "-"), ib.get(i, "-"))
                    for i in sorted(set(ia) | set(ib)) if ia.get(i) != ib.get(i)]
        else:
            out.append(Difference(f"{what} {k}", va, vb))
    return out[:limit] + ([Difference(f"{what}: {len(out) - limit} more", "", "")] if len(out) > limit else [])


def _host(record) -> dict[str, Any]:
    return {k: v for k, v in (record.host or {}).items() if k != "hostname"}


def _load(analysis) -> tuple[float, float]:
    lost = analysis.runs["lost_cpu"].dropna() if "lost_cpu" in analysis.runs else pd.Series(dtype=float)
    return (float(lost.median()), float(lost.max())) if len(lost) else (math.nan, math.nan)


def differences(a, b, systems: list[str], keys: Iterable[str] = ()) -> list[Difference]:
    """What differs between the campaigns of analyses ``a`` and ``b``: the host (and its load), benchlib's revision,
    each system's server version and settings and sysbench's options (those a configuration is not matched on), as
    their records say."""
    out: list[Difference] = []
    ra, rb = a.record, b.record
    ha, hb = _host(ra), _host(rb)
    if bool(ha) != bool(hb):
        out.append(Difference("host", ", ".join(map(str, ha.values())) or "not recorded",
                              ", ".join(map(str, hb.values())) or "not recorded"))
    else:
        out += _dict_diffs("host", ha, hb)
    if ra.git_revision != rb.git_revision:
        out.append(Difference("benchlib revision", str(ra.git_revision)[:10], str(rb.git_revision)[:10]))
    (med_a, max_a), (med_b, max_b) = _load(a), _load(b)
    if all(np.isfinite([med_a, med_b])) and (abs(med_a - med_b) >= 0.02 or abs(max_a - max_b) >= 0.05):
        out.append(Difference("CPU lost to other processes (median, worst run)", f"{med_a:.1%}, {max_a:.1%}",
                              f"{med_b:.1%}, {max_b:.1%}"))
    for system in systems:
        ma, mb = _first_manifest(a.path, system), _first_manifest(b.path, system)
        if ma is None or mb is None or ma.lab is None or mb.lab is None:
            continue
        versions = [m.lab.facts.version if m.lab.facts else None for m in (ma, mb)]
        if versions[0] != versions[1]:
            out.append(Difference(f"{system} server version", str(versions[0]), str(versions[1])))
        va, vb = (next(iter((m.server_variables or {}).values()), {}) for m in (ma, mb))
        out += _dict_diffs(f"{system} setting", va, vb)
        out += _dict_diffs(f"{system} sysbench", ma.sysbench or {}, mb.sysbench or {}, skip=keys)
    if ra.created_utc and rb.created_utc:
        out.append(Difference("made", str(ra.created_utc), str(rb.created_utc)))
    return list(dict.fromkeys(out))


def compare_campaigns(a: str | Path, b: str | Path, *, metric: str = "tps", day_cov: float | None = None,
                      history: Iterable[str | Path] | None = None, margin: float = MARGIN) -> CampaignComparison:
    """Campaign ``b`` against campaign ``a``: every configuration both measured (matched on ``match_keys``), its
    ratio B/A of ``metric`` (``METRICS``) with a 95% interval counting the day-to-day variation, a verdict against
    ``margin``, and what differs. ``history``: folders of campaigns to estimate that variation from (default: the
    folders ``a`` and ``b`` are in); ``day_cov`` sets it instead."""
    if metric not in METRICS:
        raise AnalysisError(f"no measure {metric!r} to compare", hint=f"one of: {', '.join(METRICS)}")
    col, higher, _ = METRICS[metric]
    pa_, pb_ = Path(a), Path(b)
    if pa_.resolve() == pb_.resolve():
        raise AnalysisError(f"{a} is compared with itself", hint="give two different campaign folders")
    ana, anb = analyze(pa_), analyze(pb_)
    ta, tb = throughput_runs(ana.runs), throughput_runs(anb.runs)
    keys = match_keys(ana.frames["runs"], anb.frames["runs"])
    ta, tb = _keyed(ta, keys), _keyed(tb, keys)
    notes: list[str] = []
    if day_cov is not None:
        tau, source = float(day_cov), "as given"
    else:
        roots = list(history) if history is not None else sorted({pa_.resolve().parent, pb_.resolve().parent})
        found, source = _history_tau(roots, {pa_.resolve(), pb_.resolve()}, keys)
        tau = found if found is not None else DAY_COV
        if found is None:
            source = f"benchlib's estimate over its recorded campaigns; the history has {source}"
    rows, both = [], set()
    groups_b = {k: g for k, g in tb.groupby(keys, dropna=False)}
    for k, ga in ta.groupby(keys, dropna=False):
        gb = groups_b.get(k)
        if gb is None:
            continue
        both.add(k)
        va, vb = ga[col].dropna().to_numpy(float), gb[col].dropna().to_numpy(float)
        if len(va) == 0 or len(vb) == 0:
            continue
        rows.append({**dict(zip(keys, k)), **ratio_across(va, vb, tau, higher, margin)})
    matched = pd.DataFrame(rows)
    only = lambda t: t[keys].drop_duplicates().loc[lambda d: [tuple(r) not in both  # noqa: E731
                                                            for r in d.itertuples(index=False)]]
    systems = sorted(set(ta.get("system", pd.Series(dtype=str))) & set(tb.get("system", pd.Series(dtype=str))))
    if matched.empty:
        notes.append("the campaigns share no configuration: compare campaigns that ran the same clusters, "
                     "workloads and threads")
    return CampaignComparison(pa_, pb_, metric, keys, matched, only(ta), only(tb),
                              differences(ana, anb, systems, keys), tau, source, margin, notes)
