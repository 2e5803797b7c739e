"""The TPC-C-like axis's analysis: per cluster, workload (mix) and thread count, the new orders per minute the
server counted (median over the ok runs and its spread), whether they match the client's committed New-Orders, the
mix as run against the mix asked, the New-Orders rolled back on purpose, errors by number, latency percentiles by
type, and the consistency conditions: in words."""

from __future__ import annotations

from functools import cached_property
from typing import Any

import pandas as pd

from benchlib.axis import AxisAnalysis
from benchlib.workloads.tpcc import MIXES, TITLES, percentiles

__all__ = ["TpccAnalysis", "findings", "summary"]

KEYS = ["cluster", "workload", "threads"]


def _ok(a: Any) -> pd.DataFrame:
    runs = a.runs[a.runs.status == "ok"] if "status" in a.runs else a.runs
    return runs[runs.workload.isin(list(MIXES))] if "workload" in runs else runs.iloc[0:0]


def summary(a: Any) -> pd.DataFrame:
    """One row per cluster, workload and thread count: ok runs, NOPM (server) median, min and max, the server's new
    orders against the client's, shares of each type run, New-Orders rolled back, errors, p95 latencies, and the
    runs whose consistency conditions failed (among all runs, invalid ones included)."""
    runs = _ok(a)
    if runs.empty or "tpcc_nopm" not in runs:
        return pd.DataFrame()
    types = a.frames.get("tpcc_types", pd.DataFrame())
    errors = a.frames.get("tpcc_errors", pd.DataFrame())
    latency = a.frames.get("tpcc_latency", pd.DataFrame())
    everyone = a.runs[a.runs.workload.isin(list(MIXES))]
    rows = []
    for (cluster, workload, threads), g in runs.groupby(KEYS, sort=True):
        ids = set(g.run_id)
        t = types[types.run_id.isin(ids)] if not types.empty else types
        done = t.groupby("type")[["committed", "rolled_back", "errors"]].sum() if not t.empty else pd.DataFrame()
        n = int(done[["committed", "rolled_back"]].to_numpy().sum()) if not done.empty else 0
        shares = {f"share_{k}": (float(done.loc[k, ["committed", "rolled_back"]].sum()) / n
                                 if n and k in done.index else 0.0) for k in MIXES[workload]}
        e = errors[errors.run_id.isin(ids)] if not errors.empty else errors
        by_code = e.groupby("code")["count"].sum().sort_values(ascending=False) if not e.empty else pd.Series()
        lat = percentiles(latency[latency.run_id.isin(ids)]) if not latency.empty else pd.DataFrame()
        p95 = dict(zip(lat.type, lat.p95_ms)) if not lat.empty else {}
        new_orders = float(done.loc["new_order", ["committed", "rolled_back"]].sum()) \
            if "new_order" in getattr(done, "index", []) else 0.0
        broken = everyone[(everyone.cluster == cluster) & (everyone.workload == workload)
                          & (everyone.threads == threads) & (everyone.tpcc_violations.fillna(0) > 0)]
        rows.append({
            "cluster": cluster, "workload": workload, "threads": int(threads), "runs": len(g),
            "nopm": float(g.tpcc_nopm.median()), "nopm_min": float(g.tpcc_nopm.min()),
            "nopm_max": float(g.tpcc_nopm.max()),
            "server_new_orders": int(g.tpcc_new_orders_server.sum()),
            "client_new_orders": int(g.tpcc_new_orders_client.sum()),
            "transactions": n, **shares,
            "rolled_back_share": float(done.rolled_back.sum()) / new_orders if new_orders else float("nan"),
            "errors": int(by_code.sum()) if len(by_code) else 0,
            "errors_by_code": ", ".join(f"{int(c)}: {int(v):,}" for c, v in by_code.items()),
            **{f"p95_{k}_ms": p95.get(k, float("nan")) for k in MIXES[workload]},
            "runs_inconsistent": len(broken),
        })
    return pd.DataFrame(rows)


def findings(a: Any) -> list[str]:
    out = []
    for r in summary(a).itertuples():
        mix = MIXES[r.workload]
        ran = ", ".join(f"{TITLES[k]} {getattr(r, 'share_' + k):.1%} ({mix[k]:.1%} asked)" for k in mix)
        agree = ("the same as" if r.server_new_orders == r.client_new_orders
                 else f"against {r.client_new_orders:,}")
        errors = f"{r.errors:,} transactions ended in an error ({r.errors_by_code})" if r.errors else "no errors"
        p95 = ", ".join(f"{TITLES[k]} {getattr(r, f'p95_{k}_ms'):.0f}" for k in mix
                        if getattr(r, f"p95_{k}_ms") == getattr(r, f"p95_{k}_ms"))
        consistent = (f"the consistency conditions failed after {r.runs_inconsistent} run"
                      f"{'s' if r.runs_inconsistent != 1 else ''}" if r.runs_inconsistent
                      else "conditions 1-4 held on every node after every run")
        out.append(f"{r.cluster}, {r.workload} at {r.threads} threads: {r.nopm:,.0f} new orders a minute from the "
                   f"server (median of {r.runs} run{'s' if r.runs != 1 else ''}, {r.nopm_min:,.0f}–{r.nopm_max:,.0f}); "
                   f"{r.server_new_orders:,} new orders counted in the districts, {agree} the client's committed "
                   f"New-Orders; of {r.transactions:,} transactions: {ran}; {r.rolled_back_share:.1%} of New-Orders "
                   f"rolled back on purpose; {errors}; p95 latency (ms) {p95}; {consistent}")
    return out


class TpccAnalysis(AxisAnalysis):
    """``a.axis("tpcc")``: ``summary`` (per cluster, workload and thread count), ``findings``."""

    axis = "tpcc"

    @cached_property
    def summary(self) -> pd.DataFrame:
        return summary(self.a)

    @cached_property
    def measures(self) -> pd.DataFrame:
        return self.summary

    @cached_property
    def findings(self) -> list[str]:
        return findings(self.a)
