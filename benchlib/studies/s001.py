"""Study 001: Galera vs semi-sync across a 100 ms WAN."""

from __future__ import annotations

from typing import Any

import numpy as np

from benchlib.analysis import views
from benchlib.analysis.campaign import AnalysisError, CampaignAnalysis
from benchlib.studies.base import Published, Study, commit_latency, commit_latency_runs, register
from benchlib.studies.judge import band_claim, compare, pick, values



def _claims_001(a: CampaignAnalysis) -> list[dict[str, Any]]:
    rtt = views.cluster_rtts(a)
    wan_rtt = max(rtt.values(), default=np.nan)
    control = next(iter(views.clusters_of(a, "async", wan=False)), None)
    semi = next(iter(views.clusters_of(a, "semisync", wan=True)), None)
    g1 = next(iter(views.clusters_of(a, "galera", wan=False)), None)
    g2 = next(iter(views.clusters_of(a, "galera", wan=True)), None)
    out = []
    lat = {c: values(commit_latency_runs(a, c), "summary_lat_avg_ms") if c else [] for c in (control, semi, g1, g2)}
    out.append(band_claim("Control (async) commit latency is well under a millisecond", "0.25 ms", lat[control],
                          high=1.0, unit=" ms", how="mean latency of single-row autocommit INSERTs, 1 client; 95% "
                                                    "interval over runs below 1 ms"))
    for name, cluster, pub in (("Semi-sync", semi, "102 ms at ~100 ms RTT (1.02 RTT)"),
                               ("Galera across two sites", g2, "108 ms at ~100 ms RTT (1.08 RTT)")):
        out.append(band_claim(f"{name} commit latency is about one round trip", pub, lat[cluster] if cluster else [],
                              low=0.8, high=1.5, scale=rtt.get(cluster, np.nan) if cluster else np.nan, unit=" RTT",
                              how="mean INSERT latency / the lab's RTT; 95% interval over runs within 0.8-1.5 RTT"))
    out.append(band_claim("Galera in one site commits in a few milliseconds, far below one WAN round trip",
                          "2 ms (vs 0.25 ms control)", lat[g1], high=0.1 * (wan_rtt or 100), unit=" ms",
                          how="mean INSERT latency; 95% interval over runs below 0.1 RTT"))
    tps = {c: values(pick(views.measured(a), cluster=c, threads=32, workload="oltp_read_write"), "tps_mean")
           for c in a.runs.cluster.unique()}
    out.append(compare("32 clients: Galera across two sites outperforms semi-sync", "224 vs 10 tps (PS/PXC 5.5)",
                    tps.get(g2, []), tps.get(semi, []), less=False, how="TPS per run, OLTP read-write, 32 clients"))
    best = max((tps.get(c, np.array([])) for c in (g2, semi)), key=lambda v: v.mean() if len(v) else -1)
    out.append(compare("32 clients: the WAN costs both synchronous set-ups throughput against the control",
                    "224 and 10 vs 840 tps", best, tps.get(control, []), less=True,
                    how="the better WAN set-up vs the control, TPS per run, 32 clients"))
    return out


def _fig_wan(a):
    from benchlib import charts

    w = views.wan(a)
    w = w[(w.threads == 1) & (w.workload == "insert_single")] if "workload" in w else w[w.threads == 1]
    return charts.latency_vs_rtt(w.assign(lat_mean_ms=w.cluster.map(lambda c: commit_latency(a, c))), y="lat_mean_ms",
                                 color="cluster", title="Single-row commit latency (mean) vs round-trip time")


def _fig_throughput_32(a):
    from benchlib import charts

    c = views.configs(a)
    c = c[(c.threads == c.threads.max()) & (c.workload == "oltp_read_write")].assign(label=lambda d: d.cluster)
    if c.empty:
        raise AnalysisError("no OLTP read-write runs at the campaign's highest thread count")
    return charts.catch_up(c, y="tps_mean", color="topology", title=f"Throughput with {int(c.threads.max())} clients"
                           ).update_layout(yaxis_title="transactions/s")


register(Study("001", "Galera vs semi-sync across a 100 ms WAN", Published("Comparing Percona XtraDB Cluster with Semi-Sync replication Cross-WAN", "Jay Janssen", "2012-06-14",
                    "Percona Database Performance Blog",
                    "https://www.percona.com/blog/2012/06/14/comparing-percona-xtradb-cluster-with-semi-sync-replication-cross-wan/"),
          "control async, semi-sync with its replica 100 ms away, Galera in one site and across two sites: "
          "single-row commit latency and 32-client throughput", "nothing: all four set-ups run locally", _claims_001,
               figures=[("Commit latency vs round-trip time", _fig_wan), ("Throughput with 32 clients", _fig_throughput_32)]))
