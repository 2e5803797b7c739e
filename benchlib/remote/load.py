"""sysbench on one or more client hosts at once, merged into one run on a common clock.

A run's threads are split over the client hosts as the remote lab spec says. Every host's
sysbench is spawned first, then all are released together; each reports its own wall-clock
start, which the host's clock offset (estimated over SSH, lowest round trip) puts on the
sampler's clock. Per-second lines are parsed live on every host; the merged second k holds
every host's interval that ends in second k of the common clock (starts differ by
milliseconds, so each merged second has one interval per host):

- throughput columns (tps, qps, reads/writes/other, errors, reconnects), threads, queue
  length and concurrency are sums;
- the latency percentile of a merged second is the highest of the hosts' (an upper bound of
  the percentile of all transactions of that second: the exact value needs every latency);
- the run's histogram is the sum of the hosts' histograms (same sysbench buckets), and the
  run's percentile is read from it as sysbench reads its own.

Seconds that not every host covered (the edges, when a host started a second late) are dropped.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import pandas as pd

from benchlib.schema import HISTOGRAM, INTERVALS
from benchlib.sysbench.output import Interval, LineParser, SysbenchParseError, SysbenchResult

if TYPE_CHECKING:
    from benchlib.campaign.sysbench_run import LoadResult, SysbenchOptions
    from benchlib.remote.lab import RemoteLab

REMOTE_DIR = ".cache/benchlib"  # relative to the SSH user's home on the client hosts
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
class _Live:
    """Per-second lines of every host, merged by index as they arrive (for progress and the watchdog)."""

    hosts: list[str]
    on_interval: Callable[[Interval], None] | None
    seen: dict[int, dict[str, Interval]] = field(default_factory=dict)
    emitted: int = 0
    last: float = field(default_factory=time.monotonic)
    zero_since: float | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def feed(self, host: str, iv: Interval) -> None:
        with self.lock:
            k = int(round(iv.t_s))
            row = self.seen.setdefault(k, {})
            row[host] = iv
            if len(row) < len(self.hosts) or k <= self.emitted:
                return
            self.emitted = k
            self.last = time.monotonic()
            ivs = list(row.values())
            merged = Interval(float(k), *(sum(getattr(i, c) for i in ivs) for c in ("threads", "tps", "qps",
                                                                                   "reads_per_s", "writes_per_s",
                                                                                   "other_per_s")),
                              ivs[0].pctl, max(i.lat_pctl_ms for i in ivs), sum(i.err_per_s for i in ivs),
                              sum(i.reconn_per_s for i in ivs),
                              sum(i.queue_length or 0 for i in ivs) if ivs[0].queue_length is not None else None,
                              sum(i.concurrency or 0 for i in ivs) if ivs[0].concurrency is not None else None)
            if merged.tps == 0 and merged.err_per_s == 0:
                self.zero_since = self.zero_since or time.monotonic() - 1
            else:
                self.zero_since = None
        if self.on_interval:
            self.on_interval(merged)


def sysbench_config(lab: "RemoteLab", node: str) -> str:
    """sysbench's connection options for ``node`` (password included): sent on standard input only."""
    n = lab.node(node)
    user, pw = lab.password(lab.cluster_of(node))
    return (f"db-driver=mysql\nmysql-host={n.host}\nmysql-port={n.port}\nmysql-user={user}\n"
            f"mysql-password={pw}\nmysql-db=sbtest\n")


def remote_script(lab: "RemoteLab", opts: "SysbenchOptions", hosts: list[str]) -> str:
    """The test script's name on the client hosts: sysbench's own, or benchlib's Lua file uploaded."""
    from pathlib import Path

    script = opts.spec.script
    if "/" not in script:
        return script
    local = Path(script)
    target = f"{REMOTE_DIR}/{local.name}"
    for h in hosts:
        lab.ssh.put_text(h, target, local.read_text())
    return target


def prepare_remote(lab: "RemoteLab", writer: str, opts: "SysbenchOptions") -> str:
    """``sysbench prepare`` from the first client host; returns its output. Raises RunError on failure."""
    import shlex

    from benchlib.campaign.sysbench_run import RunError

    host = next(iter(lab.spec.clients))
    client = lab.spec.clients[host]
    script = remote_script(lab, opts, [host])
    args = [*opts.dataset_args(), f"--threads={min(opts.tables, 4)}"]
    cmd = " ".join(shlex.quote(x) for x in [client.sysbench, "--config-file=/dev/stdin", script, *args, "prepare"])
    rc, out, err = lab.ssh.run(host, cmd, input=sysbench_config(lab, writer), timeout=3600)
    if rc != 0:
        raise RunError(f"sysbench prepare of {opts.dataset_key} failed on client host {host} (exit {rc})",
                       detail="\n".join("    " + line for line in (out + err).splitlines()[-8:]))
    return out


