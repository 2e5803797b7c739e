"""The five published replication studies (``../shared/seeds``): what each reproduces on a local lab, its
ready campaigns, its notebook, and the comparison with the published figures.

    from benchlib import studies
    s = studies.get("001")                 # title, campaigns (quick, full), notebook, what needs a remote lab
    r = studies.compare_reference("runs/study001-quick")
    r.claims                               # the published findings, each judged on this campaign
    r.figures                              # every published number of the study, ours next to it where we have one

A reproduction is judged on ratios and shapes (who is faster, how lag responds to a setting, latency
in round trips), never on absolute TPS of different hardware: ``claims`` holds one row per published
finding with the published value, the measured one, and ``holds``: yes, no, not shown (the direction
is right but the interval does not exclude the other answer), or not measured (the campaign lacks
those runs, or the system needs a remote lab). Analysis code only: no lab import.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from benchlib.analysis import views
from benchlib.analysis.campaign import AnalysisError, CampaignAnalysis, analyze
from benchlib.errors import BenchlibError

ROOT = Path(__file__).resolve().parents[1]
STUDY_DIR = ROOT / "examples" / "studies"
REFERENCE = ROOT / "data" / "reference" / "published.csv"
YES, NO, NOT_SHOWN, NOT_MEASURED = "yes", "no", "not shown", "not measured"


class StudyError(BenchlibError):
    """An unknown study, or a campaign that belongs to no study."""


@dataclass(frozen=True)
class Study:
    id: str
    title: str
    seed: str  # the study's text in ../shared/seeds
    local: str  # what the local lab reproduces
    remote: str  # what needs a remote lab (issue 6)
    claims: Callable[[CampaignAnalysis], list[dict[str, Any]]] = field(repr=False, compare=False)

    @property
    def quick(self) -> Path:
        return STUDY_DIR / f"{self.id}-quick.toml"

    @property
    def full(self) -> Path:
        return STUDY_DIR / f"{self.id}-full.toml"

    @property
    def notebook(self) -> str:
        return f"study_{self.id}"


def reference(study: str | None = None) -> pd.DataFrame:
    """The published figures (data/reference/published.csv), all or one study's."""
    df = pd.read_csv(REFERENCE, dtype={"study": str, "setting": str, "note": str})
    return df[df.study == study].reset_index(drop=True) if study else df


# ---- helpers over an analysis -------------------------------------------------------------------------------

def _pick(df: pd.DataFrame, **where: Any) -> pd.DataFrame:
    for k, v in where.items():
        if k not in df:
            return df[:0]
        df = df[df[k].isin(v)] if isinstance(v, (list, tuple, set)) else df[df[k] == v]
    return df


def _ratio(a: CampaignAnalysis, metric: str = "tps", **where: Any) -> pd.Series | None:
    """The comparison row (ratio, ci_low, ci_high, verdict) against async; the best over the rows that match
    (the studies report the best flow-control setting)."""
    c = _pick(a.comparisons, metric=metric, **where) if not a.comparisons.empty else pd.DataFrame()
    if c.empty:
        return None
    return c.sort_values("ratio").iloc[-1 if metric == "tps" else 0]


def _mean(df: pd.DataFrame, col: str) -> float:
    v = df[col].dropna() if col in df else pd.Series(dtype=float)
    return float(v.mean()) if len(v) else np.nan


def _judge(value: float, low: float, high: float, *, below: float | None = None, above: float | None = None) -> str:
    """yes / not shown / no for 'value is below ``below``' (or above ``above``), given an interval."""
    if value is None or not np.isfinite(value):
        return NOT_MEASURED
    if below is not None:
        if not value < below:
            return NO
        return YES if np.isfinite(high) and high < below else NOT_SHOWN
    if not value > above:
        return NO
    return YES if np.isfinite(low) and low > above else NOT_SHOWN


def _claim(claim: str, published: str, measured: float | str | None, holds: str, how: str) -> dict[str, Any]:
    if isinstance(measured, float):
        measured = "n/a" if not np.isfinite(measured) else f"{measured:.3g}"
    return {"claim": claim, "published": published, "measured": measured if measured is not None else "n/a",
            "holds": holds, "how": how}


