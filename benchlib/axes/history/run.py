"""The history axis beside a run's load: the clients (``benchlib.sampling.histories``) on the nodes ``on`` names,
under the run's isolation level; their frame, their table in the consistency audit, and in the manifest how they ran
and on which nodes (a node that is read-only runs read-only transactions: an async replica, a single-primary group's
secondary)."""

from __future__ import annotations

import time
import zlib
from typing import Any

import pandas as pd
import pymysql

from benchlib.axes.history import session_of
from benchlib.axis import AxisRun, RunContext
from benchlib.sampling.histories import TABLE, HistoryOptions, HistoryProbe

__all__ = ["HistoryRun", "read_only"]


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
