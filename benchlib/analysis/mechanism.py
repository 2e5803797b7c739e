"""Why a ratio is what it is: per run, what a commit cost on the write node and what bound the host, from the
counters benchlib samples every second (``resources.window_rates``: each counter's rate over the run's load window).

Per run (``per_run``), per transaction of sysbench's (its summary TPS):

- ``fsyncs``: the write node's fsyncs a commit, InnoDB's (``Innodb_data_fsyncs``) plus the binary log's (one a
  group commit, ``Binlog_group_commits``, with ``sync_binlog = 1``; one every N with N; none with 0);
  ``innodb_fsyncs`` and ``binlog_fsyncs`` apart;
- ``redo_kb`` and ``binlog_kb``: bytes written to the redo log and the binary log a commit;
- ``commit_wait_ms``: the mean time a commit waited for replication, as the system reports it, and ``wait_kind``:
  semi-sync's wait for a replica's acknowledgement (``Rpl_semi_sync_*_tx_wait_time`` over ``_tx_waits``; older
  records: the average it reports), Group Replication's round trip of a transaction's message to the group
  (``Gr_data_messages_sent_roundtrip_time_sum`` over its count), Galera's replication latency
  (``wsrep_evs_repl_latency``, where the provider reports it);
- ``paused``: the share of the window Galera's flow control paused the write node; ``cert_failures``: certification
  failures a commit;
- ``cpu_ms``: CPU of the cluster's servers a transaction (``writer_cpu_ms``: the write node's; ``host_cpu_ms``: the
  whole host's, sysbench and benchlib included: what a CPU-bound host divides its CPUs by);
- ``busy``, ``iowait``, ``disk_busy``: the host's CPUs busy, waiting for I/O, and its busiest disk's utilisation;
  ``flush_ms``: the mean time that disk took over a flush request (what an fsync sends a disk with a write cache;
  where the kernel counts them);
- ``pages_read``: pages the write node read from disk a transaction (``Innodb_buffer_pool_reads``), and ``bp_miss``:
  the share of its buffer-pool page requests that missed (the data does not fit in memory);
- ``lock_wait_ms``: the time a transaction waited for row locks on the write node (``Innodb_row_lock_time``), and
  ``lock_waits``: the row lock waits a transaction (contention on hot rows);
- ``lat_ms``: sysbench's mean latency (a closed loop: throughput = threads / latency, so a ratio of throughput is
  the inverse ratio of mean latencies, and a time a commit waits adds to the latency one for one);
- ``limit``: what bound the host at that load (``LIMITS``).

Per configuration (``by_config``): the median over its runs. ``explain`` puts a configuration beside its baseline
in numbers; ``benchlib.analysis.why`` says it in words.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchlib import catalogue
from benchlib.analysis.resources import cost_per_trx, cpu_bound
from benchlib.analysis.runs import config_columns, throughput_runs

__all__ = ["LIMITS", "MEASURES", "by_config", "explain", "per_run"]

#: what can bind a host at a load, in the order they are looked for
LIMITS = ("CPU", "flow control", "replication wait", "row locks", "IO", "fsync", "")
BUSY = 0.90  # host CPUs busier than this: CPU-bound
WAITED = 0.40  # a commit wait at least this share of a transaction's mean latency: bound by the replication wait
PAUSED = 0.10  # flow control paused the writer at least this share of the load window
READS = 1.0  # pages read from disk a transaction on the write node: at least this many, with a disk this busy ...
DISK = 0.50  # ... (or the CPUs this long waiting for I/O: IOWAIT), the data did not fit in memory: IO-bound
IOWAIT = 0.10

MEASURES = ["fsyncs", "innodb_fsyncs", "binlog_fsyncs", "redo_kb", "binlog_kb", "commit_wait_ms", "paused",
            "cert_failures", "cpu_ms", "writer_cpu_ms", "host_cpu_ms", "busy", "iowait", "disk_busy", "flush_ms",
            "pages_read", "bp_miss", "lock_wait_ms", "lock_waits", "lat_ms", "tps"]

_SEMI = {"mariadb": ("Rpl_semi_sync_master_tx_wait_time", "Rpl_semi_sync_master_tx_waits"),
         "mysql": ("Rpl_semi_sync_source_tx_wait_time", "Rpl_semi_sync_source_tx_waits")}
_SEMI_AVG = ("rpl_semi_sync_master_tx_avg_wait_time", "semisync_tx_avg_wait_time", "Rpl_semi_sync_master_tx_avg_wait_time")
_GR = ("Gr_data_messages_sent_roundtrip_time_sum", "Gr_data_messages_sent_count")
_EVS = "wsrep_evs_repl_latency_avg_ms"


def _share(part: float, whole: float) -> float:
    return part / whole if np.isfinite(whole) and whole > 0 else np.nan


def _rate(rates: pd.DataFrame, run: str, node: str, metric: str) -> float:
    v = rates.get((run, node, metric))
    return float(v) if v is not None else np.nan


def _gauge_mean(cluster: pd.DataFrame, run: str, node: str, metrics: tuple[str, ...], start: float,
                end: float) -> float:
    if cluster.empty:
        return np.nan
    g = cluster[(cluster.run_id == run) & (cluster.node == node) & cluster.metric.isin(metrics)]
    g = g[(g.t_s >= start) & (g.t_s <= end)]
    return float(g.value.mean()) if len(g) else np.nan


def _sync_every(value) -> float:
    """Binary log fsyncs per group commit: 1 with sync_binlog = 1, 1/N with N, 0 with 0 (left to the OS)."""
    try:
        n = int(float(value))
    except (TypeError, ValueError):
        return np.nan
    return 0.0 if n == 0 else 1.0 / n


def per_run(a) -> pd.DataFrame:
    """One row per ok measured run: the measures of the module, with its run id and configuration."""
    runs = throughput_runs(a.runs)
    cols = ["run_id", "config", "cluster", *MEASURES, "wait_kind", "limit"]
    rates_frame = a.rates if a.rates is not None else pd.DataFrame()
    if runs.empty or "summary_tps" not in runs or rates_frame.empty:
        return pd.DataFrame(columns=cols)
    rates = rates_frame.set_index(["run_id", "node", "metric"]).rate.to_dict()
    disks = rates_frame[rates_frame.metric.str.fullmatch(r"disk\.[^.]+\.busy_ms")]
    disk_busy = (disks.groupby("run_id").rate.max() / 1000.0).to_dict()
    flush_ms = _per_flush(rates_frame)
    bound = cpu_bound(a)
    bound = bound.sort_values("busy").drop_duplicates("run_id", keep="last").set_index("run_id") if len(bound) else bound
    costs = cost_per_trx(a)
    cpu = costs[costs.cost == "cpu_ms"] if len(costs) else costs
    cluster = a.frames.get("cluster", pd.DataFrame())
    rows = []
    for r in runs.itertuples(index=False):
        run = str(r.run_id)
        tps = float(r.summary_tps) if pd.notna(r.summary_tps) else np.nan
        nodes = str(r.nodes).split(",") if isinstance(r.nodes, str) else []
        if not nodes or not tps or not np.isfinite(tps):
            continue
        w = nodes[0]
        system = getattr(r, "system", None)
        innodb = _rate(rates, run, w, "Innodb_data_fsyncs") / tps
        groups = _rate(rates, run, w, "Binlog_group_commits") / tps
        binlog_on = getattr(r, "cluster_binlog", None)
        if binlog_on is False or binlog_on == "False":
            binlog = 0.0
        else:
            binlog = groups * _sync_every(getattr(r, "cluster_sync_binlog", None))
        wait, kind = _commit_wait(rates, cluster, run, w, system, r)
        mine = cpu[cpu.run_id == run] if len(cpu) else cpu
        row = {"run_id": run, "config": r.config, "cluster": r.cluster,
               "innodb_fsyncs": innodb, "binlog_fsyncs": binlog, "fsyncs": innodb + binlog if np.isfinite(binlog)
               else np.nan,
               "redo_kb": _rate(rates, run, w, "Innodb_os_log_written") / tps / 1024,
               "binlog_kb": (_rate(rates, run, w, "Binlog_bytes_written") / tps / 1024) if binlog_on not in
               (False, "False") else 0.0,
               "commit_wait_ms": wait, "wait_kind": kind,
               "paused": _rate(rates, run, w, "wsrep_flow_control_paused_ns") / 1e9,
               "cert_failures": _rate(rates, run, w, "wsrep_local_cert_failures") / tps,
               "cpu_ms": float(mine[mine.role != "host"].per_trx.sum()) if len(mine) else np.nan,
               "host_cpu_ms": float(mine[mine.role == "host"].per_trx.max()) if len(mine) and
               (mine.role == "host").any() else np.nan,
               "writer_cpu_ms": float(mine[mine.role == "writer"].per_trx.sum()) if len(mine) else np.nan,
               "busy": float(bound.at[run, "busy"]) if run in getattr(bound, "index", []) else np.nan,
               "iowait": float(bound.at[run, "iowait"]) if run in getattr(bound, "index", []) else np.nan,
               "disk_busy": disk_busy.get(run, np.nan), "flush_ms": flush_ms.get(run, np.nan),
               "pages_read": _rate(rates, run, w, "Innodb_buffer_pool_reads") / tps,
               "bp_miss": _share(_rate(rates, run, w, "Innodb_buffer_pool_reads"),
                                 _rate(rates, run, w, "Innodb_buffer_pool_read_requests")),
               "lock_wait_ms": _rate(rates, run, w, "Innodb_row_lock_time") / tps,
               "lock_waits": _rate(rates, run, w, "Innodb_row_lock_waits") / tps,
               "lat_ms": float(r.summary_lat_avg_ms) if pd.notna(getattr(r, "summary_lat_avg_ms", np.nan))
               else np.nan, "tps": tps}
        row["limit"] = limit_of({**row, "threads": getattr(r, "threads", None)})
        rows.append(row)
    return pd.DataFrame(rows, columns=cols)


def _per_flush(rates: pd.DataFrame) -> dict[str, float]:
    """Per run: the mean time the busiest disk took over a flush request (what an fsync sends it), in ms."""
    d = rates[rates.metric.str.fullmatch(r"disk\.[^.]+\.(flushes|flush_ms)")]
    if d.empty:
        return {}
    d = d.assign(dev=d.metric.str.split(".").str[1], what=d.metric.str.split(".").str[2])
    wide = d.pivot_table(index=["run_id", "dev"], columns="what", values="rate", aggfunc="first")
    if "flushes" not in wide or "flush_ms" not in wide:
        return {}
    wide = wide[wide.flushes > 0]
    per = (wide.flush_ms / wide.flushes).rename("ms").reset_index()
    busiest = wide.flushes.reset_index().sort_values("flushes").drop_duplicates("run_id", keep="last")
    return per.merge(busiest[["run_id", "dev"]]).set_index("run_id").ms.to_dict()


def _commit_wait(rates, cluster, run: str, writer: str, system, r) -> tuple[float, str]:
    """The mean time a commit waited for replication in the run (ms) and what it waited for ("" when none)."""
    family = "mysql" if catalogue.family(system) == "MySQL" else "mariadb"
    total, count = _SEMI[family]
    n = _rate(rates, run, writer, count)
    if np.isfinite(n) and n > 0:
        return _rate(rates, run, writer, total) / n / 1000.0, "a replica's semi-sync acknowledgement"
    topology = catalogue.TOPOLOGIES.get(str(getattr(r, "topology", "")))
    if topology is not None and topology.semisync_acks:
        avg = _gauge_mean(cluster, run, writer, _SEMI_AVG, float(r.load_start_s), float(r.load_end_s))
        if np.isfinite(avg):
            return avg / 1000.0, "a replica's semi-sync acknowledgement (the server's running average)"
    n = _rate(rates, run, writer, _GR[1])
    if np.isfinite(n) and n > 0:
        return _rate(rates, run, writer, _GR[0]) / n / 1000.0, "the group to deliver its transaction (consensus)"
    if pd.notna(getattr(r, "load_start_s", np.nan)):
        evs = _gauge_mean(cluster, run, writer, (_EVS,), float(r.load_start_s), float(r.load_end_s))
        if np.isfinite(evs):
            return evs, "the cluster to order its write set (Galera's replication latency)"
    return np.nan, ""


def limit_of(m: dict) -> str:
    """What bound the host at a run's load (one of ``LIMITS``): its CPUs saturated; Galera's flow control pausing the
    writer; commits waiting for replication for much of a transaction's time; transactions waiting for row locks
    for much of their time (contention on hot rows); pages read from disk while the disk is busy (the data does not
    fit in memory: IO-bound); fsyncs (CPUs with room to spare
    while every commit waits for an fsync or more: in a closed loop each client waits on its own commit); "" when
    none of these."""
    def value(key: str) -> float:
        v = m.get(key)
        return float(v) if v is not None else np.nan

    def big(x: float, at: float) -> bool:
        return bool(np.isfinite(x) and x >= at)

    if big(value("busy"), BUSY):
        return "CPU"
    if big(value("paused"), PAUSED):
        return "flow control"
    lat, wait = value("lat_ms"), value("commit_wait_ms")
    if big(wait, 0) and big(lat, 0) and lat > 0 and wait / lat >= WAITED:
        return "replication wait"
    locked = value("lock_wait_ms")  # (every session's waits: the load's own only where it has threads to contend)
    if big(locked, 0) and big(lat, 0) and lat > 0 and locked / lat >= WAITED and big(value("threads"), 2):
        return "row locks"
    if big(value("pages_read"), READS) and (big(value("disk_busy"), DISK) or big(value("iowait"), IOWAIT)):
        return "IO"
    if big(value("fsyncs"), 0.9):
        return "fsync"
    return ""


def by_config(a, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per configuration: the median of each measure over its runs, the commonest limit, the runs counted."""
    runs = per_run(a) if runs is None else runs
    cols = ["config", "cluster", "runs", *MEASURES, "wait_kind", "limit"]
    if runs.empty:
        return pd.DataFrame(columns=cols)
    rows = [{"config": config, "cluster": cluster, **_medians(g)}
            for (config, cluster), g in runs.groupby(["config", "cluster"], sort=False, observed=True)]
    return pd.DataFrame(rows, columns=cols)