def run_remote(lab: "RemoteLab", writer: str, opts: "SysbenchOptions", *, stall_s: float = 10.0,
               on_interval: Callable[[Interval], None] | None = None, source: str = "sysbench",
               abort_if: Callable[[], str | None] | None = None) -> "LoadResult":
    """One sysbench load from every client host together (threads and rate split by the spec's shares)."""
    import shlex
    from dataclasses import replace

    from benchlib.campaign.sysbench_run import LoadResult

    ssh = lab.ssh
    hosts = list(lab.spec.clients)
    threads = lab.spec.split_threads(opts.threads)
    rates = ({h: max(1, round(opts.rate * threads[h] / opts.threads)) for h in hosts} if opts.rate else {})
    script = remote_script(lab, opts, hosts)
    offsets = {h: ssh.clock_offset(h) for h in hosts}
    live = _Live(hosts, on_interval)
    parsers = {h: LineParser(f"{source}:{h}") for h in hosts}
    lines: dict[str, list[str]] = {h: [] for h in hosts}
    errors: dict[str, str] = {}

    def on_line(host: str):
        def feed(line: str) -> None:
            lines[host].append(line)
            if host in errors:
                return
            try:
                iv = parsers[host].feed(line)
            except SysbenchParseError as exc:
                errors[host] = str(exc)
                return
            if iv is not None:
                live.feed(host, iv)
        return feed

    procs = []
    config = sysbench_config(lab, writer)
    try:
        for h in hosts:
            part = replace(opts, threads=threads[h], rate=rates.get(h))
            argv = [lab.spec.clients[h].sysbench, "--config-file=/dev/stdin", script, *part.run_args(), "run"]
            procs.append(ssh.spawn(h, " ".join(shlex.quote(a) for a in argv), on_line(h)))
        t_go = ssh.go(procs, {p.host: config for p in procs})
        state: dict[str, str | None] = {"hung": None, "aborted": None}
        next_check = time.monotonic()
        while not all(p.done.is_set() for p in procs):
            time.sleep(0.1)
            now = time.monotonic()
            if abort_if is not None and now >= next_check:
                next_check = now + 0.5
                reason = abort_if()
                if reason:
                    state["aborted"] = reason
                    break
            if live.emitted and now - live.last > stall_s:
                state["hung"] = f"no per-second output from every client host for {stall_s:g} s"
                break
            if live.zero_since is not None and now - live.zero_since > stall_s:
                state["hung"] = f"no transaction completed for {stall_s:g} s"
                break
            if not live.emitted and now - (t_go if t_go else now) > stall_s + 30 + opts.time_s:
                state["hung"] = "no per-second output from the client hosts"
                break
            failed = [p for p in procs if p.done.is_set() and p.exit_status not in (0, None)]
            if failed:
                break  # one host's sysbench died: stop the others, the run fails below
    finally:
        for p in procs:
            ssh.kill(p)
    parts = {}
    for p in procs:
        res = parsers[p.host].finish(ended_with_newline=bool(lines[p.host]) and lines[p.host][-1].endswith("\n"))
        start = (p.start_wall if p.start_wall is not None else t_go + offsets[p.host].offset_s)
        parts[p.host] = (offsets[p.host].to_local(start), res)
    merged = merge_results(parts, source)
    output = "".join(f"### client host {h} ({threads[h]} threads)\n" + "".join(lines[h]) for h in hosts)
    facts = lab.client_facts()
    extra = {"client_hosts": {h: {"threads": threads[h], "rate": rates.get(h), "exit_status": p.exit_status,
                                  "start_s": parts[h][0], "clock_offset": offsets[h].as_dict(), **facts.get(h, {})}
                              for h, p in zip(hosts, procs)},
             "outputs": {h: "".join(lines[h]) for h in hosts}}
    bad = [p for p in procs if p.exit_status not in (0, None)]
    if state["hung"]:
        return LoadResult("hung", state["hung"], output, None, merged, extra)
    if state["aborted"]:
        return LoadResult("failed", state["aborted"], output, None, merged, extra)
    if errors:
        return LoadResult("failed", "; ".join(errors.values()), output, None, None, extra)
    if bad:
        why = "; ".join(f"{p.host}: " + ("; ".join(parsers[p.host].result.fatal) or f"exit {p.exit_status}")
                        for p in bad)
        return LoadResult("failed", why, output, bad[0].exit_status, merged, extra)
    return LoadResult("ok", None, output, 0, merged, extra)
