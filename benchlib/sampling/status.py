"""Cluster-state probes: replication positions, semi-sync, Galera flow control, liveness.

Each probe samples every node of one cluster in one tick (positions read moments
apart are comparable) and appends rows to a shared ``StatusLog``, which becomes the
long CLUSTER frame: one row per (time, node, metric). Counters are stored raw; one
that goes down is flagged ``reset`` and must never be differenced across it.
Each system's queries are its own (``benchlib.systems``); docs/campaigns/spec.md says what is sampled.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable

import pandas as pd
import pymysql

from benchlib.sampling.probe import Connect
from benchlib.sampling.probe import Probe
from benchlib.schema import CLUSTER


GALERA_GAUGES = ("wsrep_local_recv_queue", "wsrep_local_send_queue", "wsrep_cluster_size", "wsrep_local_state",
                 "wsrep_flow_control_active")
GALERA_COUNTERS = ("wsrep_flow_control_paused_ns", "wsrep_flow_control_sent", "wsrep_flow_control_recv",
                   "wsrep_local_cert_failures", "wsrep_local_bf_aborts", "wsrep_last_committed",
                   "wsrep_replicated", "wsrep_received", "wsrep_replicated_bytes")
#: the group communication's replication latency over the provider's last report period (evs.stats_report_period):
#: "min/avg/max/stddev/samples" in seconds; its average is kept, in ms, where there were samples
EVS_LATENCY = "wsrep_evs_repl_latency"
SEMI_GAUGES = ("rpl_semi_sync_master_status", "rpl_semi_sync_master_clients", "rpl_semi_sync_master_tx_avg_wait_time",
               "rpl_semi_sync_master_wait_sessions")
SEMI_COUNTERS = ("rpl_semi_sync_master_yes_tx", "rpl_semi_sync_master_no_tx")


@dataclass
class StatusLog:
    rows: dict[str, list] = field(default_factory=lambda: {c: [] for c in CLUSTER.columns})
    last: dict[tuple[str, str], float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, t: float, node: str, metric: str, value: float | None, counter: bool = False) -> None:
        if value is None:
            return
        value = float(value)
        with self.lock:
            reset = False
            if counter:
                prev = self.last.get((node, metric))
                reset = prev is not None and value < prev
                self.last[(node, metric)] = value
            for c, v in zip(CLUSTER.columns, (t, node, metric, value, counter, reset)):
                self.rows[c].append(v)

    def frame(self, origin: float = 0.0) -> pd.DataFrame:
        with self.lock:
            rows = {c: list(v) for c, v in self.rows.items()}
        rows["t_s"] = [t - origin for t in rows["t_s"]]
        return CLUSTER.frame(rows)


def as_number(text) -> float | None:
    if text is None:
        return None
    text = str(text).strip()
    if text in {"ON", "Yes", "YES"}:
        return 1.0
    if text in {"OFF", "No", "NO", ""}:
        return 0.0
    try:
        return float(text)
    except ValueError:
        return None


def evs_latency_ms(text: str | None) -> float | None:
    """The average of Galera's ``wsrep_evs_repl_latency`` ("min/avg/max/stddev/samples", seconds) in ms; None when
    the provider reports none or had no samples in its period."""
    parts = str(text or "").split("/")
    if len(parts) != 5:
        return None
    try:
        avg, samples = float(parts[1]), float(parts[4])
    except ValueError:
        return None
    return avg * 1000.0 if samples > 0 else None


def gtid_seq(pos: str | None, domain: int = 0) -> int | None:
    """The sequence number of ``domain`` in a MariaDB GTID position like '0-1-42,1-2-7'."""
    for part in (pos or "").split(","):
        bits = part.strip().split("-")
        if len(bits) == 3 and int(bits[0]) == domain:
            return int(bits[2])
    return 0 if not (pos or "").strip() else None


class ClusterProbe(Probe):
    """A probe over every node of one cluster: one connection per node, opened at setup."""

    def __init__(self, connect: Connect, nodes: list[str], log: StatusLog, clock: Callable[[], float],
                 interval_s: float = 0.25):
        self.connect, self.nodes, self.log, self.clock, self.interval_s = connect, nodes, log, clock, interval_s
        self.lane = "status"
        self.conns: dict[str, Any] = {}

    def setup(self) -> None:
        self.conns = {n: self.connect(n) for n in self.nodes}

    def _status(self, node: str, names) -> dict[str, str]:
        marks = ",".join(["%s"] * len(names))
        with self.conns[node].cursor() as cur:
            cur.execute(f"SELECT LOWER(VARIABLE_NAME) AS n, VARIABLE_VALUE AS v FROM information_schema.GLOBAL_STATUS "
                        f"WHERE VARIABLE_NAME IN ({marks})", [n.upper() for n in names])
            return {r["n"]: r["v"] for r in cur.fetchall()}

    def close(self) -> None:
        for c in self.conns.values():
            c.close()


class MariaDBReplicationProbe(ClusterProbe):
    """Primary and replicas of one MariaDB async/semi-sync cluster (GTID domain 0).

    Every tick: the primary's gtid_binlog_pos, each replica's gtid_slave_pos and the
    difference (``trx_behind``): variables, cheap. Every 4th tick: semi-sync status and
    SHOW SLAVE STATUS (threads, Seconds_Behind_Master as a reference column only, retried
    transactions): status reads take a server-wide lock, kept off the fast tier.
    """

    def __init__(self, connect: Connect, primary: str, replicas: list[str], log: StatusLog,
                 clock: Callable[[], float], interval_s: float = 0.25):
        super().__init__(connect, [primary, *replicas], log, clock, interval_s)
        self.name = f"replication:{primary}"
        self.primary, self.replicas = primary, replicas
        self.tick = 0

    def sample(self, t: float) -> None:
        log = self.log
        with self.conns[self.primary].cursor() as cur:
            cur.execute("SELECT @@GLOBAL.gtid_binlog_pos AS p")
            primary_seq = gtid_seq(cur.fetchone()["p"])
        now = self.clock()
        log.add(now, self.primary, "gtid_seq", primary_seq, counter=True)
        slow = self.tick % 4 == 0  # status reads sum every connection's counters under a lock: 1 Hz
        self.tick += 1
        if slow:
            semi = self._status(self.primary, SEMI_GAUGES + SEMI_COUNTERS)
            for m in SEMI_GAUGES:
                log.add(now, self.primary, m, as_number(semi.get(m)))
            for m in SEMI_COUNTERS:
                log.add(now, self.primary, m, as_number(semi.get(m)), counter=True)
        for r in self.replicas:
            with self.conns[r].cursor() as cur:
                cur.execute("SELECT @@GLOBAL.gtid_slave_pos AS p")
                seq = gtid_seq(cur.fetchone()["p"])
                now = self.clock()
                log.add(now, r, "gtid_seq", seq, counter=True)
                if seq is not None and primary_seq is not None:
                    log.add(now, r, "trx_behind", max(0, primary_seq - seq))
                if slow:
                    cur.execute("SHOW SLAVE STATUS")
                    st = cur.fetchone() or {}
                    log.add(now, r, "io_running", as_number(st.get("Slave_IO_Running")))
                    log.add(now, r, "sql_running", as_number(st.get("Slave_SQL_Running")))
                    sbm = st.get("Seconds_Behind_Master")
                    if sbm is not None:
                        log.add(now, r, "seconds_behind_master", sbm)
                    log.add(now, r, "slave_retried_transactions",
                            as_number(self._status(r, ("slave_retried_transactions",)).get("slave_retried_transactions")),
                            counter=True)


class GaleraProbe(ClusterProbe):
    """Every node of a Galera cluster: queues, flow control, conflicts, its state and component (``wsrep_primary``:
    1 in the Primary component), and ``seqno_behind``
    (the most advanced node's wsrep_last_committed minus this node's). MariaDB's status is read
    from information_schema; Percona XtraDB Cluster's (``show_status``) with SHOW GLOBAL STATUS."""

    def __init__(self, connect: Connect, nodes: list[str], log: StatusLog, clock: Callable[[], float],
                 interval_s: float = 0.5, show_status: bool = False):
        # 2 Hz: each read is a whole status read on the server (its cost grows with the rate; see probe_breakdown)
        super().__init__(connect, nodes, log, clock, interval_s)
        self.name = f"{'pxc' if show_status else 'galera'}:{nodes[0]}"
        self.show_status = show_status

    def _wsrep(self, node: str) -> dict[str, str]:
        if not self.show_status:
            return self._status(node, GALERA_GAUGES + GALERA_COUNTERS + ("wsrep_cluster_status", EVS_LATENCY))
        with self.conns[node].cursor() as cur:
            cur.execute("SHOW GLOBAL STATUS LIKE 'wsrep%'")
            return {r["Variable_name"].lower(): r["Value"] for r in cur.fetchall()}

    def sample(self, t: float) -> None:
        committed = {}
        for node in self.nodes:
            st = self._wsrep(node)
            now = self.clock()
            for m in GALERA_GAUGES:
                self.log.add(now, node, m, as_number(st.get(m)))
            for m in GALERA_COUNTERS:
                self.log.add(now, node, m, as_number(st.get(m)), counter=True)
            evs = evs_latency_ms(st.get(EVS_LATENCY))
            if evs is not None:
                self.log.add(now, node, "wsrep_evs_repl_latency_avg_ms", evs)
            if st.get("wsrep_cluster_status"):  # Primary, non-Primary, Disconnected
                self.log.add(now, node, "wsrep_primary", float(st["wsrep_cluster_status"] == "Primary"))
            committed[node] = (now, as_number(st.get("wsrep_last_committed")))
        top = max((v for _, v in committed.values() if v is not None), default=None)
        for node, (now, v) in committed.items():
            if top is not None and v is not None:
                self.log.add(now, node, "seqno_behind", top - v)