def _ratio_claim(claim: str, published: str, row: pd.Series | None, *, below: float | None = None,
                 above: float | None = None, how: str) -> dict[str, Any]:
    if row is None:
        return _claim(claim, published, None, NOT_MEASURED, how)
    holds = _judge(row.ratio, row.ci_low, row.ci_high, below=below, above=above)
    return _claim(claim, published, f"{row.ratio:.2f} [{row.ci_low:.2f}, {row.ci_high:.2f}]", holds, how)


SINGLE_RUN_FACTOR = 1.25  # with one run a side, a difference counts only beyond 25% (3x the ~8% run-to-run noise here)


def _two(claim: str, published: str, a_vals: Any, b_vals: Any, *, less: bool, how: str) -> dict[str, Any]:
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
            text = f"ratio {np.exp(m):.2f} [{lo:.2f}, {hi:.2f}] over {len(logs)} paired configurations"
            return _claim(claim, published, text, YES if right else NO if wrong else NOT_SHOWN, how)
    a = np.atleast_1d(np.asarray(a_vals, dtype=float))
    b = np.atleast_1d(np.asarray(b_vals, dtype=float))
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if not len(a) or not len(b) or b.mean() == 0:
        return _claim(claim, published, None, NOT_MEASURED, how)
    r = a.mean() / b.mean()
    text = f"{a.mean():.4g} vs {b.mean():.4g}"
    if len(a) >= 2 and len(b) >= 2:
        _, lo, hi = fieller(a, b, 0.95)
        text += f" (ratio {r:.2f} [{lo:.2f}, {hi:.2f}], {len(a)}+{len(b)} runs)"
        right, wrong = (hi < 1, lo > 1) if less else (lo > 1, hi < 1)
    else:
        text += f" (ratio {r:.2f}, one run a side: counts beyond x{SINGLE_RUN_FACTOR:g})"
        right = r < 1 / SINGLE_RUN_FACTOR if less else r > SINGLE_RUN_FACTOR
        wrong = r > SINGLE_RUN_FACTOR if less else r < 1 / SINGLE_RUN_FACTOR
    return _claim(claim, published, text, YES if right else NO if wrong else NOT_SHOWN, how)


def _paired(a: pd.DataFrame, b: pd.DataFrame, col: str, keys: tuple[str, ...] = ("cluster", "workload", "threads")
            ) -> np.ndarray:
    """Ratios a/b of ``col`` for the configurations both sides share (the other dimensions paired away)."""
    keys = tuple(k for k in keys if k in a and k in b)
    if a.empty or b.empty:
        return np.array([])
    j = a.groupby(list(keys))[col].mean().to_frame("a").join(b.groupby(list(keys))[col].mean().to_frame("b"),
                                                             how="inner")
    return (j.a / j.b).replace([np.inf, -np.inf], np.nan).dropna().to_numpy(float)


def _vals(df: pd.DataFrame, col: str) -> np.ndarray:
    return df[col].dropna().to_numpy(float) if col in df and len(df) else np.array([])


def _sizes(a: CampaignAnalysis) -> dict[str, int]:
    return views.cluster_sizes(a)


def _rtts(a: CampaignAnalysis) -> dict[str, float]:
    """The largest RTT from each cluster's node 1 to any of its nodes (0: all in one site)."""
    lab = views.campaign_record(a).get("lab") or {}
    out: dict[str, float] = {}
    for site in (lab.get("sites") or {}).values():
        for node in site.get("nodes", []):
            c = node.rsplit("-", 1)[0]
            out[c] = max(out.get(c, 0.0), float(site.get("rtt_ms", 0.0)))
    return out


def _remote(claim: str, published: str, system: str) -> dict[str, Any]:
    return _claim(claim, published, None, NOT_MEASURED, f"{system} needs a remote lab (issue 6)")


# ---- the five studies ----------------------------------------------------------------------------------------

