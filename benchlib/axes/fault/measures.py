"""What a fault cost, per run and per configuration: unavailability, failover time, lost writes, recovery.

Per fault run (``measures``), from its ledger, its fault events and sysbench's per-second lines:

- **unavailability_s**: the longest wait between two writes the ledger writer had acknowledged, from the last one
  before the fault on, as the writer saw it (CockroachDB's failover suite measures the worst-case unavailability the
  same way; a write in flight may still be acknowledged by the failing node just after the fault, so the first
  acknowledgement after the fault is not the end of it); when no write was acknowledged again before the load ended,
  it is missing and ``unavailable_at_least_s`` says how long the writer had waited. An acknowledged write the
  failover then lost does not end a wait: the client was told yes, and the write is gone (a primary cut off from
  its replicas acknowledges for seconds what the promoted replica never receives);
- **new_primary_s**: from the fault until the cluster named another node to take the writes (the group's election,
  a Synced Galera survivor, the lab's promotion), missing when none was; **writes_elsewhere_s**: until another node
  acknowledged the writer's first write (a Galera survivor is named at once, but commits wait until the cluster's
  view has dropped the failed node);
- **lost** (acknowledged, absent from the surviving primary after the heal), **phantoms** (failed or unknown, present:
  allowed), and the acknowledged / failed / unknown counts;
- **sysbench's throughput** (``benchlib.analysis.dip``): its median before the fault, the lowest second after it (a
  second sysbench did not report counts as 0), **recovered_95_s**: from the fault until the first of three seconds in
  a row at 95% of the pre-fault median, and the dip's cost: **dip_s** in seconds of the pre-fault throughput,
  **dip_transactions** in transactions.

Per configuration (``summary``): the distribution of unavailability over the repetitions: median, p90 and max, the
median's and p90's distribution-free 95% intervals from order statistics (``scipy.stats.quantile_test``: with 9
runs the p90's upper bound is beyond the data, so it is reported as open), and lost writes as a count, the share of
faults that lost any with its exact (Clopper-Pearson) 95% interval: "0 lost in 9 kills" still bounds the share of
kills that lose writes at 34%.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from benchlib.analysis.dip import before, dip, per_second
from benchlib.analysis.exact_intervals import quantile_interval, share_interval
from benchlib.analysis.interference import DISTURBED

__all__ = ["in_words", "unavailability", "measures", "quantile_interval", "share_interval", "summary", "timeline"]

def unavailability(acked: pd.DataFrame, t_fault: float, end: float) -> tuple[float, float]:
    """(the longest wait between two acknowledgements from the last one before the fault on, NaN when none came
    again before ``end``; how long the writer had waited at ``end`` then, else NaN). A write in flight may still be
    acknowledged by the failing node a moment after the fault was injected: the first acknowledgement after the
    fault is not the end of it."""
    before = acked[acked.t_done_s <= t_fault]
    last = before.t_done_s.max() if not before.empty else math.nan
    times = np.sort(acked.t_done_s[acked.t_done_s >= last].to_numpy(dtype=float)) if last == last else np.array([])
    gaps = np.diff(times)
    tail = float(end - times[-1]) if len(times) and end == end else math.nan
    if len(gaps) and not (tail > gaps.max()):
        return float(gaps.max()), math.nan
    return math.nan, tail


SETTLED_MS = 100.0  # a rejoined node has settled once its lag stays under this


def _rejoin(events: pd.DataFrame, cluster: pd.DataFrame, intervals: pd.DataFrame, base: float) -> dict[str, Any]:
    """A rejoin under load: its path, how long until the node was back in its role, until its lag stayed under
    SETTLED_MS, and sysbench's throughput meanwhile against the pre-fault median (the donor's load)."""
    asked, started, back = (events[events.event == e] for e in ("rejoin_asked", "rejoin_started", "rejoined"))
    if started.empty:
        return {}
    t0 = float(started.t_s.iloc[0])
    out: dict[str, Any] = {"rejoin_path": str(back.detail.iloc[0]) if len(back) else "",
                           "rejoin_s": float(back.t_s.iloc[0] - t0) if len(back) else math.nan,
                           # a group expels the killed incarnation before the node may start again
                           "rejoin_wait_s": float(t0 - asked.t_s.iloc[0]) if len(asked) else 0.0}
    lag = cluster[(cluster.metric == "ledger_lag_ms")].sort_values("t_s") if "metric" in cluster else cluster.iloc[:0]
    if len(lag):
        over = lag[lag.value >= SETTLED_MS]
        after = lag[lag.t_s > (over.t_s.max() if len(over) else -math.inf)]
        out["settled_s"] = float(after.t_s.min() - t0) if len(after) else math.nan
        out["lag_max_ms"] = float(lag.value.max())
    if len(back) and not intervals.empty and base == base and base > 0:
        during = intervals[(intervals.t_s > t0 + 1) & (intervals.t_s <= float(back.t_s.iloc[0]) + 1e-9)]
        out["tps_during_rejoin"] = float(during.tps.mean()) / base if len(during) else math.nan
    return out


def _per_run(run: pd.Series, ledger: pd.DataFrame, events: pd.DataFrame, intervals: pd.DataFrame,
             cluster: pd.DataFrame | None = None) -> dict[str, Any]:
    t_fault = run.get("fault_at_s")
    out: dict[str, Any] = {"run_id": run.run_id}
    if t_fault is None or not t_fault == t_fault:
        return out
    end = run.get("load_end_s")
    vias = ledger.via.astype(str) if "via" in ledger else pd.Series("direct", index=ledger.index)
    behind = {v: ledger[vias == v] for v in sorted(set(vias) - {"direct"})}
    ledger = ledger[vias == "direct"]
    acked = ledger[ledger.outcome == "acked"]
    # an acknowledgement the failover took back (the write is lost) is no service: the wait runs until a write that
    # stayed was acknowledged (a cut-off async primary acknowledges for seconds what its promoted replica never gets)
    kept = acked[acked.present != False] if "present" in acked else acked  # noqa: E712 - a nullable boolean
    out["unavailability_s"], at_least = unavailability(kept, t_fault, end)
    if at_least == at_least:
        out["unavailable_at_least_s"] = at_least
    for v, rows in behind.items():  # a writer behind a proxy: what its clients saw
        ok = rows[rows.outcome == "acked"]
        out[f"{v}_unavailability_s"], at_least = unavailability(ok, t_fault, end)
        out[f"{v}_unavailable_at_least_s"] = at_least
        out[f"{v}_lost"] = int((ok.present == False).sum()) if rows.present.notna().any() else math.nan  # noqa: E712
    failed = set(events[(events.event == "fault")].node.astype(str).str.split(",").explode())
    first = str(ledger.sort_values("seq").node.iloc[0]) if len(ledger) else ""
    # only when the node that took the writes failed (a donor leaving the rotation later is not a failover)
    moved = events[(events.event == "primary") & (events.t_s >= t_fault)] if first in failed else events.iloc[:0]
    out["new_primary_s"] = float(moved.t_s.min() - t_fault) if not moved.empty else math.nan
    out["new_primary_node"] = str(moved.sort_values("t_s").node.iloc[0]) if not moved.empty else ""
    elsewhere = acked[(acked.t_sent_s > t_fault) & (acked.node.astype(str) != first)]
    out["writes_elsewhere_s"] = (float(elsewhere.t_done_s.min() - t_fault) if first in failed and not elsewhere.empty
                                 else math.nan)  # only when the node that took the writes failed
    present = ledger.present
    out["acked"] = int(len(acked))
    out["failed"] = int((ledger.outcome == "failed").sum())
    out["unknown"] = int((ledger.outcome == "unknown").sum())
    audited = present.notna().any()
    out["lost"] = int((acked.present == False).sum()) if audited else math.nan  # noqa: E712 - a nullable boolean
    out["phantoms"] = int(((ledger.outcome != "acked") & (present == True)).sum()) if audited else math.nan  # noqa
    gone = acked[acked.present == False] if audited else acked.iloc[:0]  # noqa: E712
    # how many seconds of writes were lost: from the first lost write's send to the last one's acknowledgement
    out["lost_span_s"] = float(gone.t_done_s.max() - gone.t_sent_s.min()) if len(gone) else math.nan
    if not intervals.empty:
        base = before(intervals.t_s, intervals.tps, t_fault)
        stop = float(end) if end == end else float(intervals.t_s.max())
        fell = dip(per_second(intervals.t_s, intervals.tps, t_fault, stop), base, t_fault)
        out.update(tps_before=base, tps_lowest=fell["lowest"], recovered_95_s=fell["recovered_s"],
                   dip_s=fell["area_s"], dip_transactions=fell["lost"])
    out.update(_rejoin(events, cluster if cluster is not None else pd.DataFrame(), intervals,
                       out.get("tps_before", math.nan)))
    return out


def measures(runs: pd.DataFrame, frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per fault run (see the module docstring); empty without fault runs."""
    if "fault_at_s" not in runs:
        return pd.DataFrame()
    faulted = runs[runs.fault_at_s.notna() & (runs.status == "ok")]
    ledger, events, intervals, cluster = (frames.get(k, pd.DataFrame())
                                          for k in ("ledger", "fault_events", "intervals", "cluster"))
    rows = []
    for _, run in faulted.iterrows():
        rid = run.run_id
        pick = (lambda f: f[f.run_id.astype(str) == rid] if not f.empty and "run_id" in f else pd.DataFrame(
            columns=list(f.columns) + ["t_s", "event", "node", "outcome", "t_done_s", "present", "tps"]))
        rows.append(_per_run(run, pick(ledger), pick(events), pick(intervals), pick(cluster)))
    m = pd.DataFrame(rows)
    keep = [c for c in ("run_id", "cluster", "system", "fault", "failover", "failover_how", "workload", "threads",
                        "rate", "repetition", "heal_s", "heal_how", "survivor", "reads_of_lost",
                        "fell_back_s", "no_ack_commits", "errant", "switchover_s", "lost_cpu", "fault_moment_s")
            if c in faulted and (c not in ("errant", "switchover_s") or faulted[c].notna().any())]  # older: none
    extra = [c for c in faulted.columns if c.startswith(SETTING_PREFIXES)]
    out = faulted[keep + extra].merge(m, on="run_id", how="left") if not m.empty else m
    if "lost_cpu" in out:  # a failover time is a timing: one from a run that lost the CPU to others is flagged
        out["disturbed"] = out.lost_cpu > DISTURBED
    return _lost_writes_read(out, frames.get("ledger_reads", pd.DataFrame()))


