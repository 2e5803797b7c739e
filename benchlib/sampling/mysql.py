"""Status probes of the MySQL family: MySQL replication, Group Replication, Aurora.

The queries and parsers are each system's (``benchlib.systems.mysql``, ``group_replication``, ``aurora``,
``semisync``; the server's version from ``dialect``):

- ``mysql``: performance_schema apply lag (µs, corrected with both servers' clock offsets when
  the lab has a ``ClockProbe``; one clock locally), GTID_SUBTRACT backlog and SHOW REPLICA/SLAVE
  STATUS on a 1 s tier;
- ``group_replication``: every member's own member-stats row, apply lag of its applier channel;
- ``aurora``: ``replica_host_status`` on the writer.
"""

from __future__ import annotations


from benchlib.sampling.clock import ClockProbe
from benchlib.sampling.probe import Connect
from benchlib.sampling.status import ClusterProbe, StatusLog, as_number
from benchlib.systems import dialect, semisync
from benchlib.systems.aurora import system as aurora
from benchlib.systems.group_replication import system as gr
from benchlib.systems.mysql import system as mysql

__all__ = ["AuroraProbe", "GroupReplicationProbe", "MySQLReplicationProbe"]


class MySQLReplicationProbe(ClusterProbe):
    """A MySQL 8 (or 5.7) source and its replicas: performance_schema apply lag every tick (8.0+),
    backlog (GTID_SUBTRACT) and replica threads on the 1 s tier."""

    def __init__(self, connect: Connect, source: str, replicas: list[str], log: StatusLog, clock, clocks: ClockProbe | None,
                 channel: str = "", interval_s: float = 0.25):
        super().__init__(connect, [source, *replicas], log, clock, interval_s)
        self.name = f"mysql:{source}"
        self.source, self.replicas, self.clocks, self.channel = source, replicas, clocks, channel
        self.kinds: dict[str, dialect.ServerKind] = {}
        self.state = {r: mysql.ApplierState() for r in replicas}
        self.tick = 0

    def setup(self) -> None:
        super().setup()
        for n, conn in self.conns.items():
            with conn.cursor() as cur:
                cur.execute("SELECT @@version AS version, @@version_comment AS version_comment")
                self.kinds[n] = dialect.detect(cur.fetchone())

    def sample(self, t: float) -> None:
        slow = self.tick % 4 == 0
        self.tick += 1
        offsets = self.clocks.offsets() if self.clocks is not None else {}
        for r in self.replicas:
            kind = self.kinds[r]
            with self.conns[r].cursor() as cur:
                if kind.version >= (8, 0, 0):
                    cur.execute(mysql.MYSQL8_APPLIER_SQL, (self.channel,))
                    lag_us = mysql.mysql8_lag_us(cur.fetchall(), self.state[r])
                    now = self.clock()
                    if lag_us is not None:
                        skew = 0.0
                        if r in offsets and self.source in offsets:  # replica clock minus the source's
                            skew = offsets[r].offset_s - offsets[self.source].offset_s
                        self.log.add(now, r, "apply_lag_ms", lag_us / 1000 - skew * 1000)  # never clamped
                if not slow:
                    continue
                cur.execute(mysql.MYSQL_BACKLOG_SQL, (self.channel,))
                row = cur.fetchone()
                if row is not None:
                    self.log.add(self.clock(), r, "trx_behind", mysql.gtid_count(row["BACKLOG"]))
                cur.execute(dialect.replica_status_sql(kind))
                st = cur.fetchone() or {}
                io = st.get("Replica_IO_Running", st.get("Slave_IO_Running"))
                sq = st.get("Replica_SQL_Running", st.get("Slave_SQL_Running"))
                now = self.clock()
                self.log.add(now, r, "io_running", as_number(io))
                self.log.add(now, r, "sql_running", as_number(sq))
                sbm = st.get(dialect.seconds_behind_column(kind))
                if sbm is not None:
                    self.log.add(now, r, "seconds_behind_master", sbm)
        if slow:
            with self.conns[self.source].cursor() as cur:
                cur.execute("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_%'")
                semi = semisync.status_of({x["Variable_name"]: x["Value"] for x in cur.fetchall()})
            now = self.clock()
            for k, v in semi.items():
                self.log.add(now, self.source, f"semisync_{k}", v, counter=k in ("yes_tx", "no_tx"))


class GroupReplicationProbe(ClusterProbe):
    """Every member's own state (``gr_online``, ``gr_primary``: 1 or 0) and member-stats row (queues, conflicts), its
    flow-control throttling (counters of the ``group_replication_flow_control_stats`` component, where installed)
    and its applier channel's lag."""

    def __init__(self, connect: Connect, members: list[str], log: StatusLog, clock, clocks: ClockProbe | None,
                 interval_s: float = 0.25):
        super().__init__(connect, members, log, clock, interval_s)
        self.name, self.clocks = f"group:{members[0]}", clocks
        self.state = {m: mysql.ApplierState() for m in members}

    def sample(self, t: float) -> None:
        for m in self.nodes:
            with self.conns[m].cursor() as cur:
                cur.execute(gr.GROUP_MEMBER_STATS_SQL)
                row = cur.fetchone()
                now = self.clock()
                if row is not None:
                    self.log.add(now, m, "gr_online", float(row["MEMBER_STATE"] == "ONLINE"))
                    self.log.add(now, m, "gr_primary", float(row.get("MEMBER_ROLE") == "PRIMARY"))
                    for k, v in gr.group_member_stats(row).items():
                        self.log.add(now, m, f"gr_{k}", v, counter=k in ("checked", "remote_applied",
                                                                         "local_proposed", "conflicts"))
                cur.execute(gr.GROUP_THROTTLE_SQL)
                for k, v in gr.group_throttle(cur.fetchall()).items():
                    self.log.add(now, m, f"gr_{k}", v, counter=k != "throttle_active")
                cur.execute(mysql.MYSQL8_APPLIER_SQL, (gr.GROUP_REPLICATION_CHANNEL,))
                lag_us = mysql.mysql8_lag_us(cur.fetchall(), self.state[m])
                if lag_us is not None:  # the origin is whichever member committed: offsets differ by member
                    self.log.add(self.clock(), m, "apply_lag_ms", lag_us / 1000)


class AuroraProbe(ClusterProbe):
    """Aurora MySQL: every reader's lag and CPU from ``replica_host_status`` on the writer."""

    def __init__(self, connect: Connect, writer: str, log: StatusLog, clock, interval_s: float = 1.0):
        super().__init__(connect, [writer], log, clock, interval_s)
        self.name, self.writer = f"aurora:{writer}", writer

    def sample(self, t: float) -> None:
        with self.conns[self.writer].cursor() as cur:
            cur.execute(aurora.AURORA_REPLICAS_SQL)
            readers = aurora.aurora_replicas(cur.fetchall())
        now = self.clock()
        for server_id, v in readers.items():
            self.log.add(now, server_id, "aurora_lag_ms", v["lag_ms"])
            self.log.add(now, server_id, "aurora_cpu_pct", v["cpu_pct"])