def _claims_000(a: CampaignAnalysis) -> list[dict[str, Any]]:
    out = []
    sizes = _sizes(a)
    galera = sorted((c for c, t in a.runs[["cluster", "topology"]].drop_duplicates().itertuples(index=False)
                     if t == "galera"), key=lambda c: sizes.get(c, 0))
    small = galera[0] if galera else None
    for wl, pub in (("oltp_read_write", "0.30 durable, 0.38 relaxed (9 members); 0.46 relaxed (3)"),
                    ("oltp_update_index", "0.10 durable, 0.125 relaxed (9 members); 0.35 relaxed (3)")):
        for dur in ("durable", "relaxed"):
            row = _ratio(a, cluster=small, workload=wl, durability=dur) if small else None
            out.append(_ratio_claim(f"Galera ({sizes.get(small, '?')} nodes) delivers less throughput than async: "
                                    f"{wl}, {dur}", pub, row, below=1.0,
                                    how="ratio of mean TPS vs async, best flow-control setting, Fieller 95%"))
    r_rw = _ratio(a, cluster=small, workload="oltp_read_write", durability="relaxed") if small else None
    r_ui = _ratio(a, cluster=small, workload="oltp_update_index", durability="relaxed") if small else None
    out.append(_two("Galera's ratio vs async is lower on update-index than on OLTP read-write",
                    "0.35 vs 0.46 (3 members, relaxed)", r_ui.ratio if r_ui is not None else np.nan,
                    r_rw.ratio if r_rw is not None else np.nan, less=True, how="best ratio per workload, relaxed"))
    if len(galera) >= 2:
        big = galera[-1]
        for wl in ("oltp_read_write", "oltp_update_index"):
            rs = _ratio(a, cluster=small, workload=wl, durability="relaxed")
            rb = _ratio(a, cluster=big, workload=wl, durability="relaxed")
            pub = "0.38 (9) vs 0.46 (3)" if wl == "oltp_read_write" else "0.125 (9) vs 0.35 (3)"
            out.append(_two(f"More Galera nodes, lower ratio vs async ({wl}, relaxed)", pub,
                            rb.ratio if rb is not None else np.nan, rs.ratio if rs is not None else np.nan, less=True,
                            how=f"{big} ({sizes[big]} nodes) vs {small} ({sizes[small]} nodes), relaxed"))
    rd = _ratio(a, cluster=small, workload="oltp_read_write", durability="durable") if small else None
    rr = r_rw
    out.append(_two("Durability costs Galera more than async (OLTP RW ratio lower when durable)",
                    "0.30 durable vs 0.38 relaxed (9 members)", rd.ratio if rd is not None else np.nan,
                    rr.ratio if rr is not None else np.nan, less=True, how=f"{small}, ratio vs async"))
    try:
        s = views.sustained(a)
    except AnalysisError:
        s = pd.DataFrame()
    for row in s.itertuples(index=False):
        out.append(_two(f"Sustained throughput is below peak: {row.label} {row.workload}",
                        "sustained, not peak, is the study's headline metric", row.sustained_tps, row.peak_tps,
                        less=True, how=f"open-loop search, bracket {row.sustained_tps:.0f}-{row.first_failing_tps:.0f}"
                                       f" tps ({row.status}){', FC_LIMITED' if row.fc_limited else ''}"))
    out.append(_remote("Group Replication delivers 84% (OLTP RW) and over 60% (update-index) of async",
                       "0.84 / 0.60 (9 members, durable)", "MySQL Group Replication"))
    return out


def _latency(a: CampaignAnalysis, cluster: str) -> float:
    runs = _pick(views.measured(a), cluster=cluster, workload="insert_single", threads=1)
    return _mean(runs, "summary_lat_avg_ms")


