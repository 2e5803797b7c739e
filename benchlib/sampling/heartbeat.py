"""Replica lag to the millisecond from heartbeats, on one clock.

A writer inserts one row every ``write_every`` seconds on the write node (sequence
number and the sampler's wall clock) and notes, on the sampler's clock, when each
commit returned. A reader per other node polls ``MAX(seq)`` every ``read_every``
seconds. The lag of heartbeat n on a node is the sampler time of the first poll
that sees n minus the sampler time when n's commit returned: one clock, no skew.
The poll before (when n was not there yet) bounds it from below; both are stored.
This is never the "now minus last visible timestamp" sawtooth.

On MariaDB replicas a trigger (created with the binary log off, on replicas only,
fired for row events by ``slave_run_triggers_for_rbr``) also records the node's
own time of applying each heartbeat: ``apply_lag_ms``. Call ``Heartbeat.prepare()``
before starting the sampler: it creates the table and the triggers.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd
import pymysql

from benchlib.errors import BenchlibError
from benchlib.sampling.probe import Connect, Probe
from benchlib.schema import LAG

TABLE = "benchlib.heartbeat"
APPLY_TABLE = "benchlib.heartbeat_apply"
POLL = f"SELECT MAX(seq) FROM {TABLE}"
WRITE = f"INSERT INTO {TABLE} (seq, sent_at) VALUES (%s, %s)"
NO_TABLE = 1146


@dataclass
class HeartbeatLog:
    """What the writer and readers recorded; turned into the LAG frame by ``frame()``."""

    committed: dict[int, float] = field(default_factory=dict)  # seq -> sampler time the commit returned
    committed_wall: dict[int, float] = field(default_factory=dict)  # seq -> wall clock at that moment
    seen: dict[str, dict[int, tuple[float, float]]] = field(default_factory=dict)  # node -> seq -> (prev, seen)
    applied_wall: dict[str, dict[int, float]] = field(default_factory=dict)  # node -> seq -> node's apply time
    last_poll: dict[str, float] = field(default_factory=dict)  # node -> sampler time of its last poll
    lock: threading.Lock = field(default_factory=threading.Lock)
    wakers: list = field(default_factory=list)  # called after each commit: wakes the readers' lane
    last_seq: int = 0
    #: the writer's greatest seq before this heartbeat's first commit (``Heartbeat.prepare`` reads it): a reader's
    #: first answer counts what is above it as seen, even a heartbeat whose commit the writer has not logged yet
    base_seq: int | None = None

    def commit(self, seq: int, t: float, wall: float) -> None:
        with self.lock:
            self.committed[seq] = t
            self.committed_wall[seq] = wall
            self.last_seq = seq
        for wake in self.wakers:
            wake()

    def frame(self, origin: float = 0.0) -> pd.DataFrame:
        """One row per (node, heartbeat); times relative to ``origin`` on the sampler's clock. A heartbeat
        committed after a node's last poll (sampling ended first) was never observable there: no row. One
        committed before it but never seen has no ``lag_ms``; its ``lag_low_ms`` is from that last poll."""
        rows: dict[str, list] = {c: [] for c in LAG.columns}
        for node, seen in self.seen.items():
            applied = self.applied_wall.get(node, {})
            last_poll = self.last_poll.get(node, np.nan)
            for seq, t_commit in sorted(self.committed.items()):
                if t_commit > last_poll:
                    continue
                prev, t_seen = seen.get(seq, (last_poll, np.nan))  # unseen: lag at least till the last poll
                rows["node"].append(node)
                rows["seq"].append(seq)
                rows["t_commit_s"].append(t_commit - origin)
                rows["t_seen_s"].append(t_seen - origin)
                rows["t_prev_poll_s"].append(prev - origin)
                lag = (t_seen - t_commit) * 1000  # below 0: seen between the commit and the writer's log of it
                rows["lag_ms"].append(max(lag, 0.0) if lag == lag else lag)
                rows["lag_low_ms"].append(max(0.0, (prev - t_commit) * 1000) if prev == prev else np.nan)
                wall = applied.get(seq)
                rows["apply_lag_ms"].append((wall - self.committed_wall[seq]) * 1000 if wall is not None else np.nan)
        return LAG.frame(rows)


class HeartbeatWriter(Probe):
    def __init__(self, connect: Connect, node: str, log: HeartbeatLog, clock: Callable[[], float],
                 interval_s: float = 0.1):
        self.name, self.interval_s = f"heartbeat-writer:{node}", interval_s
        self.connect, self.node, self.log, self.clock = connect, node, log, clock

    def setup(self) -> None:
        self.conn = self.connect(self.node)
        with self.conn.cursor() as cur:  # the table exists: Heartbeat.prepare() made it
            cur.execute(f"SELECT COALESCE(MAX(seq), 0) AS m FROM {TABLE}")
            self.seq = int(cur.fetchone()["m"])
        self.cur = self.conn.cursor(pymysql.cursors.Cursor)

    def sample(self, t: float) -> None:
        self.seq += 1
        self.cur.execute(WRITE, (self.seq, time.time()))
        self.log.commit(self.seq, self.clock(), time.time())

    def close(self) -> None:
        self.conn.close()


class HeartbeatReader(Probe):
    """Polls ``MAX(seq)`` on one node when there is something to see: shortly after each commit
    (``FIRST_POLLS`` after it), then every ``interval_s`` while the newest heartbeat is still
    unseen; idle while caught up. A node in sync costs about one poll per heartbeat with a
    bracket of a couple of milliseconds; a lagging node is polled every ``interval_s``."""

    FIRST_POLLS = (0.002, 0.006, 0.014)  # after a commit, seconds
    DRAIN_S = 0.25  # at close, how long to keep polling for heartbeats committed but not yet seen

    def __init__(self, connect: Connect, node: str, log: HeartbeatLog, clock: Callable[[], float],
                 interval_s: float = 0.02, offset_s: float = 0.0):
        self.name, self.interval_s, self.offset_s = f"heartbeat-reader:{node}", interval_s, offset_s
        self.lane = "heartbeat-readers"
        self.connect, self.node, self.log, self.clock = connect, node, log, clock
        self.last: int | None = None
        self.prev_poll = np.nan
        log.seen[node] = {}

    def bind_wake(self, wake) -> None:
        self.log.wakers.append(wake)

    def next_due(self, last_due: float, now: float) -> float | None:
        """``now`` is sampler time; the delays below are measured on the heartbeat clock."""
        log = self.log
        if self.last is not None and log.last_seq <= self.last:
            return None  # caught up: sleep until the next commit wakes the lane
        oldest = self.last + 1 if self.last is not None else min(log.committed, default=None)
        t_commit = log.committed.get(oldest) if oldest is not None else None
        if t_commit is None:  # nothing committed yet, or the table is still on its way
            return now + self.interval_s
        since = self.clock() - t_commit  # how long ago the oldest unseen heartbeat committed
        for step in self.FIRST_POLLS:
            if since < step:
                return now + (step - since)
        return now + max(0.0, self.interval_s - (self.clock() - self._last_poll_clock))

    def setup(self) -> None:
        self.conn = self.connect(self.node)
        self.cur = self.conn.cursor(pymysql.cursors.Cursor)  # plain tuples, reused: the hot path
        self._last_poll_clock = self.clock()

    def sample(self, t: float) -> None:
        try:
            self.cur.execute(POLL)
            top = self.cur.fetchone()[0]
        except pymysql.err.ProgrammingError as exc:
            if exc.args[0] != NO_TABLE:
                raise
            top = None
        t_poll = self.clock()
        self._last_poll_clock = t_poll
        self.log.last_poll[self.node] = t_poll
        if top is not None:
            top = int(top)
            if self.last is None:  # the first answer: what this heartbeat committed above it is seen now
                base = self.log.base_seq
                self.last = min(top, base if base is not None else min(self.log.committed, default=top + 1) - 1)
            if top > self.last:
                seen = self.log.seen[self.node]
                for seq in range(self.last + 1, top + 1):
                    seen[seq] = (self.prev_poll, t_poll)
                self.last = top
        self.prev_poll = t_poll

    def close(self) -> None:
        """Sampling may stop between a commit and the poll it woke: before closing, poll on for at most
        ``DRAIN_S`` until the newest heartbeat is seen (a node in sync: one poll, a few ms). What is still
        unseen then is lag, kept as a lower bound; a node that does not answer keeps what it had."""
        deadline = self.clock() + self.DRAIN_S
        try:
            while self.last is None or self.last < self.log.last_seq:
                self.sample(self.clock())
                if self.clock() >= deadline:
                    break
                time.sleep(min(self.interval_s, 0.005))
        except (pymysql.MySQLError, OSError):
            pass
        finally:
            self.conn.close()


class Heartbeat:
    """A writer on ``writer`` and readers on ``readers``; ``trigger_on`` names MariaDB replicas. ``write_connect``
    (default ``connect``) is the writer's: an application's account, which a read-only node refuses."""

    def __init__(self, connect: Connect, writer: str, readers: list[str], *, trigger_on: set[str] | frozenset[str] = frozenset(),
                 write_every: float = 0.1, read_every: float = 0.02, clock: Callable[[], float] | None = None,
                 write_connect: Connect | None = None):
        self.log = HeartbeatLog()
        self.clock = clock or time.monotonic
        self.writer = HeartbeatWriter(write_connect or connect, writer, self.log, self.clock, write_every)
        # readers poll half a period out of phase with the writer: a poll never races the commit it follows
        self.readers = [HeartbeatReader(connect, r, self.log, self.clock, read_every, read_every / 2) for r in readers]
        self.connect = connect
        self.trigger_on = set(trigger_on)
        self.triggers: set[str] = set()  # nodes whose apply trigger is in place
        self.warnings: list[str] = []

    def prepare(self, timeout: float = 10.0) -> None:
        """Create the heartbeat table on the writer; on MariaDB replicas that have received it within
        ``timeout``, install the apply trigger (a replica that has not is noted in ``warnings``)."""
        conn = self.connect(self.writer.node)
        try:
            with conn.cursor() as cur:
                cur.execute("CREATE DATABASE IF NOT EXISTS benchlib")
                cur.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (seq BIGINT PRIMARY KEY, sent_at DOUBLE NOT NULL) "
                            "ENGINE=InnoDB")
                cur.execute(f"SELECT COALESCE(MAX(seq), 0) AS m FROM {TABLE}")
                self.log.base_seq = int(cur.fetchone()["m"])
        finally:
            conn.close()
        deadline = time.monotonic() + timeout
        for node in sorted(self.trigger_on):
            conn = self.connect(node)
            try:
                with conn.cursor() as cur:
                    while True:  # the table arrives by replication
                        cur.execute("SELECT COUNT(*) AS n FROM information_schema.TABLES "
                                    "WHERE TABLE_SCHEMA='benchlib' AND TABLE_NAME='heartbeat'")
                        if cur.fetchone()["n"] or time.monotonic() > deadline:
                            break
                        time.sleep(0.02)
                    cur.execute("SELECT COUNT(*) AS n FROM information_schema.TABLES "
                                "WHERE TABLE_SCHEMA='benchlib' AND TABLE_NAME='heartbeat'")
                    if not cur.fetchone()["n"]:
                        self.warnings.append(f"{node}: the heartbeat table had not replicated after {timeout:g} s "
                                             "(replica stopped or far behind): no apply times on this node")
                        continue
                    # replica only, binary log off: no errant GTID; fired for replicated row events
                    cur.execute("SET SESSION sql_log_bin = 0")
                    cur.execute(f"CREATE TABLE IF NOT EXISTS {APPLY_TABLE} "
                                "(seq BIGINT PRIMARY KEY, applied_at DOUBLE NOT NULL)")
                    cur.execute(f"CREATE TRIGGER IF NOT EXISTS benchlib.heartbeat_applied AFTER INSERT ON {TABLE} "
                                f"FOR EACH ROW INSERT INTO {APPLY_TABLE} VALUES (NEW.seq, UNIX_TIMESTAMP(SYSDATE(6)))")
                    cur.execute("SET GLOBAL slave_run_triggers_for_rbr = 'YES'")
                    self.triggers.add(node)
            finally:
                conn.close()

    @property
    def probes(self) -> list[Probe]:
        return [self.writer, *self.readers]

    def caught_up(self) -> bool:
        """Every reader has seen the last heartbeat written."""
        last = self.log.last_seq
        return all(last in self.log.seen[r.node] for r in self.readers)

    def catch_up_bounds(self, end: float) -> tuple[float, float] | None:
        """Catch-up after a load that ended at ``end`` (heartbeat clock), bracketed by heartbeats: every node
        has seen the first heartbeat committed after ``end`` (it follows every load transaction: the upper
        bound) and the last one committed before it (the lower bound). None until the upper bound is known.
        The bracket is at most one heartbeat period wide."""
        log = self.log
        with log.lock:
            after = min((q for q, t in log.committed.items() if t >= end), default=None)
            before = max((q for q, t in log.committed.items() if t < end), default=None)
        if after is None or not all(after in log.seen[r.node] for r in self.readers):
            return None
        high = max(log.seen[r.node][after][1] for r in self.readers) - end
        low = 0.0
        if before is not None and all(before in log.seen[r.node] for r in self.readers):
            low = max(0.0, max(log.seen[r.node][before][1] for r in self.readers) - end)
        return min(low, high), max(high, 0.0)

    def current_lag_ms(self) -> float:
        """Live lag for progress displays: how long ago the oldest heartbeat some node has not seen
        yet was committed (0 when every node is caught up). The stored frame is the measurement."""
        now, worst = self.clock(), 0.0
        for reader in self.readers:
            t = self.log.committed.get(reader.last + 1) if reader.last is not None else None
            if t is not None:
                worst = max(worst, now - t)
        return worst * 1000

    def frame(self, origin: float = 0.0) -> pd.DataFrame:
        """The LAG frame (times relative to ``origin``), with apply times from the replicas' trigger tables."""
        if self.log.committed:
            first, last = min(self.log.committed), max(self.log.committed)
            for reader in self.readers:
                if reader.node in self.triggers:
                    try:
                        conn = self.connect(reader.node)
                    except (BenchlibError, pymysql.MySQLError, OSError) as exc:  # e.g. the node went down
                        self.warnings.append(f"{reader.node}: apply times not read ({str(exc).splitlines()[0]})")
                        continue
                    try:
                        with conn.cursor() as cur:
                            cur.execute(f"SELECT seq, applied_at FROM {APPLY_TABLE} WHERE seq BETWEEN %s AND %s",
                                        (first, last))
                            self.log.applied_wall[reader.node] = {int(r["seq"]): float(r["applied_at"])
                                                                  for r in cur.fetchall()}
                    except pymysql.MySQLError as exc:
                        self.warnings.append(f"{reader.node}: apply times not read ({exc})")
                    finally:
                        conn.close()
        return self.log.frame(origin)