def _lost_writes_read(out: pd.DataFrame, reads: pd.DataFrame) -> pd.DataFrame:
    """``lost_writes_read``: per run, how many distinct writes the reads beside the write node returned that the
    failover then lost (``reads_of_lost`` counts the reads: a read returns the newest write it sees, again and again
    until a newer one commits), from the run's LEDGER_READS frame (NaN: a run without one)."""
    if out.empty or reads.empty or "lost" not in reads:
        return out
    lost = reads[reads.lost.astype("boolean").fillna(False).to_numpy(bool)]
    distinct = lost.groupby(lost.run_id.astype(str)).value.nunique()
    ids = out.run_id.astype(str)
    read = ids.isin(set(reads.run_id.astype(str)))
    return out.assign(lost_writes_read=ids.map(distinct).fillna(0).where(read))


SETTING_PREFIXES = ("semisync", "durability", "gr_", "fc_", "sync_binlog", "flush", "innodb_flush",
                    "suspect_timeout")
LOAD_KEYS = ("workload", "threads", "rate")
#: settings a label names with their value (a bare number says nothing; older labels keep their words)
NAMED = ("innodb_flush_log_at_trx_commit",)


def configuration(m: pd.DataFrame) -> list[str]:
    """The columns that tell one fault configuration from another: the cluster and the fault, and the settings and
    load keys the campaign varied."""
    return [c for c in m.columns if c in ("cluster", "fault") or (c.startswith(SETTING_PREFIXES) or c in LOAD_KEYS)
            and m[c].nunique(dropna=False) > 1]