def _claims_001(a: CampaignAnalysis) -> list[dict[str, Any]]:
    rtt = _rtts(a)
    topo = dict(a.runs[["cluster", "topology"]].drop_duplicates().itertuples(index=False))
    wan_rtt = max(rtt.values(), default=np.nan)
    control = next((c for c, t in topo.items() if t == "async" and not rtt.get(c)), None)
    semi = next((c for c, t in topo.items() if t == "semisync" and rtt.get(c)), None)
    g1 = next((c for c, t in topo.items() if t == "galera" and not rtt.get(c)), None)
    g2 = next((c for c, t in topo.items() if t == "galera" and rtt.get(c)), None)
    out = []
    lc = _latency(a, control) if control else np.nan
    out.append(_claim("Control (async) commit latency is well under a millisecond", "0.25 ms", lc,
                      NOT_MEASURED if not np.isfinite(lc) else YES if lc < 1.0 else NO,
                      "mean latency of single-row autocommit INSERTs, 1 client"))
    for name, cluster, pub in (("Semi-sync", semi, "102 ms at ~100 ms RTT (1.02 RTT)"),
                               ("Galera across two sites", g2, "108 ms at ~100 ms RTT (1.08 RTT)")):
        lat = _latency(a, cluster) if cluster else np.nan
        rtts = lat / rtt[cluster] if cluster and np.isfinite(lat) else np.nan
        holds = NOT_MEASURED if not np.isfinite(rtts) else YES if 0.8 <= rtts <= 1.5 else NO
        out.append(_claim(f"{name} commit latency is about one round trip", pub,
                          f"{lat:.1f} ms = {rtts:.2f} RTT" if np.isfinite(rtts) else None, holds,
                          "mean INSERT latency / the lab's RTT (within 0.8-1.5 RTT)"))
    lg = _latency(a, g1) if g1 else np.nan
    out.append(_claim("Galera in one site commits in a few milliseconds, far below one WAN round trip",
                      "2 ms (vs 0.25 ms control)", lg,
                      NOT_MEASURED if not np.isfinite(lg) else YES if lg < 0.1 * (wan_rtt or 100) else NO,
                      "mean INSERT latency below 0.1 RTT"))
    tps = {c: _vals(_pick(views.measured(a), cluster=c, threads=32, workload="oltp_read_write"), "tps_mean")
           for c in topo}
    out.append(_two("32 clients: Galera across two sites outperforms semi-sync", "224 vs 10 tps (PS/PXC 5.5)",
                    tps.get(g2, []), tps.get(semi, []), less=False, how="TPS per run, OLTP read-write, 32 clients"))
    best = max((tps.get(c, np.array([])) for c in (g2, semi)), key=lambda v: v.mean() if len(v) else -1)
    out.append(_two("32 clients: the WAN costs both synchronous set-ups throughput against the control",
                    "224 and 10 vs 840 tps", best, tps.get(control, []), less=True,
                    how="the better WAN set-up vs the control, TPS per run, 32 clients"))
    return out


def _claims_002(a: CampaignAnalysis) -> list[dict[str, Any]]:
    m = views.measured(a)
    out = []
    g = m[m.topology == "galera"] if "topology" in m else m[:0]
    if "fc_limit" in g and g.fc_limit.notna().any():
        tight, loose = g.fc_limit.min(), g.fc_limit.max()
        t, lo = _pick(g, fc_limit=tight), _pick(g, fc_limit=loose)
        keys = ("workload", "threads", "applier_threads")
        how = f"Galera fc_limit {tight:g} / {loose:g}, paired over workloads, writers and appliers"
        out.append(_two("Tight flow control cuts the writer's throughput", "less than a third of the rows/s "
                        "(fc 25 vs 25000)", _paired(t, lo, "tps_mean", keys), 1.0, less=True, how=how))
        out.append(_two("Tight flow control lowers replica lag", "1363 vs 3849 entries at worst",
                        _paired(t, lo, "lag_p95_ms", keys), 1.0, less=True, how=how + "; p95 heartbeat lag"))
        out.append(_two("Replicas need longer to catch up after the load without flow control",
                        "360 s (no FC) vs 130 s (FC 25)", _paired(lo, t, "catch_up_s", keys), 1.0, less=False,
                        how=f"catch-up (upper bound) fc_limit {loose:g} / {tight:g}, paired"))
    if "parallel_threads" in m and m.parallel_threads.notna().any():
        one = _pick(m, parallel_threads=0)
        many = _pick(m, parallel_threads=m.parallel_threads.max())
        out.append(_two("More apply threads lower the replicas' lag", "Gr3/4 ~1k entries with 8 workers",
                        _paired(many, one, "lag_p95_ms", ("workload", "threads")), 1.0, less=True,
                        how="async replicas, parallel / serial apply, p95 lag, paired over workloads and writers"))
    out.append(_remote("Group Replication's flow control leaves replicas 154 to 1363 entries behind",
                       "154 / ~1000 / 1363 entries", "MySQL Group Replication"))
    return out


