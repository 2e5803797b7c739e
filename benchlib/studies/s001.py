"""Study 001: Galera vs semi-sync across a 100 ms WAN."""

from __future__ import annotations

from typing import Any

import numpy as np

from benchlib.analysis import views
from benchlib.analysis.campaign import AnalysisError, CampaignAnalysis
from benchlib.studies.base import Study, commit_latency, register
from benchlib.studies.judge import NO, NOT_MEASURED, YES, claim, compare, pick, values



def _claims_001(a: CampaignAnalysis) -> list[dict[str, Any]]:
    rtt = views.cluster_rtts(a)
    topo = dict(a.runs[["cluster", "topology"]].drop_duplicates().itertuples(index=False))
    wan_rtt = max(rtt.values(), default=np.nan)
    control = next((c for c, t in topo.items() if t == "async" and not rtt.get(c)), None)
    semi = next((c for c, t in topo.items() if t == "semisync" and rtt.get(c)), None)
    g1 = next((c for c, t in topo.items() if t == "galera" and not rtt.get(c)), None)
    g2 = next((c for c, t in topo.items() if t == "galera" and rtt.get(c)), None)
    out = []
    lc = commit_latency(a, control) if control else np.nan
    out.append(claim("Control (async) commit latency is well under a millisecond", "0.25 ms", lc,
                      NOT_MEASURED if not np.isfinite(lc) else YES if lc < 1.0 else NO,
                      "mean latency of single-row autocommit INSERTs, 1 client"))
    for name, cluster, pub in (("Semi-sync", semi, "102 ms at ~100 ms RTT (1.02 RTT)"),
                               ("Galera across two sites", g2, "108 ms at ~100 ms RTT (1.08 RTT)")):
        lat = commit_latency(a, cluster) if cluster else np.nan
        rtts = lat / rtt[cluster] if cluster and np.isfinite(lat) else np.nan
        holds = NOT_MEASURED if not np.isfinite(rtts) else YES if 0.8 <= rtts <= 1.5 else NO
        out.append(claim(f"{name} commit latency is about one round trip", pub,
                          f"{lat:.1f} ms = {rtts:.2f} RTT" if np.isfinite(rtts) else None, holds,
                          "mean INSERT latency / the lab's RTT (within 0.8-1.5 RTT)"))
    lg = commit_latency(a, g1) if g1 else np.nan
    out.append(claim("Galera in one site commits in a few milliseconds, far below one WAN round trip",
                      "2 ms (vs 0.25 ms control)", lg,
                      NOT_MEASURED if not np.isfinite(lg) else YES if lg < 0.1 * (wan_rtt or 100) else NO,
                      "mean INSERT latency below 0.1 RTT"))
    tps = {c: values(pick(views.measured(a), cluster=c, threads=32, workload="oltp_read_write"), "tps_mean")
           for c in topo}
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


register(Study("001", "Galera vs semi-sync across a 100 ms WAN", "001_bf08bb00fa047e36.txt",
          "control async, semi-sync with its replica 100 ms away, Galera in one site and across two sites: "
          "single-row commit latency and 32-client throughput", "nothing: all four set-ups run locally", _claims_001,
               figures=[("Commit latency vs round-trip time", _fig_wan), ("Throughput with 32 clients", _fig_throughput_32)]))
