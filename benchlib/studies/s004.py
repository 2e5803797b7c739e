"""Study 004: Galera flow-control limits and binary log vs throughput."""

from __future__ import annotations

from typing import Any

from benchlib.analysis import views
from benchlib.analysis.campaign import AnalysisError, CampaignAnalysis
from benchlib.studies.base import Published, Study, register
from benchlib.studies.judge import compare, fewer_stale, paired, pick, remote_claim, stale_claim, stale_rate



def _claims_004(a: CampaignAnalysis) -> list[dict[str, Any]]:
    m = views.measured(a)
    m = views.of_topology(m, "galera", or_all="topology" not in m)
    out = []
    if "fc_limit" in m and m.fc_limit.notna().any():
        low, high = m.fc_limit.min(), m.fc_limit.max()
        for wl in sorted(m.workload.unique()):
            d, l_ = pick(m, fc_limit=low, workload=wl), pick(m, fc_limit=high, workload=wl)
            out.append(compare(f"A looser flow-control limit gives more throughput ({wl})",
                            "GR: 25000 beats 1000; PXC default raised 16 -> 100", paired(l_, d, "tps_mean"), 1.0,
                            less=False, how=f"Galera fc_limit {high:g} / {low:g}, TPS ratio per cluster and threads"))
        d, l_ = pick(m, fc_limit=low), pick(m, fc_limit=high)
        out.append(compare("... at the price of staler replicas", "GR 25000: 'a lot of outdated data'",
                        paired(l_, d, "lag_p95_ms"), 1.0, less=False,
                        how=f"p95 lag ratio fc_limit {high:g} / {low:g} per cluster, workload and threads"))
    binlog = views.cluster_facts(a, "binlog")  # run facts: whether each cluster writes a binary log
    galera = set(views.measured(a).query("topology == 'galera'").cluster) if "topology" in a.runs else set()
    on = sorted(c for c, b in binlog.items() if c in galera and bool(b))
    off = sorted(c for c, b in binlog.items() if c in galera and not bool(b))
    if on and off:
        out.append(compare("Galera without a binary log is faster", "PXC 5.7.17: binlog off charts above binlog on",
                        paired(pick(m, cluster=off), pick(m, cluster=on), "tps_mean", keys=("workload", "threads",
                                                                                               "fc_limit")), 1.0,
                        less=False, how=f"TPS ratio {off[0]} (binlog off) / {on[0]} (binlog on) per configuration"))
    out.append(remote_claim("PXC 5.7.17 performs on the level of Group Replication", "charts", "Percona XtraDB Cluster"))
    every = views.measured(a)
    g = views.of_system(every, "group_replication")
    if "gr_applier_threshold" in g and g.gr_applier_threshold.nunique() >= 2:
        tight, loose = g.gr_applier_threshold.min(), g.gr_applier_threshold.max()
        out.append(compare("A tighter Group Replication flow-control threshold costs throughput",
                           "flow control limits throughput (charts)",
                           paired(pick(g, gr_applier_threshold=tight), pick(g, gr_applier_threshold=loose), "tps_mean",
                                  ("workload", "threads")), 1.0, less=True,
                           how=f"gr_applier_threshold {tight:g} / {loose:g}, paired over workloads and clients"))
    return out + _stale_claims_004(a)


def _stale_claims_004(a: CampaignAnalysis) -> list[dict[str, Any]]:
    """The study's stale-read claims, judged on the stale-read probe's reads on the secondaries (GR 5.7.17 had no
    consistency levels; 8.0.14 brought group_replication_consistency)."""
    gr = {"system": "group_replication"}
    runs = a.runs[a.runs.status == "ok"]
    g = views.of_system(runs, "group_replication")
    loose = g.gr_applier_threshold.max() if "gr_applier_threshold" in g and len(g) else None
    tight = g.gr_applier_threshold.min() if "gr_applier_threshold" in g and len(g) else None
    eventual = stale_rate(a, **gr, consistency="EVENTUAL", **({"gr_applier_threshold": loose} if loose else {}))
    out = [stale_claim("With Group Replication's default flow control, reads on the other members can be stale",
                       "'we risk reading very outdated data'", eventual, stale=True,
                       how=f"stale-read probe on the secondaries, EVENTUAL, gr_applier_threshold {loose:g}"
                       if loose else "stale-read probe on the secondaries, EVENTUAL")]
    if loose and tight and loose != tight:
        out.append(fewer_stale("A tighter Group Replication flow-control threshold leaves fewer stale reads",
                               "flow_control=1000 'to minimize stale data'",
                               stale_rate(a, **gr, consistency="EVENTUAL", gr_applier_threshold=tight), eventual,
                               how=f"stale-read probe, EVENTUAL reads, gr_applier_threshold {tight:g} against "
                                   f"{loose:g}; 95% intervals apart"))
    out.append(stale_claim("Group Replication gives no way to protect reads from stale data",
                           "'does not provide a way to protect from reading stale data' (5.7.17)",
                           stale_rate(a, **gr, consistency="BEFORE"), stale=True,
                           control=stale_rate(a, **gr, consistency="EVENTUAL"),
                           how="group_replication_consistency BEFORE (8.0.14 on) under the same loads as EVENTUAL: "
                               "no: BEFORE read no stale value while EVENTUAL did"))
    return out


def _fig_throughput_threads(a):
    from benchlib import charts

    c = views.configs(a)
    if "fc_limit" not in c:
        raise AnalysisError("no flow-control sweep in this campaign")
    return charts.throughput_vs_threads(c.assign(series=c.cluster + " fc " + c.fc_limit.map("{:g}".format)),
                                        color="series", dash="workload", error_low="ci_low", error_high="ci_high")


register(Study("004", "Galera flow-control limits and binary log vs throughput", Published("Performance improvements in Percona XtraDB Cluster 5.7.17-29.20", "Krunal Bauskar and Vadim Tkachenko",
                    "2017-04-19", "Percona Database Performance Blog",
                    "https://www.percona.com/blog/2017/04/19/performance-improvements-percona-xtradb-cluster-5-7-17/"),
          "Galera with and without a binary log, flow-control limits from the default to very loose, OLTP RW, "
          "update-key and update-no-key at rising threads", "Group Replication, MariaDB 10.2 as published",
          _claims_004,
               figures=[("Throughput vs threads per flow-control limit", _fig_throughput_threads),
           ("Flow-control limits: throughput and lag", "flow_control")]))
