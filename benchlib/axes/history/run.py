"""The history axis beside a run's load. The history probe: clients that run short list-append transactions beside a run's load and record each one (its
micro-operations, when it began and ended, its outcome) for the isolation checker (``benchlib.axes.history.checker``).

A transaction is 1 to ``max_ops`` micro-operations on a few keys: a read of a key's whole list, or an append of a
value no other append of the run adds to that key. The clients share ``keys`` live keys; a key that has had
``per_key`` appends is retired and a new one takes its place (lists stay short, as in Jepsen's list-append). The
table, ``benchlib.history``, holds a key's list as space-separated values:

- a read is ``SELECT val FROM benchlib.history WHERE k = ?`` (a plain consistent read: no lock);
- an append is ``INSERT ... ON DUPLICATE KEY UPDATE val = CONCAT(val, ' ', ?)``, as Jepsen's MySQL suite appends
  with ``CONCAT``: it changes the latest committed list, whatever the transaction read before.

A transaction is ``START TRANSACTION``, its operations, ``COMMIT``, under the session's isolation level (and the
settings the run names: MariaDB's ``innodb_snapshot_isolation``, a read consistency). Its outcome: ``ok`` when the
commit returned, ``fail`` when the server refused an operation or the commit (the error kept, by number), ``info``
when the connection was lost at commit (it may or may not have happened). Each client is a probe of its own lane, at
``rate`` transactions a second; a client on a read-only node (an async replica) runs read-only transactions.

``HistoryRun``: the clients on the nodes ``on`` names, under the run's isolation level; their frame, their table in the consistency audit, and in the manifest how they ran
and on which nodes (a node that is read-only runs read-only transactions: an async replica, a single-primary group's
secondary)."""

from __future__ import annotations

import itertools
import threading
import time
import zlib
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd
import pymysql

from benchlib.axes.history import session_of
from benchlib.axes.history.checker.history import HISTORY, HISTORY_COLUMNS
from benchlib.axis import AxisRun, RunContext
from benchlib.sampling.probe import Connect, Probe

__all__ = ["HistoryOptions", "HistoryProbe", "HistoryRun", "TABLE", "read_only"]

TABLE = "benchlib.history"
READ = f"SELECT val FROM {TABLE} WHERE k = %s"
APPEND = f"INSERT INTO {TABLE} (k, val) VALUES (%s, %s) ON DUPLICATE KEY UPDATE val = CONCAT(val, ' ', %s)"
LOST = (2006, 2013, 2055)  # the server went away or the connection was lost


@dataclass(frozen=True)
class HistoryOptions:
    """The clients and their transactions."""

    clients: int = 4
    rate: float = 50.0  # transactions a second, each client
    keys: int = 8  # live keys the clients share (fewer: more contention)
    per_key: int = 32  # appends before a key is retired
    max_ops: int = 4  # micro-operations a transaction, at most
    reads: float = 0.5  # the share of micro-operations that are reads
    isolation: str = "REPEATABLE READ"
    session: tuple[str, ...] = ()  # more session statements (innodb_snapshot_isolation, a read consistency)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class _Shared:
    """What the clients share: the live keys, the values, the recorded transactions, and whether the load window
    has ended (``over``: no client begins another transaction; the history spans the load, not the catch-up)."""

    keys: list[int]
    per_key: int
    appended: dict[int, int] = field(default_factory=dict)
    fresh: int = 0
    values: Any = field(default_factory=lambda: itertools.count(1))
    txns: Any = field(default_factory=lambda: itertools.count(1))
    rows: list[tuple] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    over: bool = False

    def key(self, rng: np.random.Generator, append: bool) -> int:
        with self.lock:
            slot = int(rng.integers(0, len(self.keys)))
            k = self.keys[slot]
            if append:
                self.appended[k] = self.appended.get(k, 0) + 1
                if self.appended[k] >= self.per_key:
                    self.keys[slot], self.fresh = self.fresh, self.fresh + 1
            return k