class LivenessProbe(Probe):
    """Whether one node still answers: ``SELECT 1`` once a second on a lane of its own, so a node that
    stops answering (a frozen process, a lost host) blocks only this probe. ``silent_s()`` is how long
    the node has not answered; the run names a node silent for the watchdog's ``stall_s``. Each answer is a row
    (metric ``alive``, 1) when given a log: the other probes share lanes, so a gap in their rows may be another
    node's silence, a gap in these is this node's own (``benchlib.systems.invariants.nodes_answer``)."""

    def __init__(self, connect: Connect, node: str, clock: Callable[[], float], interval_s: float = 1.0,
                 log: StatusLog | None = None):
        self.name, self.connect, self.node, self.clock, self.interval_s = f"alive:{node}", connect, node, clock, interval_s
        self.log = log
        self.lane = None  # its own thread: never waits behind another node
        self.conn: Any = None
        self.answered = clock()

    def setup(self) -> None:
        self.conn = self.connect(self.node)
        self.answered = self.clock()

    def sample(self, t: float) -> None:
        with self.conn.cursor() as cur:
            cur.execute("SELECT 1")
            cur.fetchall()
        self.answered = self.clock()
        if self.log is not None:
            self.log.add(self.answered, self.node, "alive", 1.0)

    def silent_s(self) -> float:
        return self.clock() - self.answered

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:  # noqa: BLE001 - a node that stopped answering
                pass


