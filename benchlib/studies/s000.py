"""Study 000: Group Replication vs Galera vs async: scaling, durability, flow control, sustained throughput."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from benchlib.analysis import views
from benchlib.analysis.campaign import CampaignAnalysis
from benchlib.studies.base import Published, Study, register
from benchlib.studies.judge import NO, NOT_SHOWN, YES, claim, compare, pick, ratio_claim, ratio_of_ratios, ratio_row, remote_claim



def _claims_000(a: CampaignAnalysis) -> list[dict[str, Any]]:
    out = []
    sizes = views.cluster_sizes(a)
    galera = sorted(views.clusters_of(a, "galera"), key=lambda c: sizes.get(c, 0))
    small = galera[0] if galera else None
    for wl, pub in (("oltp_read_write", "0.30 durable, 0.38 relaxed (9 members); 0.46 relaxed (3)"),
                    ("oltp_update_index", "0.10 durable, 0.125 relaxed (9 members); 0.35 relaxed (3)")):
        for dur in ("durable", "relaxed"):
            row = ratio_row(a, cluster=small, workload=wl, durability=dur) if small else None
            out.append(ratio_claim(f"Galera ({sizes.get(small, '?')} nodes) delivers less throughput than async: "
                                    f"{wl}, {dur}", pub, row, below=1.0,
                                    how="ratio of mean TPS vs async, best flow-control setting, 95% (rounds model)"))
    r_rw = ratio_row(a, cluster=small, workload="oltp_read_write", durability="relaxed") if small else None
    r_ui = ratio_row(a, cluster=small, workload="oltp_update_index", durability="relaxed") if small else None
    out.append(ratio_of_ratios("Galera's ratio vs async is lower on update-index than on OLTP read-write",
                               "0.35 vs 0.46 (3 members, relaxed)", r_ui, r_rw, less=True,
                               how="best ratio per workload, relaxed; quotient of the two ratios, 95%"))
    if len(galera) >= 2:
        big = galera[-1]
        for wl in ("oltp_read_write", "oltp_update_index"):
            rs = ratio_row(a, cluster=small, workload=wl, durability="relaxed")
            rb = ratio_row(a, cluster=big, workload=wl, durability="relaxed")
            pub = "0.38 (9) vs 0.46 (3)" if wl == "oltp_read_write" else "0.125 (9) vs 0.35 (3)"
            out.append(ratio_of_ratios(f"More Galera nodes, lower ratio vs async ({wl}, relaxed)", pub, rb, rs,
                                       less=True, how=f"{big} ({sizes[big]} nodes) vs {small} ({sizes[small]} nodes), "
                                                      "relaxed; quotient of the two ratios, 95%"))
    rd = ratio_row(a, cluster=small, workload="oltp_read_write", durability="durable") if small else None
    rr = r_rw
    out.append(ratio_of_ratios("Durability costs Galera more than async (OLTP RW ratio lower when durable)",
                               "0.30 durable vs 0.38 relaxed (9 members)", rd, rr, less=True,
                               how=f"{small}, ratio vs async; quotient of the two ratios, 95%"))
    for row in views.sustained_or_empty(a).itertuples(index=False):
        out.append(_sustained_claim(a, row))
    out += _group_replication_claims(a)
    return out


def _sustained_claim(a: CampaignAnalysis, row) -> dict[str, Any]:
    """Sustained below peak: the search's bracket [highest rate held, first rate failed) against the 95% interval of
    the configuration's closed-loop mean (its rounds): yes when the first failing rate is below the interval, no
    when the rate held is above it, else not shown."""
    keys = {k: getattr(row, k) for k in ("cluster", "workload", "durability", "fc_limit", "gr_applier_threshold",
                                         "threads") if k in a.configs and pd.notna(getattr(row, k, None))}
    peak = pick(a.configs[a.configs.rate.isna()] if "rate" in a.configs else a.configs, **keys)
    lo, hi = (float(peak.ci_low.iloc[0]), float(peak.ci_high.iloc[0])) if len(peak) == 1 else (np.nan, np.nan)
    text = f"Sustained throughput is below peak: {row.label} {row.workload}"
    how = (f"open-loop search, held {row.sustained_tps:.0f} tps, failed at {row.first_failing_tps:.0f} ({row.status}"
           f"{', FC_LIMITED' if row.fc_limited else ''}), against the closed-loop peak's 95% interval")
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return compare(text, "sustained, not peak, is the study's headline metric", row.sustained_tps, row.peak_tps,
                       less=True, how=how)
    failed = row.first_failing_tps if pd.notna(row.first_failing_tps) else np.inf
    holds = YES if failed < lo else NO if row.sustained_tps > hi else NOT_SHOWN
    return claim(text, "sustained, not peak, is the study's headline metric",
                 f"held {row.sustained_tps:.0f}, failed at {failed:.0f}; peak {row.peak_tps:.0f} [{lo:.0f}, {hi:.0f}]",
                 holds, how)


def _group_replication_claims(a: CampaignAnalysis) -> list[dict[str, Any]]:
    """Group Replication against async replication of the same server (MySQL): the rounds model's ratio."""
    text = "Group Replication delivers 84% (OLTP RW) and over 60% (update-index) of async"
    m = views.measured(a)
    grs = views.of_system(m, "group_replication")
    if grs.empty:
        return [remote_claim(text, "0.84 / 0.60 (9 members, durable)", "MySQL Group Replication")]
    sizes = views.cluster_sizes(a)
    gr = min(grs.cluster.unique(), key=lambda c: sizes.get(c, 0))
    out = []
    for wl, pub in (("oltp_read_write", "0.84 (9 members, durable)"), ("oltp_update_index", "over 0.60 (9 members)")):
        for dur in ("durable", "relaxed"):
            where = dict(metric="tps", cluster=gr, workload=wl, durability=dur)
            rows = pick(a.comparisons, **where) if not a.comparisons.empty else pd.DataFrame()
            if "gr_applier_threshold" in rows and rows.gr_applier_threshold.notna().any():  # the default flow control
                rows = pick(rows, gr_applier_threshold=rows.gr_applier_threshold.max())
            out.append(ratio_claim(f"Group Replication ({sizes.get(gr, '?')} members) delivers less throughput than "
                                   f"async: {wl}, {dur}", pub, rows.iloc[0] if len(rows) else None, below=1.0,
                                   how=f"{gr} / MySQL async (same server), ratio of mean TPS, default flow control, "
                                       "95% (rounds model)"))
    return out


register(Study("000", "Group Replication vs Galera vs async: scaling, durability, flow control, sustained throughput",
          Published("Performance Evaluation: MySQL 5.7 Group Replication (GA Release)", "Vítor Oliveira", "2016-12-12",
                    "MySQL High Availability blog (Oracle)",
                    "https://dev.mysql.com/blog-archive/performance-evaluation-mysql-5-7-group-replication/"),
          "async vs Galera 3 and 5 nodes (7 and 9 in the full lab) and MySQL async vs Group Replication 3 members "
          "(5 and 9 in the full lab), durable vs relaxed, OLTP RW and update-index, flow-control limits, ratios vs "
          "async, sustained throughput, latency, stability",
          "Group Replication on MySQL 5.7/8.0 (here: MySQL 9.7)", _claims_000,
               figures=[("Throughput relative to async", "ratio_vs_baseline"),
           ("Maximum sustained throughput vs peak", "sustained"), ("Latency vs client threads", "latency_vs_threads"),
           ("Stability over time", "stability"), ("Flow-control limits", "flow_control")]))