def _errno(exc: BaseException) -> int:
    return int(exc.args[0]) if isinstance(exc, pymysql.MySQLError) and exc.args and \
        isinstance(exc.args[0], int) else 0


class _Client(Probe):
    """One client: a transaction a tick on its node, recorded."""

    def __init__(self, index: int, connect: Connect, node: str, shared: _Shared, options: HistoryOptions,
                 clock: Callable[[], float], read_only: bool, seed: int):
        self.name, self.interval_s = f"history-client:{index}:{node}", 1.0 / options.rate
        self.index, self.connect, self.node, self.shared, self.options = index, connect, node, shared, options
        self.clock, self.read_only = clock, read_only
        self.rng = np.random.default_rng(seed)
        self.conn: Any = None

    def setup(self) -> None:
        self.conn = self.connect(self.node)
        self.cur = self.conn.cursor(pymysql.cursors.Cursor)
        self.cur.execute(f"SET SESSION TRANSACTION ISOLATION LEVEL {self.options.isolation}")
        for statement in self.options.session:
            self.cur.execute(statement)

    def _ops(self) -> list[tuple[str, int, int | None]]:
        o = self.options
        out = []
        for _ in range(int(self.rng.integers(1, o.max_ops + 1))):
            append = not self.read_only and self.rng.random() >= o.reads
            k = self.shared.key(self.rng, append)
            out.append(("append", k, next(self.shared.values)) if append else ("r", k, None))
        return out

    def sample(self, t: float) -> None:
        if self.shared.over:
            return
        ops, txn = self._ops(), next(self.shared.txns)
        done: list[tuple[str, int, Any]] = []
        outcome, error, t0 = "ok", "", self.clock()
        try:
            if self.conn is None:
                self.setup()
            self.cur.execute("START TRANSACTION")
            for f, k, v in ops:
                if f == "r":
                    self.cur.execute(READ, (k,))
                    row = self.cur.fetchone()
                    done.append(("r", k, row[0] if row else ""))
                else:
                    self.cur.execute(APPEND, (k, str(v), str(v)))
                    done.append(("append", k, v))
        except (pymysql.MySQLError, OSError) as exc:
            outcome, error = "fail", f"{_errno(exc)}"
            self._rollback()
        if outcome == "ok":
            try:
                self.conn.commit()
            except (pymysql.MySQLError, OSError) as exc:
                lost = _errno(exc) in LOST or isinstance(exc, OSError)
                outcome, error = ("info" if lost else "fail"), f"{_errno(exc)}"
                self._rollback()
        t1 = self.clock() if outcome != "info" else float("nan")
        # a failed transaction is recorded as planned, its reads unknown: its appends did not happen
        recorded = done if outcome != "fail" else [(f, k, v) for f, k, v in ops]
        with self.shared.lock:
            for i, (f, k, v) in enumerate(recorded):
                self.shared.rows.append((txn, self.index, self.node, t0, t1, outcome, i, f, k,
                                         v if f == "append" else None, v if f == "r" else None, error))

    def _rollback(self) -> None:
        try:
            self.conn.rollback()
        except Exception:  # noqa: BLE001 - a connection that is gone: the next transaction connects anew
            self._drop()

    def _drop(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:  # noqa: BLE001
                pass
        self.conn = None

    def close(self) -> None:
        self._drop()


class HistoryProbe:
    """``options.clients`` clients over ``nodes`` (round robin); a client on a node of ``read_only`` only reads."""

    def __init__(self, connect: Connect, write_node: str, nodes: list[str], options: HistoryOptions,
                 clock: Callable[[], float], read_only: tuple[str, ...] = (), seed: int = 0):
        self.connect, self.write_node, self.options = connect, write_node, options
        self.shared = _Shared(list(range(1, options.keys + 1)), options.per_key, fresh=options.keys + 1)
        self.clients = [_Client(i + 1, connect, nodes[i % len(nodes)], self.shared, options, clock,
                                nodes[i % len(nodes)] in read_only, seed * 1000 + i) for i in range(options.clients)]

    def prepare(self) -> None:
        """The table, empty, on the write node (the clients' nodes get it by replication before the load starts)."""
        conn = self.connect(self.write_node)
        try:
            with conn.cursor() as cur:
                cur.execute("CREATE DATABASE IF NOT EXISTS benchlib")
                cur.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (k BIGINT PRIMARY KEY, val TEXT NOT NULL) "
                            "ENGINE=InnoDB")
                cur.execute(f"DELETE FROM {TABLE}")
        finally:
            conn.close()

    @property
    def probes(self) -> list[Probe]:
        return list(self.clients)

    def frame(self, origin: float) -> pd.DataFrame:
        """Every micro-operation recorded (``benchlib.axes.history.checker.history``), times from ``origin``, plus
        ``error``: the error number that failed the transaction ("" when none)."""
        rows = self.shared.rows
        cols = {c: [r[j] for r in rows] for j, c in enumerate(list(HISTORY_COLUMNS) + ["error"])}
        cols["t_invoke_s"] = [t - origin for t in cols["t_invoke_s"]]
        cols["t_complete_s"] = [t - origin for t in cols["t_complete_s"]]
        return HISTORY.frame(cols)