class SemisyncWatch(Probe):
    """A semi-sync primary through a fault: whether semi-sync is on (``semisync_status``, 1 or 0) and the commits it
    made without a replica's ack (``semisync_no_tx``, a counter), every ``interval_s`` on a lane of its own. It turns
    itself off on a server without semi-sync, and logs nothing while the node does not answer (killed, frozen)."""

    def __init__(self, connect: Connect, node: str, log: StatusLog, clock: Callable[[], float],
                 interval_s: float = 0.2):
        self.name, self.connect, self.node, self.log, self.clock = f"semisync:{node}", connect, node, log, clock
        self.interval_s, self.lane = interval_s, None
        self.conn: Any = None
        self.off = False

    def sample(self, t: float) -> None:
        from benchlib.systems import semisync

        if self.off:
            return
        try:
            if self.conn is None:
                self.conn = self.connect(self.node, timeout=0.5)
                self.conn._read_timeout = 2.0  # pymysql applies it on every read: a hung node holds this lane 2 s
            with self.conn.cursor() as cur:
                cur.execute("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_%'")
                status = semisync.status_of({r["Variable_name"]: r["Value"] for r in cur.fetchall()})
        except Exception:  # noqa: BLE001 - a node under its fault: nothing to log now
            self.close()
            return
        if not status:
            self.off = True  # no semi-sync on this server
            return
        now = self.clock()
        self.log.add(now, self.node, "semisync_status", status.get("status", float("nan")))
        self.log.add(now, self.node, "semisync_no_tx", status.get("no_tx", float("nan")), counter=True)

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:  # noqa: BLE001
                pass
        self.conn = None


class ServerCountersProbe(ClusterProbe):
    """The system's chosen ``SHOW GLOBAL STATUS`` counters (``System.status_counters``) on every node of one cluster,
    once a second, raw (analysis differences them; a counter that went down is flagged ``reset``)."""

    def __init__(self, connect: Connect, nodes: list[str], counters: list[str], gauges: frozenset[str],
                 log: StatusLog, clock: Callable[[], float], interval_s: float = 1.0):
        super().__init__(connect, nodes, log, clock, interval_s)
        self.name = f"counters:{nodes[0]}"
        self.counters, self.gauges = list(counters), gauges
        marks = ",".join(["%s"] * len(self.counters))
        self.query = f"SHOW GLOBAL STATUS WHERE Variable_name IN ({marks})"  # MariaDB and MySQL alike

    def sample(self, t: float) -> None:
        for node in self.nodes:
            with self.conns[node].cursor(pymysql.cursors.Cursor) as cur:  # tuples: no dict per row
                cur.execute(self.query, self.counters)
                rows = cur.fetchall()
            now = self.clock()
            for name, value in rows:
                self.log.add(now, node, name, as_number(value), counter=name not in self.gauges)
