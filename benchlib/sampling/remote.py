"""Sampling a remote lab: heartbeats, each system's status probe, and every server's clock offset.

The heartbeat is the same as on a local lab (the sampler's own clock, no skew), without the
apply triggers (they need privileges a benchmark account should not have). The status probe
follows the cluster's system (``benchlib.remote.probes`` holds the queries and parsers):

- ``mariadb``: the local lab's MariaDB replication probe (GTID positions, SHOW SLAVE STATUS);
- ``galera``: the local lab's Galera probe; ``pxc``: the same numbers from SHOW GLOBAL STATUS;
- ``mysql``: performance_schema apply lag (µs, corrected with both servers' clock offsets),
  GTID_SUBTRACT backlog and SHOW REPLICA/SLAVE STATUS on a 1 s tier;
- ``group_replication``: every member's own member-stats row, apply lag of its applier channel;
- ``aurora``: ``replica_host_status`` on the writer.

``ClockProbe`` reads ``UNIX_TIMESTAMP(SYSDATE(6))`` on every node once a second, keeps the
lowest-round-trip estimate of each offset (``benchlib.remote.clock``), and logs it as the
``clock_offset_ms`` metric; the run's manifest records the estimates.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable

from benchlib.remote import probes as rp
from benchlib.remote.clock import Offset, OffsetEstimator, sample_server_clock
from benchlib.sampling.heartbeat import Connect, Heartbeat
from benchlib.sampling.probe import Probe, Sampler
from benchlib.sampling.status import GaleraProbe, MariaDBReplicationProbe, StatusLog, _ClusterProbe, _num

if TYPE_CHECKING:
    from benchlib.remote.lab import RemoteLab
    from benchlib.sampling.lab import LabSampling


class ClockProbe(Probe):
    """Every node's clock offset from the sampler's wall clock, lowest round trip in a 60-sample window."""

    def __init__(self, connect: Connect, nodes: list[str], log: StatusLog, clock: Callable[[], float],
                 interval_s: float = 1.0, wall: Callable[[], float] = time.time):
        self.name, self.connect, self.nodes, self.log, self.clock = "clocks", connect, nodes, log, clock
        self.interval_s, self.wall, self.lane = interval_s, wall, "clocks"
        self.estimators = {n: OffsetEstimator(window=60) for n in nodes}
        self.conns = {}

    def setup(self) -> None:
        self.conns = {n: self.connect(n) for n in self.nodes}
        for _ in range(3):  # a first estimate before the load starts
            self.sample(0.0)

    def sample(self, t: float) -> None:
        for n, conn in self.conns.items():
            with conn.cursor() as cur:
                self.estimators[n].add(*sample_server_clock(cur, self.wall))
            best = self.estimators[n].estimate()
            self.log.add(self.clock(), n, "clock_offset_ms", best.offset_s * 1000)

    def offsets(self) -> dict[str, Offset]:
        return {n: e.estimate() for n, e in self.estimators.items() if e.estimate() is not None}

    def close(self) -> None:
        for c in self.conns.values():
            c.close()


class MySQLReplicationProbe(_ClusterProbe):
    """A MySQL 8 (or 5.7) source and its replicas: performance_schema apply lag every tick (8.0+),
    backlog (GTID_SUBTRACT) and replica threads on the 1 s tier."""

    def __init__(self, connect: Connect, source: str, replicas: list[str], log: StatusLog, clock, clocks: ClockProbe,
                 channel: str = "", interval_s: float = 0.25):
        super().__init__(connect, [source, *replicas], log, clock, interval_s)
        self.name = f"mysql:{source}"
        self.source, self.replicas, self.clocks, self.channel = source, replicas, clocks, channel
        self.kinds: dict[str, rp.ServerKind] = {}
        self.state = {r: rp.ApplierState() for r in replicas}
        self.tick = 0

    def setup(self) -> None:
        super().setup()
        for n, conn in self.conns.items():
            with conn.cursor() as cur:
                cur.execute("SELECT @@version AS version, @@version_comment AS version_comment")
                self.kinds[n] = rp.detect(cur.fetchone())

    def sample(self, t: float) -> None:
        slow = self.tick % 4 == 0
        self.tick += 1
        offsets = self.clocks.offsets()
        for r in self.replicas:
            kind = self.kinds[r]
            with self.conns[r].cursor() as cur:
                if kind.version >= (8, 0, 0):
                    cur.execute(rp.MYSQL8_APPLIER_SQL, (self.channel,))
                    lag_us = rp.mysql8_lag_us(cur.fetchall(), self.state[r])
                    now = self.clock()
                    if lag_us is not None:
                        skew = 0.0
                        if r in offsets and self.source in offsets:  # replica clock minus the source's
                            skew = offsets[r].offset_s - offsets[self.source].offset_s
                        self.log.add(now, r, "apply_lag_ms", lag_us / 1000 - skew * 1000)  # never clamped
                if not slow:
                    continue
                cur.execute(rp.MYSQL_BACKLOG_SQL, (self.channel,))
                row = cur.fetchone()
                if row is not None:
                    self.log.add(self.clock(), r, "trx_behind", rp.gtid_count(row["BACKLOG"]))
                cur.execute(rp.replica_status_sql(kind))
                st = cur.fetchone() or {}
                io = st.get("Replica_IO_Running", st.get("Slave_IO_Running"))
                sq = st.get("Replica_SQL_Running", st.get("Slave_SQL_Running"))
                now = self.clock()
                self.log.add(now, r, "io_running", _num(io))
                self.log.add(now, r, "sql_running", _num(sq))
                sbm = st.get(rp.seconds_behind_column(kind))
                if sbm is not None:
                    self.log.add(now, r, "seconds_behind_master", sbm)
        if slow:
            with self.conns[self.source].cursor() as cur:
                cur.execute("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_%'")
                semi = rp.semisync({x["Variable_name"]: x["Value"] for x in cur.fetchall()})
            now = self.clock()
            for k, v in semi.items():
                self.log.add(now, self.source, f"semisync_{k}", v, counter=k in ("yes_tx", "no_tx"))


class GroupReplicationProbe(_ClusterProbe):
    """Every member's own member-stats row (queues, conflicts) and its applier channel's lag."""

    def __init__(self, connect: Connect, members: list[str], log: StatusLog, clock, clocks: ClockProbe,
                 interval_s: float = 0.25):
        super().__init__(connect, members, log, clock, interval_s)
        self.name, self.clocks = f"group:{members[0]}", clocks
        self.state = {m: rp.ApplierState() for m in members}

    def sample(self, t: float) -> None:
        for m in self.nodes:
            with self.conns[m].cursor() as cur:
                cur.execute(rp.GROUP_MEMBER_STATS_SQL)
                row = cur.fetchone()
                now = self.clock()
                if row is not None:
                    for k, v in rp.group_member_stats(row).items():
                        self.log.add(now, m, f"gr_{k}", v, counter=k in ("checked", "remote_applied",
                                                                         "local_proposed", "conflicts"))
                cur.execute(rp.MYSQL8_APPLIER_SQL, (rp.GROUP_REPLICATION_CHANNEL,))
                lag_us = rp.mysql8_lag_us(cur.fetchall(), self.state[m])
                if lag_us is not None:  # the origin is whichever member committed: offsets differ by member
                    self.log.add(self.clock(), m, "apply_lag_ms", lag_us / 1000)


class PXCProbe(_ClusterProbe):
    """Percona XtraDB Cluster nodes: the Galera numbers from SHOW GLOBAL STATUS (no information_schema)."""

    def __init__(self, connect: Connect, nodes: list[str], log: StatusLog, clock, interval_s: float = 0.25):
        super().__init__(connect, nodes, log, clock, interval_s)
        self.name = f"pxc:{nodes[0]}"

    def sample(self, t: float) -> None:
        committed = {}
        for n in self.nodes:
            with self.conns[n].cursor() as cur:
                cur.execute("SHOW GLOBAL STATUS LIKE 'wsrep%'")
                st = rp.galera_status({x["Variable_name"].lower(): x["Value"] for x in cur.fetchall()})
            now = self.clock()
            for k, v in st.items():
                if isinstance(v, float):
                    counter = k.endswith(("_ns", "_sent", "_recv", "_failures", "_aborts", "_committed", "_applied"))
                    self.log.add(now, n, k, v, counter=counter)
            committed[n] = (now, st.get("wsrep_last_committed"))
        top = max((v for _, v in committed.values() if v is not None), default=None)
        for n, (now, v) in committed.items():
            if top is not None and v is not None:
                self.log.add(now, n, "seqno_behind", top - v)


class AuroraProbe(_ClusterProbe):
    """Aurora MySQL: every reader's lag and CPU from ``replica_host_status`` on the writer."""

    def __init__(self, connect: Connect, writer: str, log: StatusLog, clock, interval_s: float = 1.0):
        super().__init__(connect, [writer], log, clock, interval_s)
        self.name, self.writer = f"aurora:{writer}", writer

    def sample(self, t: float) -> None:
        with self.conns[self.writer].cursor() as cur:
            cur.execute(rp.AURORA_REPLICAS_SQL)
            readers = rp.aurora_replicas(cur.fetchall())
        now = self.clock()
        for server_id, v in readers.items():
            self.log.add(now, server_id, "aurora_lag_ms", v["lag_ms"])
            self.log.add(now, server_id, "aurora_cpu_pct", v["cpu_pct"])