def _claims_003(a: CampaignAnalysis) -> list[dict[str, Any]]:
    out = []
    m = views.measured(a)
    serial = _pick(m, parallel_threads=0)
    verdicts = serial["lag_verdict"].value_counts() if "lag_verdict" in serial and len(serial) else pd.Series()
    holds = (NOT_MEASURED if verdicts.empty else YES if verdicts.get("GROWING", 0) * 2 > verdicts.sum()
             else NO if verdicts.get("SUSTAINED", 0) * 2 > verdicts.sum() else NOT_SHOWN)
    out.append(_claim("Serial apply: replica lag keeps growing under write-only load", "grows throughout 30 min",
                      ", ".join(f"{n} {v}" for v, n in verdicts.items()) or None, holds,
                      "lag-growth test (spec F) on the worst replica's heartbeat lag (INCONCLUSIVE: run longer)"))
    cpu = views.replica_cpu(a) if len(m) else pd.DataFrame(columns=["run_id", "replica_cpu_pct"])
    m = m.merge(cpu, on="run_id", how="left")
    for k in (4, 8):
        out.append(_two(f"{k} apply threads: lag far below serial apply", "under 10 s with 4 workers, vs growing",
                        _vals(_pick(m, parallel_threads=k), "lag_p95_ms"), _vals(_pick(m, parallel_threads=0),
                                                                                "lag_p95_ms"),
                        less=True, how="p95 lag per run, ms"))
    out.append(_two("Parallel apply costs replica CPU", "~30% of 16 cores with 4 workers",
                    _vals(_pick(m, parallel_threads=4), "replica_cpu_pct"),
                    _vals(_pick(m, parallel_threads=0), "replica_cpu_pct"), less=False,
                    how="replica CPU % per run, one core = 100"))
    out.append(_remote("Aurora replicas lag under 35 ms using ~2.7% CPU", "35 ms, 2.7% of 16 cores", "Amazon Aurora"))
    return out


def _claims_004(a: CampaignAnalysis) -> list[dict[str, Any]]:
    m = views.measured(a)
    m = m[m.topology == "galera"] if "topology" in m else m
    out = []
    if "fc_limit" in m and m.fc_limit.notna().any():
        low, high = m.fc_limit.min(), m.fc_limit.max()
        for wl in sorted(m.workload.unique()):
            d, l_ = _pick(m, fc_limit=low, workload=wl), _pick(m, fc_limit=high, workload=wl)
            out.append(_two(f"A looser flow-control limit gives more throughput ({wl})",
                            "GR: 25000 beats 1000; PXC default raised 16 -> 100", _paired(l_, d, "tps_mean"), 1.0,
                            less=False, how=f"Galera fc_limit {high:g} / {low:g}, TPS ratio per cluster and threads"))
        d, l_ = _pick(m, fc_limit=low), _pick(m, fc_limit=high)
        out.append(_two("... at the price of staler replicas", "GR 25000: 'a lot of outdated data'",
                        _paired(l_, d, "lag_p95_ms"), 1.0, less=False,
                        how=f"p95 lag ratio fc_limit {high:g} / {low:g} per cluster, workload and threads"))
    lab = (views.campaign_record(a).get("lab") or {}).get("clusters") or {}
    on = [c for c, spec in lab.items() if spec.get("topology") == "galera" and spec.get("binlog")]
    off = [c for c, spec in lab.items() if spec.get("topology") == "galera" and not spec.get("binlog")]
    if on and off:
        out.append(_two("Galera without a binary log is faster", "PXC 5.7.17: binlog off charts above binlog on",
                        _paired(_pick(m, cluster=off), _pick(m, cluster=on), "tps_mean", keys=("workload", "threads",
                                                                                               "fc_limit")), 1.0,
                        less=False, how=f"TPS ratio {off[0]} (binlog off) / {on[0]} (binlog on) per configuration"))
    out.append(_remote("PXC 5.7.17 performs on the level of Group Replication", "charts", "MySQL Group Replication"))
    return out


