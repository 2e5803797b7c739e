"""Cost per transaction by node and role, and whether a host or a node was CPU-bound.

From the CLUSTER frame's process rows (``cpu_s``, ``ctx_voluntary``, ``io_write_bytes``... per node), server counters
(``Innodb_data_fsyncs``, ``Bytes_sent``... per node) and host rows
(node ``host:<name>``: ``cpu.all.*_s``, ``disk.<dev>.*``, ``net.<iface>.*``), over each run's load window: the rate
of every counter (difference of its first and last reading in the window over their time apart; a window with a
counter reset gives no value) divided by the run's throughput (sysbench's summary TPS). Per configuration: the
geometric mean over runs with a 95% t interval on the log scale (costs are positive; the interval never reaches 0).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchlib import catalogue
from scipy import stats

__all__ = ["COSTS", "cost_per_trx", "cost_by_config", "cpu_bound", "host_over_time", "role_of", "window_rates"]

#: cost -> (metrics summed, scale to the cost's unit); process rows of server nodes (from /proc) and their server
#: counters (SHOW GLOBAL STATUS: Innodb_data_fsyncs is every fsync InnoDB made, Innodb_os_log_fsyncs the redo log's
#: among them; the binary log's fsyncs are in neither)
PROCESS_COSTS = {"cpu_ms": (("cpu_s",), 1000.0), "ctx_switches": (("ctx_voluntary", "ctx_involuntary"), 1.0),
                 "read_kb": (("io_read_bytes",), 1 / 1024), "write_kb": (("io_write_bytes",), 1 / 1024),
                 "innodb_fsyncs": (("Innodb_data_fsyncs",), 1.0), "redo_fsyncs": (("Innodb_os_log_fsyncs",), 1.0),
                 "net_kb": (("Bytes_sent", "Bytes_received"), 1 / 1024)}
#: host rows: patterns of metrics summed (regular expressions), scale
HOST_COSTS = {"cpu_ms": (r"cpu\.all\.(user|nice|system|irq|softirq)_s", 1000.0),
              "disk_writes": (r"disk\.[^.]+\.writes", 1.0), "disk_write_kb": (r"disk\.[^.]+\.write_bytes", 1 / 1024),
              "disk_read_kb": (r"disk\.[^.]+\.read_bytes", 1 / 1024), "net_tx_kb": (r"net\.[^.]+\.tx_bytes", 1 / 1024)}
COSTS = sorted({*PROCESS_COSTS, *HOST_COSTS})
CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
BUSY = 0.90  # a host or node busier than this share of its CPUs is CPU-bound
IOWAIT = 0.20


def role_of(topology: str, index: int) -> str:
    """A node's role in its run: the write node (sysbench's target), replicas, or the other members of a
    multi-writer cluster."""
    if index == 0:
        return "writer"
    return "member" if catalogue.is_multi_writer(topology) else "replica"


def window_rates(cl: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Per (run, node, metric) counter of ``cl``: its per-second ``rate`` over the run's load window (the difference
    of its first and last reading inside the window over their ``dt_s`` apart), for every run of ``runs`` with a load
    window. A counter reset inside the window (after its first reading there), fewer than two readings or no time
    between them gives no row. One vectorised pass over the whole frame (a campaign's analysis computes it once:
    ``CampaignAnalysis.rates``)."""
    cols = ["run_id", "node", "metric", "rate", "dt_s"]
    if cl.empty or runs.empty or "load_start_s" not in runs:
        return pd.DataFrame(columns=cols)
    w = runs.dropna(subset=["load_start_s"]).drop_duplicates("run_id")
    w = w.set_index(w.run_id.astype(str))
    d = cl[cl.counter.to_numpy(bool)]
    rid = d.run_id.astype(str)
    start = rid.map(w.load_start_s.astype(float)).to_numpy(float)
    end = rid.map(w.load_end_s.astype(float)).to_numpy(float)
    t = d.t_s.to_numpy(float)
    with np.errstate(invalid="ignore"):
        d = d[(t >= start) & (t <= end)]  # NaN (no window): no row
    if d.empty:
        return pd.DataFrame(columns=cols)
    d = d[["run_id", "node", "metric", "t_s", "value", "reset"]].sort_values("t_s", kind="stable")
    g = d.groupby([d.run_id.astype(str), d.node.astype(str), d.metric.astype(str)], sort=False, observed=True)
    agg = g.agg(t0=("t_s", "first"), t1=("t_s", "last"), v0=("value", "first"), v1=("value", "last"),
                n=("t_s", "size"), resets=("reset", "sum"), reset0=("reset", "first"))
    agg = agg[(agg.n >= 2) & (agg.resets - agg.reset0.astype(int) == 0) & (agg.t1 > agg.t0)]
    dt = agg.t1 - agg.t0
    out = pd.DataFrame({"rate": (agg.v1 - agg.v0) / dt, "dt_s": dt})
    out.index.names = ["run_id", "node", "metric"]
    return out.reset_index()[cols]