def for_remote_lab(lab: "RemoteLab", clusters: list[str] | None = None, *, write_every: float = 0.1,
                   read_every: float = 0.02) -> "LabSampling":
    from benchlib.sampling.lab import LabSampling

    clock = time.monotonic
    log = StatusLog()
    heartbeats: dict[str, Heartbeat] = {}
    probes: list[Probe] = []
    clusters = clusters or list(lab.spec.clusters)
    all_nodes = [n.name for c in clusters for n in lab.layout.cluster_nodes(c)]
    clocks = ClockProbe(lab.connect, all_nodes, log, clock)
    probes.append(clocks)
    for cluster in clusters:
        system = lab.spec.clusters[cluster].system
        nodes = [n.name for n in lab.layout.cluster_nodes(cluster)]
        if len(nodes) > 1:
            hb = Heartbeat(lab.connect, nodes[0], nodes[1:], trigger_on=set(), write_every=write_every,
                           read_every=read_every, clock=clock)
            heartbeats[cluster] = hb
            probes += hb.probes
        if system == "mariadb" and len(nodes) > 1:
            probes.append(MariaDBReplicationProbe(lab.connect, nodes[0], nodes[1:], log, clock))
        elif system == "galera":
            probes.append(GaleraProbe(lab.connect, nodes, log, clock))
        elif system == "pxc":
            probes.append(PXCProbe(lab.connect, nodes, log, clock))
        elif system == "mysql" and len(nodes) > 1:
            probes.append(MySQLReplicationProbe(lab.connect, nodes[0], nodes[1:], log, clock, clocks))
        elif system == "group_replication":
            probes.append(GroupReplicationProbe(lab.connect, nodes, log, clock, clocks))
        elif system == "aurora":
            probes.append(AuroraProbe(lab.connect, nodes[0], log, clock))
    return LabSampling(heartbeats, log, Sampler(probes), clocks=clocks)

