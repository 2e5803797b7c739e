"""Study 002: Flow control and replica lag in transactions; catch-up after the load."""

from __future__ import annotations

from typing import Any

import pandas as pd

from benchlib.analysis import views
from benchlib.analysis.campaign import AnalysisError, CampaignAnalysis
from benchlib.studies.base import Published, Study, register
from benchlib.studies.judge import compare, paired, pick, remote_claim, stale_claim, stale_rate



def _claims_002(a: CampaignAnalysis) -> list[dict[str, Any]]:
    m = views.measured(a)
    out = []
    g = views.of_topology(m, "galera")
    if "fc_limit" in g and g.fc_limit.notna().any():
        tight, loose = g.fc_limit.min(), g.fc_limit.max()
        t, lo = pick(g, fc_limit=tight), pick(g, fc_limit=loose)
        keys = ("workload", "threads", "applier_threads")
        how = f"Galera fc_limit {tight:g} / {loose:g}, paired over workloads, writers and appliers"
        out.append(compare("Tight flow control cuts the writer's throughput", "less than a third of the rows/s "
                        "(fc 25 vs 25000)", paired(t, lo, "tps_mean", keys), 1.0, less=True, how=how))
        out.append(compare("Tight flow control lowers replica lag", "1363 vs 3849 entries at worst",
                        paired(t, lo, "lag_p95_ms", keys), 1.0, less=True, how=how + "; p95 heartbeat lag"))
        out.append(compare("Replicas need longer to catch up after the load without flow control",
                        "360 s (no FC) vs 130 s (FC 25)", paired(lo, t, "catch_up_s", keys), 1.0, less=False,
                        how=f"catch-up (upper bound) fc_limit {loose:g} / {tight:g}, paired"))
    if "parallel_threads" in m and m.parallel_threads.notna().any():
        one = pick(m, parallel_threads=0)
        many = pick(m, parallel_threads=m.parallel_threads.max())
        out.append(compare("More apply threads lower the replicas' lag", "Gr3/4 ~1k entries with 8 workers",
                        paired(many, one, "lag_p95_ms", ("workload", "threads")), 1.0, less=True,
                        how="async replicas, parallel / serial apply, p95 lag, paired over workloads and writers"))
    out += _group_replication_claims(a, m)
    out.append(stale_claim("With Group Replication, an application cannot split writes and reads and expect "
                           "consistency", "'the gap is too high'",
                           stale_rate(a, system="group_replication", consistency="EVENTUAL"), stale=True,
                           how="stale-read probe: a writer on the primary, readers on the other members under the "
                               "default consistency (EVENTUAL): yes when a read returned a value older than one "
                               "already acknowledged"))
    out.append(stale_claim("With Galera, reads can be split to other nodes and stay consistent",
                           "'guaranteeing consistency across nodes allows you to transparently split write/read "
                           "operations'", stale_rate(a, system="galera", consistency="wsrep_sync_wait=0"), stale=False,
                           how="stale-read probe on the other Galera nodes under the default wsrep_sync_wait=0: no "
                               "when a read returned a stale value (wsrep_sync_wait=1 is what makes reads causal)"))
    return out


def gr_backlog_max(a: CampaignAnalysis) -> pd.Series:
    """Per run: the largest backlog (transactions queued to certify and apply) any member had during the load."""
    cl = a.frames.get("cluster", pd.DataFrame())
    if cl.empty or "metric" not in cl:
        return pd.Series(dtype=float)
    window = [c for c in ("load_start_s", "load_end_s") if c not in cl]
    cl = cl[cl.metric == "gr_backlog"].join(a.runs.set_index("run_id")[window], on="run_id")
    cl = cl[(cl.t_s >= cl.load_start_s) & (cl.t_s <= cl.load_end_s)]
    return cl.groupby("run_id", observed=True).value.max()


def _group_replication_claims(a: CampaignAnalysis, m: pd.DataFrame) -> list[dict[str, Any]]:
    text = "Group Replication's flow control leaves replicas 154 to 1363 entries behind"
    g = views.of_system(m, "group_replication")
    if g.empty or "gr_applier_threshold" not in g or g.gr_applier_threshold.nunique() < 2:
        return [remote_claim(text, "154 / ~1000 / 1363 entries", "MySQL Group Replication")]
    g = g.assign(backlog_max=g.run_id.map(gr_backlog_max(a)))
    tight, loose = g.gr_applier_threshold.min(), g.gr_applier_threshold.max()
    t, lo = pick(g, gr_applier_threshold=tight), pick(g, gr_applier_threshold=loose)
    keys = ("workload", "threads", "applier_threads")
    how = f"gr_applier_threshold {tight:g} / {loose:g}, paired over workloads, writers and applier threads"
    worst = t.backlog_max.max()
    return [
        compare("Tight Group Replication flow control keeps the backlog smaller", "1363 (FC 25) vs 3849 entries "
                "at worst", paired(t, lo, "backlog_max", keys), 1.0, less=True,
                how=how + f"; largest member backlog during the load (worst with {tight:g}: {worst:.0f} transactions)"),
        compare("Tight Group Replication flow control cuts the writer's throughput", "fewer rows/s with FC 25",
                paired(t, lo, "tps_mean", keys), 1.0, less=True, how=how),
    ]


def _fig_backlog(a):
    from benchlib import charts

    m = views.measured(a)
    m = views.of_topology(m, "galera", or_all=True)
    if m.catch_up_s.notna().sum() == 0:
        raise AnalysisError("no run with a measured catch-up to show the backlog of")
    rid = str(m.sort_values("catch_up_s").run_id.iloc[-1])
    df, end, catch = views.backlog_of_run(a, rid)
    return charts.lag_over_time(df, y="trx_behind", load_end=end, catch_up_s=catch, y_title="transactions behind",
                                title=f"Backlog per node ({rid})")


register(Study("002", "Flow control and replica lag in transactions; catch-up after the load", Published("Group Replication: The Sweet and the Sour", "Marco Tusa", "2017-08-01",
                    "Percona Database Performance Blog", "https://www.percona.com/blog/group-replication-sweet-sour/"),
          "Galera with two nodes 10 ms away and flow control tight vs loose, async replicas with 1 vs 8 apply "
          "threads, MySQL Group Replication with flow control tight vs its default and 1 vs 8 applier threads; 1 and "
          "8 writers, single-row and 50-row inserts; backlog over time and catch-up",
          "Group Replication on MySQL 8.0 as published (here: MySQL 9.7)", _claims_002,
               figures=[("Backlog in transactions per node", _fig_backlog), ("Catch-up after the load", "catch_up"),
           ("Flow-control limits", "flow_control")]))