def _rates_of(a) -> pd.DataFrame:
    """The campaign's window rates, computed once per analysis (``CampaignAnalysis.rates``) or here."""
    rates = getattr(a, "rates", None)
    if rates is not None:
        return rates
    return window_rates(a.frames.get("cluster", pd.DataFrame()), a.runs[a.runs.status == "ok"])


def cost_per_trx(a) -> pd.DataFrame:
    """One row per (run, node or host, cost): ``per_trx`` in the cost's unit per transaction, ``per_s`` per second,
    with the node's ``role`` (writer, replica, member, host)."""
    runs = a.runs[(a.runs.status == "ok")]
    cols = ["run_id", "config", "cluster", "node", "role", "cost", "per_s", "per_trx"]
    rates = _rates_of(a)
    if rates.empty or runs.empty or "summary_tps" not in runs:
        return pd.DataFrame(columns=cols)
    runs = runs.assign(run_id=runs.run_id.astype(str)).drop_duplicates("run_id").set_index("run_id")
    runs = runs[pd.to_numeric(runs.summary_tps, errors="coerce").fillna(0) > 0]
    rates = rates[rates.run_id.isin(runs.index)]
    parts = []
    # server nodes: each cost is the sum of its metrics' rates, when every one of them was measured
    nodes = rates[~rates.node.str.startswith("host:")]
    for cost, (metrics, scale) in PROCESS_COSTS.items():
        mine = nodes[nodes.metric.isin(metrics)]
        if mine.empty:
            continue
        g = mine.groupby(["run_id", "node"], sort=False).agg(per_s=("rate", "sum"), k=("metric", "nunique"))
        g = g[g.k == len(set(metrics))].reset_index()
        parts.append(g.assign(cost=cost, per_s=g.per_s * scale))
    hosts = rates[rates.node.str.startswith("host:")]
    for cost, (pattern, scale) in HOST_COSTS.items():
        mine = hosts[hosts.metric.str.fullmatch(pattern)]
        if mine.empty:
            continue
        g = mine.groupby(["run_id", "node"], sort=False).agg(per_s=("rate", "sum")).reset_index()
        parts.append(g.assign(cost=cost, per_s=g.per_s * scale))
    if not parts:
        return pd.DataFrame(columns=cols)
    out = pd.concat(parts, ignore_index=True)
    # the node's role in its run: by its place in the run's node list (the writer first)
    place = {(rid, n): i for rid, ns in runs.nodes.astype(str).items() for i, n in enumerate(ns.split(","))}
    index = np.array([place.get(k, -1) for k in zip(out.run_id, out.node)])
    host = out.node.str.startswith("host:").to_numpy()
    out = out[host | (index >= 0)]
    index, host = index[host | (index >= 0)], host[host | (index >= 0)]
    topo = out.run_id.map(runs.topology.astype(str)).to_numpy()
    multi = np.isin(topo, [t.name for t in catalogue.TOPOLOGIES.values() if t.multi_writer])
    out["role"] = np.where(host, "host", np.where(index == 0, "writer", np.where(multi, "member", "replica")))
    out["config"] = out.run_id.map(runs.config).to_numpy()
    out["cluster"] = out.run_id.map(runs.cluster).to_numpy()
    out["per_trx"] = out.per_s / out.run_id.map(pd.to_numeric(runs.summary_tps)).to_numpy(float)
    order = {r: i for i, r in enumerate(runs.index)}
    out = out.sort_values(["run_id", "node"], key=lambda c: c.map(order) if c.name == "run_id" else c, kind="stable")
    return out[cols].reset_index(drop=True)


def _interval(values: np.ndarray) -> tuple[float, float, float]:
    v = values[values > 0]
    if len(v) == 0:
        return np.nan, np.nan, np.nan
    logs = np.log(v)
    mean = float(np.exp(logs.mean()))
    if len(v) < 2:
        return mean, np.nan, np.nan
    half = stats.t.ppf(0.975, len(v) - 1) * logs.std(ddof=1) / np.sqrt(len(v))
    return mean, float(np.exp(logs.mean() - half)), float(np.exp(logs.mean() + half))


