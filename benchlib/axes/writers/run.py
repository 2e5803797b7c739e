"""The writers axis in a run: every writer node's own counters read just before the load and right after it (the
statements it rolled back, the conflicts its system counts: whatever of ``COUNTERS`` the node has), the clients'
lines of every part of the load read once they end, and per node the server counters whose increase equals the
errors the clients saw. It fails no run: what it cannot read it records as ``why_not``."""

from __future__ import annotations

import pandas as pd
import pymysql

from benchlib.axes.writers import WritersRecord
from benchlib.axes.writers.reconcile import reconciled_nodes
from benchlib.axis import AxisRun, RunContext
from benchlib.errors import BenchlibError
from benchlib.systems import sql
from benchlib.workloads.counted import frames, totals

__all__ = ["COUNTERS", "WritersRun"]

#: the status counters a conflict may move, on every system that has them (a node reports those it has)
COUNTERS = ("Handler_rollback", "Com_rollback", "Handler_commit", "wsrep_local_cert_failures", "wsrep_local_bf_aborts",
            "wsrep_local_replays")
#: a Group Replication member's own: conflicts its certifier detected, local transactions it rolled back
GROUP_STATS = ("SELECT COUNT_CONFLICTS_DETECTED AS gr_conflicts_detected, COUNT_TRANSACTIONS_LOCAL_ROLLBACK AS "
               "gr_local_rollback FROM performance_schema.replication_group_member_stats "
               "WHERE MEMBER_ID = @@server_uuid")


def counters(conn) -> dict[str, float]:
    """The node's counters of ``COUNTERS`` and, in a group, its member stats."""
    names = ", ".join(f"'{c}'" for c in COUNTERS)
    out = {str(r["Variable_name"]): float(r["Value"]) for r in
           sql.query(conn, f"SHOW GLOBAL STATUS WHERE Variable_name IN ({names})")}
    try:
        rows = sql.query(conn, GROUP_STATS)
    except pymysql.MySQLError:  # no Group Replication here
        rows = []
    if rows and rows[0]["gr_conflicts_detected"] is not None:
        out.update({k: float(v) for k, v in rows[0].items()})
    return out


class WritersRun(AxisRun):
    def __init__(self, ctx: RunContext):
        self.ctx = ctx
        v = ctx.variant
        self.nodes = ctx.nodes[:v.nodes]
        self.record: dict[str, object] = {"nodes": self.nodes, "keys": v.keys, "retry": v.retry}
        self.before: dict[str, dict[str, float]] = {}
        self.lines: list[str] = []
        self.counted = frames([], 0.0)

    def _read(self) -> dict[str, dict[str, float]]:
        out = {}
        for n in self.nodes:
            with self.ctx.lab.connect(n) as conn:
                out[n] = counters(conn)
        return out

    def start(self) -> None:
        try:
            self.before = self._read()
        except (pymysql.MySQLError, OSError, BenchlibError) as e:
            self.record["why_not"] = f"the writer nodes' counters could not be read before the load: {e}"

    def segment(self, loaded, node: str) -> None:
        result = getattr(loaded, "result", None)
        self.lines += [r for r in (result.records if result is not None else []) if r.startswith("benchlib-writer")]

    def join(self, loaded):
        self.counted = frames(self.lines, 0.0)
        client = totals(self.counted)
        self.record["client"] = client
        if self.before:
            try:
                after = self._read()
            except (pymysql.MySQLError, OSError, BenchlibError) as e:
                self.record["why_not"] = f"the writer nodes' counters could not be read after the load: {e}"
                return loaded
            server = {n: {k: after[n][k] - v for k, v in self.before[n].items() if k in after[n]} for n in self.nodes}
            self.record["server"] = server
            # read once every part of the load had ended: a counter that counts the same conflicts equals them
            self.record["reconciled"] = reconciled_nodes(client, server)
        return loaded

    def frames(self, origin: float) -> dict[str, pd.DataFrame]:
        c = self.counted
        return {"writer_seconds": c.seconds.assign(t_s=c.seconds.t_s - origin),
                "writer_errors": c.errors.assign(t_s=c.errors.t_s - origin)}

    def manifest(self) -> dict[str, object]:
        return WritersRecord.model_validate(self.record).model_dump()