def summary(m: pd.DataFrame) -> pd.DataFrame:
    """Per configuration: runs, unavailability's median / p90 / max with intervals, new-primary time, lost writes
    with the share of faults that lost any and its interval, recovery to 95% throughput."""
    if m.empty:
        return pd.DataFrame()
    keys = configuration(m)
    rows = []
    for key, g in m.groupby(keys, observed=True, dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        u = g.unavailability_s.to_numpy(dtype=float)
        done = u[~np.isnan(u)]
        lost = g.lost.dropna().astype(int)
        k = int((lost > 0).sum())
        med_ci, p90_ci = quantile_interval(done, 0.5), quantile_interval(done, 0.9)
        lo, hi = share_interval(k, len(lost))
        rows.append({**dict(zip(keys, key)), "runs": len(g), "recovered_runs": int(len(done)),
                     "unavail_median_s": float(np.median(done)) if len(done) else math.nan,
                     "unavail_median_low_s": med_ci[0], "unavail_median_high_s": med_ci[1],
                     "unavail_p90_s": float(np.quantile(done, 0.9)) if len(done) else math.nan,
                     "unavail_p90_low_s": p90_ci[0], "unavail_p90_high_s": p90_ci[1],
                     "unavail_max_s": float(done.max()) if len(done) else math.nan,
                     "unavail_at_least_s": float(g.get("unavailable_at_least_s", pd.Series(dtype=float)).max())
                     if "unavailable_at_least_s" in g else math.nan,
                     "new_primary_median_s": float(g.new_primary_s.median()),
                     "writes_elsewhere_median_s": float(g.writes_elsewhere_s.median()),
                     "lost_total": int(lost.sum()), "lost_max": int(lost.max()) if len(lost) else 0,
                     "lost_median": float(lost.median()) if len(lost) else math.nan,
                     "lost_span_median_s": float(g.lost_span_s.median()) if "lost_span_s" in g else math.nan,
                     **_fell_back(g),
                     **_errant(g),
                     **({"switchover_median_s": float(g.switchover_s.median()),
                         "switchover_max_s": float(g.switchover_s.max())}
                        if "switchover_s" in g and g.switchover_s.notna().any() else {}),
                     **({"reads_of_lost_total": int(g.reads_of_lost.fillna(0).sum()),
                         "runs_reading_lost": int((g.reads_of_lost.fillna(0) > 0).sum())}
                        if "reads_of_lost" in g and g.reads_of_lost.notna().any() else {}),
                     **({"lost_writes_read_total": int(g.lost_writes_read.fillna(0).sum())}
                        if "lost_writes_read" in g and g.lost_writes_read.notna().any() else {}),
                     "runs_losing": k, "audited_runs": int(len(lost)),
                     "losing_share_low": lo, "losing_share_high": hi,
                     "acked_total": int(g.acked.sum()),
                     **_behind_proxy(g),
                     "recovered_95_median_s": float(g.recovered_95_s.median()) if "recovered_95_s" in g else math.nan,
                     "recovered_95_runs": int(g.recovered_95_s.notna().sum()) if "recovered_95_s" in g else 0,
                     "dip_median_s": float(g.dip_s.median()) if "dip_s" in g else math.nan,
                     "dip_max_s": float(g.dip_s.max()) if "dip_s" in g else math.nan,
                     "dip_transactions_median": float(g.dip_transactions.median())
                     if "dip_transactions" in g else math.nan,
                     "heal_median_s": float(g.heal_s.median()) if "heal_s" in g else math.nan,
                     **({"disturbed_runs": int((g.lost_cpu > DISTURBED).sum())}
                        if "lost_cpu" in g and g.lost_cpu.notna().any() else {}),
                     **({"rejoin_median_s": float(g.rejoin_s.median()), "rejoin_max_s": float(g.rejoin_s.max()),
                         "rejoin_wait_median_s": float(g.rejoin_wait_s.median()) if "rejoin_wait_s" in g else 0.0,
                         "settled_median_s": float(g.settled_s.median()) if "settled_s" in g else math.nan,
                         "tps_during_rejoin": float(g.tps_during_rejoin.median())
                         if "tps_during_rejoin" in g else math.nan,
                         "rejoin_path": _path_words(g.rejoin_path)} if "rejoin_s" in g and g.rejoin_s.notna().any()
                        else {}),
                     "heal_how": str(g.heal_how.mode().iloc[0]) if "heal_how" in g and len(g.heal_how.dropna())
                     else ""})
    return pd.DataFrame(rows)


def _errant(g: pd.DataFrame) -> dict[str, Any]:
    """Old primaries counted before the heal (promoted clusters): how many held errant transactions, with the
    share's interval, the median and the total (absent: a campaign recorded before they were counted)."""
    if "errant" not in g or not g.errant.notna().any():
        return {}
    e = g.errant.dropna().astype(int)
    k = int((e > 0).sum())
    lo, hi = share_interval(k, len(e))
    return {"errant_runs": k, "errant_counted": int(len(e)), "errant_total": int(e.sum()),
            "errant_median": float(e[e > 0].median()) if k else 0.0,  # over the faults that left any
            "errant_max": int(e.max()), "errant_share_low": lo,
            "errant_share_high": hi}


def _fell_back(g: pd.DataFrame) -> dict[str, Any]:
    """A semi-sync primary through its faults: in how many it fell back to async, how soon, and how many commits it
    then acknowledged without a replica's ack (empty for other systems)."""
    if "fell_back_s" not in g or "no_ack_commits" not in g or g.no_ack_commits.isna().all():
        return {}
    fell = g.fell_back_s.dropna()
    return {"fell_back_runs": int(len(fell)), "fell_back_median_s": float(fell.median()) if len(fell) else math.nan,
            "no_ack_commits_median": float(g.no_ack_commits.median())}


#: a proxy a ledger writer went through, in a finding's words: what it adds to the wait
PROXIES = {"router": "MySQL Router (metadata written by benchlib; Router learns the new primary at its next metadata "
                     "refresh, every 0.5 s by default, which is part of the wait)"}


def _behind_proxy(g: pd.DataFrame) -> dict[str, Any]:
    """The unavailability a writer behind each proxy saw: median (with its interval), p90, max; lost writes."""
    out: dict[str, Any] = {}
    for col in [c for c in g.columns if c.endswith("_unavailability_s") and c != "unavailability_s"]:
        v = col.removesuffix("_unavailability_s")
        u = g[col].to_numpy(dtype=float)
        done = u[~np.isnan(u)]
        lo, hi = quantile_interval(done, 0.5)
        out.update({f"{v}_unavail_median_s": float(np.median(done)) if len(done) else math.nan,
                    f"{v}_unavail_median_low_s": lo, f"{v}_unavail_median_high_s": hi,
                    f"{v}_unavail_p90_s": float(np.quantile(done, 0.9)) if len(done) else math.nan,
                    f"{v}_unavail_max_s": float(done.max()) if len(done) else math.nan,
                    f"{v}_recovered_runs": int(len(done)),
                    f"{v}_lost_total": int(g[f"{v}_lost"].fillna(0).sum()) if f"{v}_lost" in g else 0})
    return out


def _path_words(paths: pd.Series) -> str:
    """The rejoin paths of a configuration's runs, counted ("IST ×8, SST ×1")."""
    kinds = paths.dropna().astype(str).str.extract(r"by (IST|SST|clone|incremental recovery|their GTID)")[0]
    kinds = kinds.fillna(paths.dropna().astype(str).str.split(" \\(").str[0])
    return ", ".join(f"{k} ×{n}" for k, n in kinds.value_counts().items())


def _s(x: float) -> str:
    return "?" if not x == x else f"{x:.2f} s" if x < 10 else f"{x:.1f} s"


def label(row: pd.Series, keys: list[str]) -> str:
    """"gr AFTER_SYNC rate=400 (kill write_node)": the cluster, the settings, the load keys, the fault."""
    parts = [(f"{k}={row[k]:g}" if (k in LOAD_KEYS or k in NAMED) and isinstance(row[k], (int, float))
              else str(row[k])) for k in keys if k not in ("fault",) and str(row[k]) not in ("", "nan", "None")]
    return " ".join(parts) + (f" ({row['fault']})" if "fault" in row else "")


def in_words(s: pd.DataFrame) -> list[str]:
    """One sentence per configuration: unavailability, the new primary, lost writes with their bound, recovery."""
    if s.empty:
        return []
    keys = [c for c in s.columns if c in ("cluster", "fault", *LOAD_KEYS) or c.startswith(SETTING_PREFIXES)]
    out = []
    for _, r in s.iterrows():
        name = label(r, keys)
        n = int(r.runs)
        if r.recovered_runs == 0:
            unavail = f"no write was acknowledged after the fault in any of its {n} runs (the writer waited at " \
                      f"least {_s(r.unavail_at_least_s)})"
        else:
            high = "open" if not r.unavail_p90_high_s == r.unavail_p90_high_s else _s(r.unavail_p90_high_s)
            median_ci = (f"95% {_s(r.unavail_median_low_s)}–{_s(r.unavail_median_high_s)}"
                         if r.unavail_median_low_s == r.unavail_median_low_s else
                         "too few faults for a 95% interval: 6 give one")
            p90_ci = (f"95% from {_s(r.unavail_p90_low_s)}, upper bound {high}"
                      if r.unavail_p90_low_s == r.unavail_p90_low_s else "no interval")
            unavail = (f"writes were unavailable for a median {_s(r.unavail_median_s)} ({median_ci}), p90 "
                       f"{_s(r.unavail_p90_s)} ({p90_ci}), max {_s(r.unavail_max_s)} over "
                       f"{int(r.recovered_runs)} fault{'s' if r.recovered_runs != 1 else ''}" + (f" ({n - int(r.recovered_runs)} more never recovered "
                                                            "within the run)" if r.recovered_runs < n else ""))
        if r.get("disturbed_runs", 0) > 0:  # a failover time is a timing: never redone, said
            k = int(r.disturbed_runs)
            unavail += (f" ({k} of the {n} faults ran while other processes or the hypervisor took more than "
                        f"{DISTURBED:.0%} of the CPU: their times are flagged in the table)")
        primary = (f"; another node was named to take the writes after a median {_s(r.new_primary_median_s)}"
                   if r.new_primary_median_s == r.new_primary_median_s else "")
        if r.writes_elsewhere_median_s == r.writes_elsewhere_median_s:
            primary += (" and acknowledged" if primary else "; another node acknowledged") + \
                f" the writer's first write there after {_s(r.writes_elsewhere_median_s)}"
        audited = int(r.audited_runs)
        if audited == 0:
            lost = "; lost writes were not audited"
        elif r.lost_total == 0:
            lost = (f"; no acknowledged write lost in {audited} fault{'s' if audited != 1 else ''} (95% bound: at most "
                    f"{100 * r.losing_share_high:.0f}% of such faults lose any)")
        else:
            span = r.get("lost_span_median_s", math.nan)
            lost = (f"; {int(r.lost_total)} acknowledged write{'s' if r.lost_total != 1 else ''} lost, in "
                    f"{int(r.runs_losing)} of {audited} faults "
                    f"(95% {100 * r.losing_share_low:.0f}–{100 * r.losing_share_high:.0f}% of such faults), at most "
                    f"{int(r.lost_max)} in one" + (f", a median {r.lost_median:g} a fault over all {audited} "
                                                   f"({_s(span)} of writes)" if span == span else ""))
        if r.get("reads_of_lost_total", 0) > 0:
            distinct = r.get("lost_writes_read_total", math.nan)
            what = (f"{int(distinct)} distinct write{'s' if distinct != 1 else ''} the failover then lost"
                    if distinct == distinct else "writes the failover then lost")
            lost += (f"; {int(r.reads_of_lost_total)} reads by a client beside the write node returned {what}, in "
                     f"{int(r.runs_reading_lost)} of {n} faults")
        if r.get("errant_counted", 0) > 0:
            c = int(r.errant_counted)
            lost += (f"; the old primary came back holding transactions the new primary lacked (errant) after "
                     f"{int(r.errant_runs)} of {c} faults (95% {100 * r.errant_share_low:.0f}–"
                     f"{100 * r.errant_share_high:.0f}%), a median {r.errant_median:g} transactions in those "
                     f"{int(r.errant_runs)} and at most {int(r.errant_max)}, which the heal's rebuild discarded"
                     if r.errant_runs else
                     f"; the old primary came back holding nothing the new primary lacked after any of {c} faults "
                     f"(95% bound: at most {100 * r.errant_share_high:.0f}% of such faults leave errant transactions)")
        if r.get("switchover_median_s", math.nan) == r.get("switchover_median_s", math.nan):
            lost += (f"; the switchover itself took a median {_s(r.switchover_median_s)} (max "
                     f"{_s(r.switchover_max_s)})")
        if "power_cut" in str(r.get("fault", "")):
            lost += ("; a process kill of every node loses what no server had handed to the operating system "
                     "(innodb_flush_log_at_trx_commit = 0: the log buffer, up to a second of commits), not what the "
                     "page cache held: setting 2's loss (an OS crash or a power loss) is not reproduced here")
        if r.get("fell_back_runs", 0) > 0:
            lost += (f"; semi-sync fell back to async in {int(r.fell_back_runs)} of {n} faults, a median "
                     f"{_s(r.fell_back_median_s)} into the fault, and then committed a median "
                     f"{r.no_ack_commits_median:g} transactions without a replica's ack")
        elif "fell_back_runs" in r and r.fell_back_runs == r.fell_back_runs:
            lost += "; semi-sync held through every fault (it never fell back to async)"
        back = ""
        if r.recovered_95_median_s == 0:  # its load did not slow (an async primary cut off from its replicas commits on)
            back = "; sysbench kept 95% of its pre-fault throughput through the fault"
        elif r.recovered_95_median_s == r.recovered_95_median_s:
            back = f"; sysbench back at 95% of its pre-fault throughput after a median {_s(r.recovered_95_median_s)}"
            k = int(r.get("recovered_95_runs", n))
            back += f" (in {k} of {n} faults: the others not within the load)" if k < n else ""
        if r.get("dip_median_s", 0) > 0:  # what the dip cost, in seconds of the throughput before it
            back += (f"; the dip cost a median {_s(r.dip_median_s)} of the pre-fault throughput "
                     f"({r.dip_transactions_median:,.0f} transactions a fault, at most {_s(r.dip_max_s)})")
        heal = r.get("heal_median_s", math.nan)  # the lab's own restoring of the cluster, after the run
        back += f"; the lab's heal after the run took a median {_s(heal)}" if heal == heal else ""
        rejoin = ""
        if "rejoin_median_s" in r and r.rejoin_median_s == r.rejoin_median_s:
            waited = r.get("rejoin_wait_median_s", 0.0)
            rejoin = (f"; the killed node rejoined under the load by {r.rejoin_path} in a median "
                      f"{_s(r.rejoin_median_s)} (max {_s(r.rejoin_max_s)}) from its start"
                      + (f", which waited {_s(waited)} for the group to expel its killed incarnation"
                         if waited == waited and waited > 0.5 else "")
                      + (f", its lag under {SETTLED_MS:.0f} ms for good {_s(r.settled_median_s)} after its restart"
                         if r.settled_median_s == r.settled_median_s else "")
                      + (f", sysbench meanwhile at {r.tps_during_rejoin:.0%} of its pre-fault throughput"
                         if r.tps_during_rejoin == r.tps_during_rejoin else ""))
        proxied = ""
        for col in [c for c in r.index if c.endswith("_unavail_median_s")]:
            v = col.removesuffix("_unavail_median_s")
            if r[col] == r[col]:
                lo, hi = r[f"{v}_unavail_median_low_s"], r[f"{v}_unavail_median_high_s"]
                ci = f" (95% {_s(lo)}–{_s(hi)})" if lo == lo and hi == hi else ""
                lost_v = int(r[f"{v}_lost_total"])
                proxied += (f"; a writer behind {PROXIES.get(v, v)} waited a median {_s(r[col])}{ci}, max {_s(r[f'{v}_unavail_max_s'])}"
                            f", and lost {lost_v} acknowledged write{'s' if lost_v != 1 else ''}")
            else:
                proxied += f"; a writer behind {PROXIES.get(v, v)} never had a write acknowledged again within the run"
        out.append(f"{name}: {unavail}{primary}{proxied}{lost}{back}{rejoin}.")
    return out


def timeline(ledger: pd.DataFrame, t_fault: float, bin_s: float = 0.1, before_s: float = 5.0,
             after_s: float = 30.0) -> pd.DataFrame:
    """The ledger writer's acknowledged writes per second in ``bin_s`` bins around the fault (t relative to it)."""
    acked = ledger[ledger.outcome == "acked"]
    t = acked.t_done_s.to_numpy(dtype=float) - t_fault
    edges = np.arange(-before_s, after_s + bin_s / 2, bin_s)
    counts, _ = np.histogram(t, bins=edges)
    return pd.DataFrame({"t_s": edges[:-1] + bin_s / 2, "acked_per_s": counts / bin_s})
