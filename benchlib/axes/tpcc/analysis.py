"""The TPC-C-like axis's analysis: per cluster, workload (mix) and thread count, the new orders per minute the
server counted (median over the ok runs and its spread), whether they match the client's committed New-Orders, the
mix as run against the mix asked, the New-Orders rolled back on purpose, errors by number, latency percentiles by
type, and the consistency conditions: in words."""

from __future__ import annotations

from functools import cached_property
from typing import Any

import pandas as pd

from benchlib.analysis.dip import before, dip, per_second
from benchlib.axis import AxisAnalysis
from benchlib.workloads.tpcc import MIXES, TITLES, percentiles

__all__ = ["TpccAnalysis", "dips", "findings", "summary"]

KEYS = ["cluster", "workload", "threads"]


def _keys(runs: pd.DataFrame) -> list[str]:
    """A fault's runs apart from the others (their new orders a minute include the dip)."""
    return KEYS + (["fault"] if "fault" in runs and runs.fault.notna().any() else [])


def new_orders_per_second(orders: pd.DataFrame) -> pd.DataFrame:
    """One run's server-side new orders between consecutive samples of the districts on the same node (a failover
    moves the probe: the first sample on the new node starts afresh), at the later sample's time."""
    o = orders.sort_values("t_s")
    same = o.node.astype(str).eq(o.node.astype(str).shift())
    d = o.next_order_ids.diff()
    keep = same & d.notna()
    return pd.DataFrame({"t_s": o.t_s[keep].to_numpy(float), "new_orders": d[keep].clip(lower=0).to_numpy(float)})


def dips(a: Any) -> pd.DataFrame:
    """Per fault run of a TPC-C-like workload: new orders a minute from the server before the fault, the lowest
    minute-rate of a second after it, the time back to 95% and the dip's cost in seconds of new orders and in new
    orders (``benchlib.analysis.dip``)."""
    runs = _ok(a)
    orders = a.frames.get("tpcc_orders", pd.DataFrame())
    if runs.empty or orders.empty or "fault_at_s" not in runs:
        return pd.DataFrame()
    rows = []
    for r in runs[runs.fault_at_s.notna()].itertuples():
        per = new_orders_per_second(orders[orders.run_id.astype(str) == str(r.run_id)])
        if per.empty:
            continue
        end = r.load_end_s if "load_end_s" in runs and r.load_end_s == r.load_end_s else per.t_s.max()
        level = before(per.t_s, per.new_orders, r.fault_at_s)
        fell = dip(per_second(per.t_s, per.new_orders, r.fault_at_s, end), level, r.fault_at_s)
        rows.append({**{k: getattr(r, k) for k in _keys(runs)}, "run_id": r.run_id,
                     "nopm_before": level * 60, "nopm_lowest": fell["lowest"] * 60,
                     "recovered_95_s": fell["recovered_s"], "dip_s": fell["area_s"], "new_orders_lost": fell["lost"]})
    return pd.DataFrame(rows)


def dip_words(d: pd.DataFrame) -> list[str]:
    """One sentence per fault configuration: the server's new orders through the fault."""
    out: list[str] = []
    if d.empty:
        return out
    keys = [k for k in _keys(d) if k in d]
    for key, g in d.groupby(keys, sort=True):
        name = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        n, back = len(g), g.recovered_95_s.dropna()
        when = (f"back at 95% after a median {back.median():.1f} s" + (f" (in {len(back)} of {n} faults)"
                                                                        if len(back) < n else "")
                if len(back) else "never back at 95% within the load")
        out.append(f"{name['cluster']}, {name['workload']} at {name['threads']} threads under {name['fault']}: the "
                   f"server's new orders a minute went from a median {g.nopm_before.median():,.0f} before the fault "
                   f"to a lowest second of {g.nopm_lowest.median():,.0f}, {when}; the dip cost a median "
                   f"{g.dip_s.median():.1f} s of new orders ({g.new_orders_lost.median():,.0f} new orders a fault, "
                   f"over {n} fault{'s' if n != 1 else ''})")
    return out


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
    keys = _keys(runs)
    runs = runs.assign(fault=runs.fault.fillna("")) if "fault" in keys else runs
    for key, g in runs.groupby(keys, sort=True):
        cluster, workload, threads = key[:3]
        fault = key[3] if len(key) > 3 else ""
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
            "cluster": cluster, "workload": workload, "threads": int(threads), "fault": fault, "runs": len(g),
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


DIFFER = (" (under a fault they may differ: a commit whose answer was lost counts in the districts, an acknowledged "
          "one the failover lost does not)")


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
        under = f" under {r.fault}" if r.fault else ""
        out.append(f"{r.cluster}, {r.workload} at {r.threads} threads{under}: {r.nopm:,.0f} new orders a minute "
                   f"from the server (median of {r.runs} run{'s' if r.runs != 1 else ''}, "
                   f"{r.nopm_min:,.0f}–{r.nopm_max:,.0f}); "
                   f"{r.server_new_orders:,} new orders counted in the districts, {agree} the client's committed "
                   f"New-Orders{DIFFER if r.fault and agree != 'the same as' else ''}; of "
                   f"{r.transactions:,} transactions: {ran}; {r.rolled_back_share:.1%} of New-Orders "
                   f"rolled back on purpose; {errors}; p95 latency (ms) {p95}; {consistent}")
    return out + dip_words(dips(a))


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
    def dips(self) -> pd.DataFrame:
        """Per fault run: the server's new orders through the fault."""
        return dips(self.a)

    @cached_property
    def findings(self) -> list[str]:
        return findings(self.a)