STUDIES: dict[str, Study] = {s.id: s for s in [
    Study("000", "Group Replication vs Galera vs async: scaling, durability, flow control, sustained throughput",
          "000_96e337977dbc8768.txt",
          "async vs Galera 3 and 5 nodes (7 and 9 in the full lab), durable vs relaxed, OLTP RW and update-index, "
          "flow-control limits, ratios vs async, sustained throughput, latency, stability",
          "Group Replication (MySQL 5.7/8.0)", _claims_000),
    Study("001", "Galera vs semi-sync across a 100 ms WAN", "001_bf08bb00fa047e36.txt",
          "control async, semi-sync with its replica 100 ms away, Galera in one site and across two sites: "
          "single-row commit latency and 32-client throughput", "nothing: all four set-ups run locally", _claims_001),
    Study("002", "Flow control and replica lag in transactions; catch-up after the load", "002_5dd48ec1db17f2e3.txt",
          "Galera with two nodes 10 ms away and flow control tight vs loose, async replicas with 1 vs 8 apply "
          "threads; 1 and 8 writers, single-row and 50-row inserts; backlog over time and catch-up",
          "Group Replication (the study's subject)", _claims_002),
    Study("003", "Multi-threaded replica apply vs lag and replica CPU", "003_7b7528bffa175477.txt",
          "write-only load on an async primary, replicas applying with 0, 4 and 8 threads: lag over time and "
          "replica CPU", "Amazon Aurora", _claims_003),
    Study("004", "Galera flow-control limits and binary log vs throughput", "004_55d2031b0749653a.txt",
          "Galera with and without a binary log, flow-control limits from the default to very loose, OLTP RW, "
          "update-key and update-no-key at rising threads", "Group Replication, MariaDB 10.2 as published",
          _claims_004),
]}


def get(study: str) -> Study:
    key = study.removeprefix("study").zfill(3)
    if key not in STUDIES:
        raise StudyError(f"no study {study!r}", hint=f"studies: {', '.join(STUDIES)}")
    return STUDIES[key]


def study_of(a: CampaignAnalysis) -> Study | None:
    """The study a campaign reproduces, from its name (study000-quick ...)."""
    name = (views.campaign_record(a).get("campaign") or {}).get("name") or (a.path.name if a.path else "")
    if name.startswith("study") and name[5:8] in STUDIES:
        return STUDIES[name[5:8]]
    return None


@dataclass
class ReferenceComparison:
    study: Study
    claims: pd.DataFrame
    figures: pd.DataFrame

    @property
    def summary(self) -> dict[str, int]:
        return self.claims.holds.value_counts().to_dict()


