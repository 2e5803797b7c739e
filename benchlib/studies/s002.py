"""Study 002: Flow control and replica lag in transactions; catch-up after the load."""

from __future__ import annotations

from typing import Any

from benchlib.analysis import views
from benchlib.analysis.campaign import AnalysisError, CampaignAnalysis
from benchlib.studies.base import Study, register
from benchlib.studies.judge import compare, paired, pick, remote_claim



def _claims_002(a: CampaignAnalysis) -> list[dict[str, Any]]:
    m = views.measured(a)
    out = []
    g = m[m.topology == "galera"] if "topology" in m else m[:0]
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
    out.append(remote_claim("Group Replication's flow control leaves replicas 154 to 1363 entries behind",
                       "154 / ~1000 / 1363 entries", "MySQL Group Replication"))
    return out


def _fig_backlog(a):
    from benchlib import charts

    m = views.measured(a)
    m = m[m.topology == "galera"] if (m.topology == "galera").any() else m
    if m.catch_up_s.notna().sum() == 0:
        raise AnalysisError("no run with a measured catch-up to show the backlog of")
    rid = str(m.sort_values("catch_up_s").run_id.iloc[-1])
    df, end, catch = views.backlog_of_run(a, rid)
    return charts.lag_over_time(df, y="trx_behind", load_end=end, catch_up_s=catch, y_title="transactions behind",
                                title=f"Backlog per node ({rid})")


register(Study("002", "Flow control and replica lag in transactions; catch-up after the load", "002_5dd48ec1db17f2e3.txt",
          "Galera with two nodes 10 ms away and flow control tight vs loose, async replicas with 1 vs 8 apply "
          "threads; 1 and 8 writers, single-row and 50-row inserts; backlog over time and catch-up",
          "Group Replication (the study's subject)", _claims_002,
               figures=[("Backlog in transactions per node", _fig_backlog), ("Catch-up after the load", "catch_up"),
           ("Flow-control limits", "flow_control")]))