def read_only(connect: Any, node: str) -> bool:
    """Whether ``node`` refuses writes now (read_only, or MySQL's super_read_only)."""
    conn = connect(node)
    try:
        with conn.cursor(pymysql.cursors.Cursor) as cur:
            cur.execute("SELECT @@GLOBAL.read_only")
            if int(cur.fetchone()[0]):
                return True
            try:
                cur.execute("SELECT @@GLOBAL.super_read_only")
                return bool(int(cur.fetchone()[0]))
            except pymysql.MySQLError:  # MariaDB has none
                return False
    finally:
        conn.close()


class HistoryRun(AxisRun):
    def __init__(self, ctx: RunContext):
        v = ctx.variant
        self.ctx, self.table = ctx, v.options
        level, session = session_of(v.isolation)
        t = v.options
        self.options = HistoryOptions(t.clients, t.rate, t.keys, t.per_key, t.max_ops, t.reads, level,
                                      session + v.statements)
        self.record: dict[str, object] = {"isolation": v.isolation, "consistency": v.consistency, "on": v.on,
                                          "clients": t.clients,
                                          "rate": t.rate, "keys": t.keys, "per_key": t.per_key,
                                          "max_ops": t.max_ops, "reads": t.reads}
        self.probe: HistoryProbe | None = None

    def probes(self) -> list[Any]:
        ctx, on = self.ctx, self.table.on
        write = ctx.nodes[0]
        nodes = [write] if on == "write" else list(ctx.nodes)
        ro = tuple(n for n in nodes if n != write and read_only(ctx.lab.connect, n))
        if on == "replicas" and len(nodes) > 1:  # the write node's clients write, the others read on the replicas
            ro = tuple(n for n in nodes if n != write)
        order = [nodes[i % len(nodes)] for i in range(self.options.clients)]
        self.probe = HistoryProbe(ctx.lab.connect, write, order, self.options, time.monotonic, read_only=ro,
                                  seed=zlib.crc32(ctx.run_id.encode()) % 1000)
        self.probe.prepare()
        self.record.update(nodes=order, read_only=list(ro))
        return list(self.probe.probes)

    def join(self, loaded: Any) -> Any:
        """The load has ended: the clients begin no more transactions (a replica's catch-up after it is not part
        of the history: every configuration's history spans its load window alike)."""
        if self.probe is not None:
            self.probe.shared.over = True
        return loaded

    def tables(self) -> list[str]:
        return [TABLE]

    def frames(self, origin: float) -> dict[str, pd.DataFrame]:
        if self.probe is None:
            return {}
        frame = self.probe.frame(origin)
        self.record["transactions"] = int(frame.txn.nunique())
        return {"history": frame}

    def manifest(self) -> dict[str, object]:
        return self.record
