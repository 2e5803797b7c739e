"""The fault axis's views: fault runs and their configurations' summaries, the unavailability per writer (direct, or
behind a proxy), the timeline of one fault run and the rejoins, as the charts and the failover notebook draw them."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchlib.analysis.campaign import AnalysisError, CampaignAnalysis
from benchlib.axes.fault.analysis import FaultAnalysis

__all__ = ["failover_runs", "failover_summary", "failover_timeline", "rejoins", "unavailability_by_setting",
           "unavailability_runs", "unavailability_summary"]


def _fault_labels(a: CampaignAnalysis, df: pd.DataFrame) -> pd.DataFrame:
    """``df`` (rows per fault configuration or run) with ``topology`` (the colour) and ``label`` (the cluster, what
    else differs, and the fault when the campaign varied it: "semisync AFTER_SYNC", "gr freeze write_node")."""
    from benchlib.axes.fault.measures import label as fault_label

    out = df.copy()
    out["topology"] = out.cluster.map(a.runs.drop_duplicates("cluster").set_index("cluster").topology)
    from benchlib.axes.fault.measures import LOAD_KEYS, SETTING_PREFIXES

    keys = [c for c in FaultAnalysis.of(a).summary.columns if c in out.columns and (
        c == "cluster" or c in LOAD_KEYS or c.startswith(SETTING_PREFIXES))]
    many = "fault" in out and FaultAnalysis.of(a).failover.fault.nunique() > 1
    out["label"] = [fault_label(r, keys).removesuffix(f" ({r['fault']})") + (f" {r['fault']}" if many else "")
                    for _, r in out.iterrows()]
    return out


def failover_runs(a: CampaignAnalysis) -> pd.DataFrame:
    """Every fault run's measures with its configuration's ``label`` and ``topology`` (the unavailability chart)."""
    if FaultAnalysis.of(a).failover.empty:
        raise AnalysisError("no fault runs in this campaign", hint="add a [fault] table to the campaign spec "
                                                                 "(examples/campaigns/failover.toml)")
    return _fault_labels(a, FaultAnalysis.of(a).failover)


def _proxies(df: pd.DataFrame) -> list[str]:
    return [c.removesuffix("_unavailability_s") for c in df.columns
            if c.endswith("_unavailability_s") and c != "unavailability_s"]


def unavailability_runs(a: CampaignAnalysis) -> pd.DataFrame:
    """``failover_runs``, plus a row per run and proxy for the writer behind it (label "... via haproxy")."""
    runs = failover_runs(a)
    parts = [runs]
    for v in _proxies(runs):
        p = runs.dropna(subset=[f"{v}_unavailability_s", f"{v}_unavailable_at_least_s"], how="all").copy()
        p["unavailability_s"], p["unavailable_at_least_s"] = p[f"{v}_unavailability_s"], p[f"{v}_unavailable_at_least_s"]
        p["label"] = p.label + f" via {v}"
        parts.append(p)
    return pd.concat(parts, ignore_index=True)


def failover_summary(a: CampaignAnalysis) -> pd.DataFrame:
    """The per-configuration failover summary with ``label`` and ``topology``."""
    failover_runs(a)
    return _fault_labels(a, FaultAnalysis.of(a).summary)


def unavailability_summary(a: CampaignAnalysis) -> pd.DataFrame:
    """``failover_summary``, plus a row per configuration and proxy (label "... via haproxy")."""
    s = failover_summary(a)
    parts = [s]
    for v in [c.removesuffix("_unavail_median_s") for c in s.columns if c.endswith("_unavail_median_s")
              and c != "unavail_median_s"]:
        p = s.copy()
        for k in ("median", "median_low", "median_high", "p90", "max"):
            p[f"unavail_{k}_s"] = s[f"{v}_unavail_{k}_s"]
        p["label"] = s.label + f" via {v}"
        parts.append(p)
    return pd.concat(parts, ignore_index=True)


def failover_timeline(a: CampaignAnalysis, bin_s: float = 0.1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per fault configuration, its median run by unavailability: the ledger writer's acknowledged writes per
    second in ``bin_s`` bins around the fault (t = 0), and that run's marks (unavailability window, new primary,
    sysbench restarted) as (label, what, t_s) rows."""
    from benchlib.axes.fault.measures import timeline

    runs = failover_runs(a)
    ledger, events = a.frames["ledger"], a.frames["fault_events"]
    series, marks = [], []
    for lab, g in runs.groupby("label", sort=True):
        g = g.assign(u=g.unavailability_s.fillna(g.get("unavailable_at_least_s", np.inf)))
        pick = g.sort_values("u").iloc[(len(g) - 1) // 2]
        rid = str(pick.run_id)
        t_fault = float(a.runs.set_index("run_id").loc[rid, "fault_at_s"])
        mine = ledger[ledger.run_id.astype(str) == rid]
        tl = timeline(mine, t_fault, bin_s=bin_s, after_s=max(10.0, min(40.0, float(pick.u) + 8)))
        series.append(tl.assign(label=lab, topology=pick.topology, run_id=rid))
        ev = events[events.run_id.astype(str) == rid]
        for what in ("primary", "load_restarted", "released"):
            t = ev[ev.event == what].t_s
            if len(t):
                marks.append({"label": lab, "what": what, "t_s": float(t.min() - t_fault)})
        acked = np.sort(mine.t_done_s[mine.outcome == "acked"].to_numpy(dtype=float))
        before = acked[acked <= t_fault]
        times = acked[acked >= before.max()] if len(before) else acked
        if len(times) > 1 and pick.unavailability_s == pick.unavailability_s:
            k = int(np.argmax(np.diff(times)))
            marks += [{"label": lab, "what": "gap_start", "t_s": float(times[k] - t_fault)},
                      {"label": lab, "what": "gap_end", "t_s": float(times[k + 1] - t_fault)}]
    return pd.concat(series, ignore_index=True), pd.DataFrame(marks, columns=["label", "what", "t_s"])


def rejoins(a: CampaignAnalysis) -> pd.DataFrame:
    """The fault runs with a rejoin under load: cluster, path kind (IST, SST, incremental recovery, clone), the write
    rate asked, and the rejoin's times."""
    runs = failover_runs(a)
    if "rejoin_s" not in runs or runs.rejoin_s.isna().all():
        raise AnalysisError("no rejoin under load in this campaign", hint="fault.rejoin_at_s in the campaign spec "
                                                                        "(examples/campaigns/rejoin.toml)")
    out = runs.dropna(subset=["rejoin_s"]).copy()
    out["rejoin_kind"] = out.rejoin_path.astype(str).str.extract(r"by (IST|SST|clone|incremental recovery)")[0] \
        .fillna("catch-up")
    rate = a.runs.set_index("run_id").get("rate")
    out["rate"] = out.run_id.map(rate) if rate is not None else np.nan
    return out


def unavailability_by_setting(a: CampaignAnalysis) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each fault run of a swept setting that decides failover time (Group Replication's member_expel_timeout,
    Galera's suspect_timeout) with its value, and the prediction over the swept range
    (``benchlib.axes.fault.setting_curves``)."""
    from benchlib.axes.fault.setting_curves import EXPECTED, by_setting, curve

    runs, expected = by_setting(failover_runs(a))
    if runs.empty:
        raise AnalysisError("no setting that decides failover time was swept in this campaign",
                            hint=f"sweep one of {', '.join(EXPECTED)} in [matrix] with a [fault] "
                                 "(examples/campaigns/failover-settings.toml)")
    return runs, curve(expected)