def fsync_ms(a) -> float:
    """The median time of an fsync on the lab's disk when the campaign started (a 4 KiB write and fdatasync on an idle
    disk: ``benchlib.sampling.noise``, the campaign's ``host_noise`` event): a lower bound of what an fsync costs a
    commit under load. nan when the campaign did not measure it."""
    import json

    path = getattr(a, "path", None)
    events = path / "events.jsonl" if path is not None else None
    if events is None or not events.exists():
        return np.nan
    found = [e for e in map(json.loads, events.read_text().splitlines()) if e.get("event") == "host_noise"
             and e.get("fsync_p50_ms") is not None]
    return float(found[-1]["fsync_p50_ms"]) if found else np.nan


def explain(a, comparisons: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per comparison (a row of ``a.comparisons`` for throughput, by its index): each measure of the configuration
    and of its baseline (``<measure>`` and ``base_<measure>``: medians over their runs), the commonest ``limit`` of
    each, ``lat_diff_ms``, the configuration's mean latency minus the baseline's, and ``fsync_probe_ms``
    (``fsync_ms``)."""
    c = a.comparisons if comparisons is None else comparisons
    runs = per_run(a)
    probe = fsync_ms(a)
    if c.empty or runs.empty:
        return pd.DataFrame()
    c = c[c.metric.isin(["tps", "read_tps"])]
    ok = a.runs[a.runs.status == "ok"].assign(run_id=lambda d: d.run_id.astype(str))
    keys = [k for k in config_columns(a.param_columns) if k in c.columns and k in ok.columns
            and k not in ("cluster", "topology", "config", "system")]
    loads = [k for k in ("workload", "threads", "durability", "rate", "read_threads", "distribution", "data_vs_buffer_pool")
             if k in keys]
    rows = []
    for idx, r in c.iterrows():
        mine = ok[ok.cluster.astype(str) == str(r.cluster)]
        for k in keys:
            mine = mine[_same(mine[k], r[k])]
        base = ok[ok.cluster.astype(str).isin(str(r.baseline_clusters).split(","))]
        for k in loads:
            base = base[_same(base[k], r[k])]
        m, b = runs[runs.run_id.isin(mine.run_id)], runs[runs.run_id.isin(base.run_id)]
        if m.empty or b.empty:
            continue
        row = {"index": idx, **_medians(m), **{f"base_{k}": v for k, v in _medians(b).items()}}
        row["lat_diff_ms"] = row["lat_ms"] - row["base_lat_ms"]
        row["fsync_probe_ms"] = probe
        rows.append(row)
    return pd.DataFrame(rows).set_index("index") if rows else pd.DataFrame()


def _same(column: pd.Series, value) -> pd.Series:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return column.isna()
    return column == value


def _medians(g: pd.DataFrame) -> dict:
    out: dict[str, object] = {m: float(g[m].median()) if g[m].notna().any() else np.nan for m in MEASURES}
    kinds = g.wait_kind[g.wait_kind != ""]
    out["wait_kind"] = kinds.mode().iloc[0] if len(kinds) else ""
    out["limit"] = g["limit"].mode().iloc[0] if len(g) else ""
    out["runs"] = len(g)
    return out
