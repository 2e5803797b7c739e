"""Merging the sysbench output of several client hosts into one run on a common clock.

The merged second k holds every host's interval that ends in second k of the common clock
(starts differ by milliseconds, so each merged second has one interval per host):

- throughput columns (tps, qps, reads/writes/other, errors, reconnects), threads, queue
  length and concurrency are sums (``SUM_COLUMNS``);
- the latency percentile of a merged second is the highest of the hosts' (an upper bound of
  the percentile of all transactions of that second: the exact value needs every latency);
- the run's histogram is the sum of the hosts' histograms (same sysbench buckets), and the
  run's percentile is read from it as sysbench reads its own.

Seconds that not every host covered (the edges, when a host started a second late) are dropped.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd

from benchlib.schema import HISTOGRAM, INTERVALS
from benchlib.sysbench.output import Interval, SysbenchResult

__all__ = ["SUM_COLUMNS", "LiveMerge", "histogram_percentile", "merge_results"]

SUM_COLUMNS = ("threads", "tps", "qps", "reads_per_s", "writes_per_s", "other_per_s", "err_per_s", "reconn_per_s")


def histogram_percentile(hist: pd.DataFrame, pctl: float) -> float | None:
    """The latency at percentile ``pctl`` of a sysbench histogram (the first bucket reaching it)."""
    if hist.empty or hist["count"].sum() == 0:
        return None
    h = hist.sort_values("lat_ms")
    need = math.ceil(h["count"].sum() * pctl / 100)
    reached = h[h["count"].cumsum() >= need]
    return float(reached["lat_ms"].iloc[0])


def merge_results(parts: dict[str, tuple[float, SysbenchResult]], source: str = "merged") -> SysbenchResult:
    """Merge per-host results; ``parts`` maps host -> (its start on the sampler's clock, its result)."""
    if len(parts) == 1:
        return next(iter(parts.values()))[1]
    origin = min(start for start, _ in parts.values())
    frames = []
    for host, (start, res) in parts.items():
        f = res.intervals.copy()
        if f.empty:
            continue
        f["second"] = np.rint(start - origin + f["t_s"]).astype(int)
        f["host"] = host
        frames.append(f)
    results = [r for _, r in parts.values()]
    out = SysbenchResult(source, version=results[0].version, threads=sum(r.threads or 0 for r in results),
                         target_rate=(sum(r.target_rate for r in results) if all(r.open_loop for r in results)
                                      else None),
                         report_interval_s=results[0].report_interval_s)
    out.fatal = [f"{h}: {m}" for h, (_, r) in parts.items() for m in r.fatal]
    out.truncated = any(r.truncated for r in results)
    out.truncation = "; ".join(f"{h}: {r.truncation}" for h, (_, r) in parts.items() if r.truncation) or None
    if frames:
        allf = pd.concat(frames, ignore_index=True)
        complete = allf.groupby("second")["host"].nunique()
        keep = complete[complete == len(frames)].index
        allf = allf[allf["second"].isin(keep)]
        agg: dict[str, Any] = {c: "sum" for c in SUM_COLUMNS}
        agg.update(pctl="first", lat_pctl_ms="max", queue_length="sum", concurrency="sum")
        merged = allf.groupby("second").agg(agg).reset_index()
        for c in ("queue_length", "concurrency"):
            if allf[c].isna().all():
                merged[c] = pd.NA
        merged["t_s"] = merged["second"].astype(float)
        out.intervals = INTERVALS.frame({c: merged[c].tolist() for c in INTERVALS.columns})
    hists = [r.histogram for r in results if not r.histogram.empty]
    if hists:
        h = pd.concat(hists).groupby("lat_ms", as_index=False)["count"].sum()
        out.histogram = HISTOGRAM.frame({"lat_ms": h["lat_ms"].tolist(), "count": h["count"].tolist()})
    summaries = [r.summary for r in results]
    if all("tps" in s for s in summaries):
        s: dict[str, float] = {}
        for k in ("transactions", "queries", "ignored_errors", "reconnects", "queries_read", "queries_write",
                  "queries_other", "queries_total", "events", "lat_sum_ms"):
            if all(k in x for x in summaries):
                s[k] = sum(x[k] for x in summaries)
        s["total_time_s"] = max(x.get("total_time_s", 0) for x in summaries)
        for k, rate in (("transactions", "tps"), ("queries", "qps"), ("ignored_errors", "err_per_s"),
                        ("reconnects", "reconn_per_s")):
            if k in s and s["total_time_s"]:
                s[rate] = s[k] / s["total_time_s"]
        s["lat_min_ms"] = min(x["lat_min_ms"] for x in summaries)
        s["lat_max_ms"] = max(x["lat_max_ms"] for x in summaries)
        if s.get("events"):
            s["lat_avg_ms"] = s["lat_sum_ms"] / s["events"]
        pctl = summaries[0].get("pctl")
        if pctl is not None:
            s["pctl"] = pctl
            from_hist = histogram_percentile(out.histogram, pctl)
            s["lat_pctl_ms"] = from_hist if from_hist is not None else max(x["lat_pctl_ms"] for x in summaries)
        weights = [r.threads or 1 for r in results]
        for name in ("fairness_events", "fairness_time_s"):  # per-thread mean and spread over every thread
            if all(f"{name}_avg" in x and f"{name}_stddev" in x for x in summaries):
                total = sum(weights)
                mean = sum(w * x[f"{name}_avg"] for w, x in zip(weights, summaries)) / total
                var = sum(w * (x[f"{name}_stddev"] ** 2 + (x[f"{name}_avg"] - mean) ** 2)
                          for w, x in zip(weights, summaries)) / total
                s[f"{name}_avg"], s[f"{name}_stddev"] = mean, math.sqrt(var)
        # the keys in sysbench's own order: a merged run's summary has the form of a single host's
        out.summary = {k: s[k] for k in summaries[0] if k in s} | {k: v for k, v in s.items() if k not in summaries[0]}
    return out


@dataclass
class LiveMerge:
    """Per-second lines of every host, merged by index as they arrive (for progress and the watchdog):
    second k is emitted once every host has reported it, with the same rules as ``merge_results``."""

    hosts: list[str]
    on_interval: Callable[[Interval], None]
    seen: dict[int, dict[str, Interval]] = field(default_factory=dict)
    emitted: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def feed(self, host: str, iv: Interval) -> None:
        with self.lock:
            k = int(round(iv.t_s))
            row = self.seen.setdefault(k, {})
            row[host] = iv
            if len(row) < len(self.hosts) or k <= self.emitted:
                return
            self.emitted = k
            ivs = list(row.values())
            sums = {c: sum(getattr(i, c) for i in ivs) for c in SUM_COLUMNS}
            merged = Interval(t_s=float(k), pctl=ivs[0].pctl, lat_pctl_ms=max(i.lat_pctl_ms for i in ivs),
                              queue_length=(sum(i.queue_length or 0 for i in ivs)
                                            if ivs[0].queue_length is not None else None),
                              concurrency=(sum(i.concurrency or 0 for i in ivs)
                                           if ivs[0].concurrency is not None else None), **sums)
        self.on_interval(merged)