def _figures(a: CampaignAnalysis, study: Study) -> pd.DataFrame:
    """Every published number of the study with, where the campaign has its local counterpart, ours."""
    ref = reference(study.id)
    sizes = _sizes(a)
    topo = dict(a.runs[["cluster", "topology"]].drop_duplicates().itertuples(index=False))
    measured, basis = [], []
    for row in ref.itertuples(index=False):
        value, how = np.nan, ""
        if row.topology in ("group_replication", "aurora"):
            how = "needs a remote lab (issue 6)"
        elif row.quantity == "tps_ratio" and row.relative_to == "async":
            clusters = [c for c, t in topo.items() if t == row.topology]
            if clusters:
                nodes = row.nodes if pd.notna(row.nodes) else None
                best = min(clusters, key=lambda c: abs(sizes.get(c, 0) - (nodes or sizes.get(c, 0))))
                r = _ratio(a, cluster=best, workload=row.workload, durability=row.durability)
                if r is not None:
                    value, how = float(r.ratio), f"{best} ({sizes.get(best)} nodes)"
        elif row.quantity == "sustained_tps_ratio" and row.relative_to == "async":
            try:
                sv = views.sustained(a)
            except AnalysisError:
                sv = pd.DataFrame()
            if not sv.empty:
                where = {"workload": row.workload, **({"durability": row.durability} if pd.notna(row.durability)
                                                       and "durability" in sv else {})}
                base, mine = _pick(sv, topology="async", **where), _pick(sv, topology=row.topology, **where)
                if len(base) and len(mine):
                    value = float(mine.sustained_tps.max() / base.sustained_tps.max())
                    how = f"{mine.cluster.iloc[0]} vs {base.cluster.iloc[0]}, best sustained rates"
        elif row.quantity == "commit_latency_ms":
            rtt = _rtts(a)
            want = float(str(row.setting).split("=")[1]) if "rtt_ms=" in str(row.setting) else 0.0
            c = next((c for c, t in topo.items() if t == row.topology and (rtt.get(c, 0.0) > 0) == (want > 0)), None)
            if c:
                value, how = _latency(a, c), f"{c}, RTT {rtt.get(c, 0.0):g} ms"
        elif row.quantity == "tps" and study.id == "001":
            rtt = _rtts(a)
            want = float(str(row.setting).split("=")[1]) if "rtt_ms=" in str(row.setting) else 0.0
            c = next((c for c, t in topo.items() if t == row.topology
                      and (rtt.get(c, 0.0) > 0) == (want > 0 and row.topology != "async")), None)
            if c:
                value = _mean(_pick(views.measured(a), cluster=c, threads=32, workload="oltp_read_write"), "tps_mean")
                how = f"{c} (absolute TPS of other hardware: not judged)"
        elif row.quantity == "replica_cpu_pct" and row.topology == "async":
            try:
                value = _mean(_pick(views.parallel_apply(a), parallel_threads=4), "replica_cpu_pct")
                how = "one core = 100% (the study: % of 16 cores)"
            except AnalysisError:
                pass
        elif row.quantity in ("lag_max_s", "lag_min_s") and row.topology == "async":
            m = _pick(views.measured(a), parallel_threads=4)
            value = (m.lag_max_ms.max() if row.quantity == "lag_max_s" else m.lag_p95_ms.min()) / 1000 if len(m) else np.nan
            how = "4 apply threads, heartbeat lag"
        elif row.quantity == "catch_up_s":
            m = views.measured(a)
            fc = str(row.setting)
            if "fc_limit" in m and m.fc_limit.notna().any():
                want = m.fc_limit.min() if "fc_limit=25;" in fc + ";" else m.fc_limit.max()
                value = _mean(_pick(m, fc_limit=want, workload="insert_batch", threads=8), "catch_up_s")
                how = f"Galera fc_limit {want:g}, insert_batch 8 writers"
        measured.append(value)
        basis.append(how or "no local counterpart")
    return ref.assign(measured=measured, measured_how=basis)


def compare_reference(campaign: str | Path | CampaignAnalysis, study: str | None = None) -> ReferenceComparison:
    """The campaign's results next to the published figures of its study (by name, or ``study``)."""
    a = campaign if isinstance(campaign, CampaignAnalysis) else analyze(campaign)
    s = get(study) if study else study_of(a)
    if s is None:
        raise StudyError(f"campaign {a.path} does not belong to a study",
                         hint=f"name the study: --study {' | '.join(STUDIES)}")
    claims = pd.DataFrame(s.claims(a), columns=["claim", "published", "measured", "holds", "how"])
    return ReferenceComparison(s, claims, _figures(a, s))


