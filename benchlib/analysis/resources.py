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
from scipy import stats

__all__ = ["COSTS", "cost_per_trx", "cost_by_config", "cpu_bound", "host_over_time", "role_of"]

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
MULTI_WRITER = {"galera", "pxc", "group_replication"}
BUSY = 0.90  # a host or node busier than this share of its CPUs is CPU-bound
IOWAIT = 0.20


def role_of(topology: str, index: int) -> str:
    """A node's role in its run: the write node (sysbench's target), replicas, or the other members of a
    multi-writer cluster."""
    if index == 0:
        return "writer"
    return "member" if topology in MULTI_WRITER else "replica"


def _windows(cl: pd.DataFrame, runs: pd.DataFrame):
    """(run, its rows of ``cl`` inside its load window) for every run with a load window; the frame is split by
    run once (filtering it per run would read every row once per run)."""
    by_run = dict(tuple(cl.groupby("run_id", sort=False)))
    for run in runs.itertuples(index=False):
        d = by_run.get(run.run_id)
        if d is None or pd.isna(run.load_start_s):
            continue
        yield run, d[(d.t_s >= run.load_start_s) & (d.t_s <= run.load_end_s)]


def _rates(d: pd.DataFrame) -> pd.Series:
    """Per-second rate of every (node, metric) counter over the window; none where it was reset."""
    out = {}
    for (node, metric), g in d[d.counter].groupby(["node", "metric"], sort=False):
        if len(g) < 2 or g.reset.iloc[1:].any() or g.t_s.iloc[-1] <= g.t_s.iloc[0]:
            continue
        out[(node, metric)] = (g.value.iloc[-1] - g.value.iloc[0]) / (g.t_s.iloc[-1] - g.t_s.iloc[0])
    return pd.Series(out, dtype=float)


def cost_per_trx(a) -> pd.DataFrame:
    """One row per (run, node or host, cost): ``per_trx`` in the cost's unit per transaction, ``per_s`` per second,
    with the node's ``role`` (writer, replica, member, host)."""
    cl = a.frames.get("cluster", pd.DataFrame())
    runs = a.runs[(a.runs.status == "ok")]
    cols = ["run_id", "config", "cluster", "node", "role", "cost", "per_s", "per_trx"]
    if cl.empty or runs.empty or "summary_tps" not in runs:
        return pd.DataFrame(columns=cols)
    rows = []
    for run, window in _windows(cl, runs):
        tps = run.summary_tps
        if not tps or pd.isna(tps):
            continue
        rates = _rates(window)
        if rates.empty:
            continue
        nodes = str(run.nodes).split(",")
        for i, node in enumerate(nodes):
            for cost, (metrics, scale) in PROCESS_COSTS.items():
                keys = [(node, m) for m in metrics]
                if all(k in rates.index for k in keys):
                    per_s = float(sum(rates[k] for k in keys)) * scale
                    rows.append((run.run_id, run.config, run.cluster, node, role_of(run.topology, i), cost, per_s,
                                 per_s / tps))
        for host in sorted({n for n, _ in rates.index if str(n).startswith("host:")}):
            mine = rates[[n == host for n, _ in rates.index]]
            names = pd.Series([m for _, m in mine.index], index=mine.index)
            for cost, (pattern, scale) in HOST_COSTS.items():
                picked = mine[names.str.fullmatch(pattern).to_numpy()]
                if len(picked):
                    per_s = float(picked.sum()) * scale
                    rows.append((run.run_id, run.config, run.cluster, host, "host", cost, per_s, per_s / tps))
    return pd.DataFrame(rows, columns=cols)


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
    cl = a.frames.get("cluster", pd.DataFrame())
    cols = ["run_id", "config", "host", "cpus", "busy", "iowait", "node", "node_share", "bound"]
    if cl.empty or not cl.node.astype(str).str.startswith("host:").any():
        return pd.DataFrame(columns=cols)
    rows = []
    for run, window in _windows(cl, a.runs[a.runs.status == "ok"]):
        rates = _rates(window)
        nodes = str(run.nodes).split(",")
        for host in sorted({n for n, _ in rates.index if str(n).startswith("host:")}):
            fields = {m.split(".")[2][:-2]: v for (n, m), v in rates.items() if n == host and m.startswith("cpu.all.")}
            cpus = len({m.split(".")[1] for (n, m) in rates.index if n == host and m.startswith("cpu.cpu")})
            total = sum(fields.values())
            if not total or not cpus:
                continue
            busy = 1 - (fields.get("idle", 0) + fields.get("iowait", 0)) / total
            iowait = fields.get("iowait", 0) / total
            node_cpu = {n: rates[(n, "cpu_s")] for n in nodes if (n, "cpu_s") in rates.index}
            top = max(node_cpu, key=node_cpu.get) if node_cpu else ""
            share = node_cpu[top] / cpus if top else np.nan
            bound = ", ".join(w for w, hit in (("host CPU", busy > BUSY), ("iowait", iowait > IOWAIT),
                                               (f"{top} CPU", top and share > BUSY)) if hit)
            rows.append((run.run_id, run.config, host, cpus, busy, iowait, top, share, bound))
    return pd.DataFrame(rows, columns=cols)


_BUSY = ("user", "nice", "system", "irq", "softirq", "steal")
_HOST_SERIES = r"cpu\.all\.[a-z]+_s|disk\.[^.]+\.(read|write)_bytes"


def host_over_time(a, run_ids: list[str] | None = None, *, busiest: bool = True) -> pd.DataFrame:
    """Each run's host, second by second over its load: ``cpu_busy_pct`` (user, nice, system, irq, softirq and
    steal over all CPU time: 100 is every CPU busy), ``iowait_pct``, ``disk_write_mib_s`` and ``disk_read_mib_s``
    (whole disks summed), at ``t_s`` seconds since the run's load started (the clock of sysbench's intervals).
    A sample after a counter reset gives no value. With ``busiest``, one host per run: the one with the highest
    mean CPU busy (a remote lab's client hosts: the one that could have limited the run)."""
    cl = a.frames.get("cluster", pd.DataFrame())
    cols = ["run_id", "config", "host", "t_s", "cpu_busy_pct", "iowait_pct", "disk_write_mib_s", "disk_read_mib_s"]
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
        })
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