def cost_by_config(a, per_run: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (configuration, role, cost): the geometric mean cost per transaction over runs (nodes of one role
    summed within a run: the cluster's replicas together) with a 95% interval."""
    per_run = cost_per_trx(a) if per_run is None else per_run
    cols = ["config", "cluster", "role", "cost", "runs", "per_trx", "ci_low", "ci_high"]
    if per_run.empty:
        return pd.DataFrame(columns=cols)
    summed = per_run.groupby(["run_id", "config", "cluster", "role", "cost"], as_index=False).per_trx.sum()
    rows = []
    for (config, cluster, role, cost), g in summed.groupby(["config", "cluster", "role", "cost"], sort=True):
        mean, lo, hi = _interval(g.per_trx.to_numpy())
        rows.append((config, cluster, role, cost, len(g), mean, lo, hi))
    return pd.DataFrame(rows, columns=cols)


def cpu_bound(a) -> pd.DataFrame:
    """Per run and host: the busy share of its CPUs and the iowait share over the load window, and the busiest
    server node's share of the host's CPUs; ``bound`` says which limit was crossed ('' when none)."""
    cols = ["run_id", "config", "host", "cpus", "busy", "iowait", "node", "node_share", "bound"]
    rates = _rates_of(a)
    if rates.empty or not rates.node.str.startswith("host:").any():
        return pd.DataFrame(columns=cols)
    runs = a.runs[a.runs.status == "ok"]
    runs = runs.assign(run_id=runs.run_id.astype(str)).drop_duplicates("run_id").set_index("run_id")
    hosts = rates[rates.node.str.startswith("host:") & rates.metric.str.startswith("cpu.")]
    split = hosts.metric.str.split(".", n=2, expand=True)
    hosts = hosts.assign(cpu=split[1], field=split[2].str.removesuffix("_s"))
    whole = hosts[hosts.cpu == "all"].pivot_table(index=["run_id", "node"], columns="field", values="rate",
                                                  aggfunc="first")
    cpus = hosts[hosts.cpu != "all"].groupby(["run_id", "node"]).cpu.nunique()
    whole = whole.join(cpus.rename("cpus"), how="inner")
    total = whole[[f for f in CPU_FIELDS if f in whole.columns]].sum(axis=1)
    whole = whole[(total > 0) & (whole.cpus > 0)]
    total = total[whole.index]
    idle = whole.get("idle", 0) + whole.get("iowait", 0)
    busy = 1 - idle / total
    iowait = whole.get("iowait", pd.Series(0.0, index=whole.index)) / total
    node_cpu = rates[(rates.metric == "cpu_s") & ~rates.node.str.startswith("host:")]
    members = {(rid, n) for rid, ns in runs.nodes.astype(str).items() for n in ns.split(",")}
    node_cpu = node_cpu[np.array([k in members for k in zip(node_cpu.run_id, node_cpu.node)], dtype=bool)]
    top = node_cpu.sort_values("rate", ascending=False, kind="stable").drop_duplicates("run_id").set_index("run_id")
    rows = []
    for (run_id, host), b in busy.items():
        if run_id not in runs.index:
            continue
        n = int(whole.at[(run_id, host), "cpus"])
        node = str(top.at[run_id, "node"]) if run_id in top.index else ""
        share = float(top.at[run_id, "rate"]) / n if node else np.nan
        io = float(iowait[(run_id, host)])
        bound = ", ".join(w for w, hit in (("host CPU", b > BUSY), ("iowait", io > IOWAIT),
                                           (f"{node} CPU", bool(node) and share > BUSY)) if hit)
        rows.append((run_id, runs.at[run_id, "config"], host, n, float(b), io, node, share, bound))
    out = pd.DataFrame(rows, columns=cols)
    order = {r: i for i, r in enumerate(runs.index)}
    return out.sort_values(["run_id", "host"], key=lambda c: c.map(order) if c.name == "run_id" else c,
                           kind="stable").reset_index(drop=True)


_BUSY = ("user", "nice", "system", "irq", "softirq", "steal")
_HOST_SERIES = r"cpu\.all\.[a-z]+_s|disk\.[^.]+\.(read|write)_bytes|foreign\.cpu_s|psi\.(cpu|io)\.some_us"


def host_over_time(a, run_ids: list[str] | None = None, *, busiest: bool = True) -> pd.DataFrame:
    """Each run's host, second by second over its load: ``cpu_busy_pct`` (user, nice, system, irq, softirq and
    steal over all CPU time: 100 is every CPU busy), ``iowait_pct``, ``disk_write_mib_s`` and ``disk_read_mib_s``
    (whole disks summed), at ``t_s`` seconds since the run's load started (the clock of sysbench's intervals).
    A sample after a counter reset gives no value. With ``busiest``, one host per run: the one with the highest
    mean CPU busy (a remote lab's client hosts: the one that could have limited the run). The interference beside
    it (``benchlib.analysis.interference``): ``steal_pct``, ``foreign_pct`` (NaN where it was not sampled),
    ``lost_pct`` (the two: the CPU the lab lost to others), ``psi_cpu_pct`` and ``psi_io_pct`` (share of the second
    some task waited for a CPU or for I/O)."""
    cl = a.frames.get("cluster", pd.DataFrame())
    cols = ["run_id", "config", "host", "t_s", "cpu_busy_pct", "iowait_pct", "disk_write_mib_s", "disk_read_mib_s",
            "steal_pct", "foreign_pct", "lost_pct", "psi_cpu_pct", "psi_io_pct"]
    if cl.empty:
        return pd.DataFrame(columns=cols)
    h = cl[cl.node.astype(str).str.startswith("host:")]
    h = h[h.metric.astype(str).str.fullmatch(_HOST_SERIES)]
    if run_ids is not None:
        h = h[h.run_id.isin(run_ids)]
    runs = a.runs.set_index("run_id")
    parts = []
    for (run_id, host), g in h.groupby(["run_id", "node"], observed=True, sort=True):
        if run_id not in runs.index or pd.isna(runs.at[run_id, "load_start_s"]):
            continue
        start, end = float(runs.at[run_id, "load_start_s"]), runs.at[run_id, "load_end_s"]
        anchor = np.sort(g.t_s[g.metric.astype(str) == "cpu.all.user_s"].unique())
        if len(anchor) > 1:  # another probe's rows (foreign CPU) onto the host probe's nearest tick, a few ms away
            at = np.clip(np.searchsorted(anchor, g.t_s.to_numpy(float)), 1, len(anchor) - 1)
            left, right = anchor[at - 1], anchor[at]
            g = g.assign(t_s=np.where(g.t_s - left <= right - g.t_s, left, right))
        wide = g.pivot_table(index="t_s", columns="metric", values="value", aggfunc="last").sort_index()
        reset = g.groupby("t_s").reset.any().reindex(wide.index).fillna(False).to_numpy()
        d = wide.diff()
        dt = pd.Series(wide.index, index=wide.index).diff()
        cpu = [c for c in d.columns if c.startswith("cpu.all.")]
        total = d[cpu].sum(axis=1).replace(0, np.nan)
        busy = d[[f"cpu.all.{f}_s" for f in _BUSY if f"cpu.all.{f}_s" in d.columns]].sum(axis=1)
        frame = pd.DataFrame({
            "t_s": wide.index - start,
            "cpu_busy_pct": 100 * busy / total,
            "iowait_pct": 100 * d.get("cpu.all.iowait_s", np.nan) / total,
            "disk_write_mib_s": d[[c for c in d.columns if c.endswith(".write_bytes")]].sum(axis=1) / dt / 2 ** 20,
            "disk_read_mib_s": d[[c for c in d.columns if c.endswith(".read_bytes")]].sum(axis=1) / dt / 2 ** 20,
            "steal_pct": 100 * d.get("cpu.all.steal_s", np.nan) / total,
            "foreign_pct": 100 * d.get("foreign.cpu_s", np.nan) / total,
            "psi_cpu_pct": 100 * d.get("psi.cpu.some_us", np.nan) / 1e6 / dt,
            "psi_io_pct": 100 * d.get("psi.io.some_us", np.nan) / 1e6 / dt,
        })
        frame["lost_pct"] = frame.steal_pct.fillna(0) + frame.foreign_pct.fillna(0)
        frame.iloc[reset, 1:] = np.nan
        frame = frame.iloc[1:]
        last = (float(end) - start + 1) if pd.notna(end) else np.inf
        frame = frame[(frame.t_s > 0) & (frame.t_s <= last)]
        parts.append(frame.assign(run_id=run_id, config=runs.at[run_id, "config"], host=host))
    if not parts:
        return pd.DataFrame(columns=cols)
    out = pd.concat(parts, ignore_index=True)[cols]
    if busiest:
        mean = out.groupby(["run_id", "host"], observed=True).cpu_busy_pct.mean().reset_index()
        top = mean.sort_values("cpu_busy_pct", ascending=False).drop_duplicates("run_id")
        out = out.merge(top[["run_id", "host"]], on=["run_id", "host"])
    return out.reset_index(drop=True)