def record(result: ReferenceComparison, folder: Path) -> Path:
    """Write the comparison as CSV files (claims.csv, figures.csv) and a JSON summary into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    result.claims.to_csv(folder / "claims.csv", index=False)
    result.figures.to_csv(folder / "figures.csv", index=False)
    (folder / "summary.json").write_text(json.dumps({"study": result.study.id, "holds": result.summary}, indent=2))
    return folder


# ---- each study's charts -------------------------------------------------------------------------------------

def _fig_wan(a):
    from benchlib import charts

    w = views.wan(a)
    w = w[(w.threads == 1) & (w.workload == "insert_single")] if "workload" in w else w[w.threads == 1]
    return charts.latency_vs_rtt(w.assign(lat_mean_ms=w.cluster.map(lambda c: _latency(a, c))), y="lat_mean_ms",
                                 color="cluster", title="Single-row commit latency (mean) vs round-trip time")


def _fig_throughput_32(a):
    from benchlib import charts

    c = views.configs(a)
    c = c[(c.threads == c.threads.max()) & (c.workload == "oltp_read_write")].assign(label=lambda d: d.cluster)
    return charts.catch_up(c, y="tps_mean", color="topology", title=f"Throughput with {int(c.threads.max())} clients"
                           ).update_layout(yaxis_title="transactions/s")


def _fig_backlog(a):
    from benchlib import charts

    m = views.measured(a)
    m = m[m.topology == "galera"] if (m.topology == "galera").any() else m
    rid = str(m.sort_values("catch_up_s").run_id.iloc[-1])
    df, end, catch = views.backlog_of_run(a, rid)
    return charts.lag_over_time(df, y="trx_behind", load_end=end, catch_up_s=catch, y_title="transactions behind",
                                title=f"Backlog per node ({rid})")


def _fig_serial_lag(a):
    from benchlib import charts

    m = views.measured(a)
    rid = str(m.sort_values("lag_p95_ms").run_id.iloc[-1])
    lag, end, catch = views.lag_of_run(a, rid)
    return charts.lag_over_time(lag, load_end=end, catch_up_s=catch, title=f"Replica lag over time ({rid})")


def _fig_throughput_threads(a):
    from benchlib import charts

    c = views.configs(a)
    return charts.throughput_vs_threads(c.assign(series=c.cluster + " fc " + c.fc_limit.map("{:g}".format)),
                                        color="series", dash="workload", error_low="ci_low", error_high="ci_high")


#: each study's charts: a chart of the report's catalogue (by name) or one of the study's own
FIGURES: dict[str, list[tuple[str, str | Callable[[CampaignAnalysis], Any]]]] = {
    "000": [("Throughput relative to async", "ratio_vs_baseline"),
            ("Maximum sustained throughput vs peak", "sustained"), ("Latency vs client threads", "latency_vs_threads"),
            ("Stability over time", "stability"), ("Flow-control limits", "flow_control")],
    "001": [("Commit latency vs round-trip time", _fig_wan), ("Throughput with 32 clients", _fig_throughput_32)],
    "002": [("Backlog in transactions per node", _fig_backlog), ("Catch-up after the load", "catch_up"),
            ("Flow-control limits", "flow_control")],
    "003": [("Parallel apply: throughput, lag, replica CPU", "parallel_apply"),
            ("Replica lag over time, worst run", _fig_serial_lag)],
    "004": [("Throughput vs threads per flow-control limit", _fig_throughput_threads),
            ("Flow-control limits: throughput and lag", "flow_control")],
}


def figures(a: CampaignAnalysis, study: str | Study | None = None) -> dict[str, Any]:
    """The study's charts that this campaign has data for, by title."""
    from benchlib.charts import ChartError
    from benchlib.charts.catalogue import CATALOGUE

    s = study if isinstance(study, Study) else get(study) if study else study_of(a)
    if s is None:
        return {}
    out = {}
    for title, entry in FIGURES[s.id]:
        build = CATALOGUE[entry][1] if isinstance(entry, str) else entry
        try:
            out[title] = build(a)
        except (AnalysisError, ChartError, KeyError, IndexError, AttributeError):
            continue
    return out
