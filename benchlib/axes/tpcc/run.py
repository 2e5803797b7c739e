"""The TPC-C-like axis in a run: the write node's sum of D_NEXT_O_ID read every second (a probe) and exactly just
before the load and after its catch-up; the client's lines by type and second from the load's output; after the
shared audit, conditions 1-4 on every node. It fails no run by itself: a condition that fails makes the run invalid
(``audit`` returns it, as a checksum that differs), what it could not read is ``why_not``."""

from __future__ import annotations

import time

import pandas as pd
import pymysql

from benchlib.axes.tpcc import TpccRecord
from benchlib.axis import AxisRun, RunContext
from benchlib.errors import BenchlibError
from benchlib.sampling.probe import Probe
from benchlib.systems import sql
from benchlib.workloads.tpcc import FACTS_SQL, TPCC_ORDERS, Records, frames, violations

__all__ = ["NextOrdersProbe", "TpccRun"]

NEXT_ORDERS = "SELECT SUM(d_next_o_id) AS n FROM sbtest.district"


class NextOrdersProbe(Probe):
    """The sum of D_NEXT_O_ID on the node taking the writes (it follows a failover), every second."""

    interval_s = 1.0

    def __init__(self, ctx: RunContext, node: str):
        self.ctx, self.node, self.name = ctx, node, f"tpcc-orders:{node}"
        self.rows: list[tuple[float, str, int]] = []  # (time.monotonic, node, sum)
        self.conn = None
        self.on = node

    def setup(self) -> None:
        self.on = self.ctx.writes_now() or self.node
        self.conn = self.ctx.lab.connect(self.on)

    def sample(self, t: float) -> None:
        if self.conn is not None and (self.ctx.writes_now() or self.node) != self.on:
            self._drop()  # the writes moved: read where they go now
        try:
            if self.conn is None:
                self.setup()
            n = sql.query(self.conn, NEXT_ORDERS)[0]["n"]
        except (pymysql.MySQLError, OSError, BenchlibError):
            self._drop()  # a node down under a fault: the next tick connects again
            return
        if n is not None:
            self.rows.append((time.monotonic(), self.on, int(n)))

    def _drop(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
        self.conn = None

    def close(self) -> None:
        self._drop()


class TpccRun(AxisRun):
    def __init__(self, ctx: RunContext):
        self.ctx = ctx
        o = ctx.options
        self.node = ctx.nodes[0]
        self.record: dict[str, object] = {"mix": o.workload, "warehouses": o.warehouses, "scale": o.scale,
                                          "node": self.node}  # TpccRecord's fields
        self.probe = NextOrdersProbe(ctx, self.node)
        self.began: tuple[float, int] | None = None
        self.loaded_at: float | None = None
        self.records = frames([], 0.0)  # the load's lines, read once (seconds on CLOCK_MONOTONIC)
        self.lines: list[str] = []  # every segment's (a failover starts the load again elsewhere)

    def _next_orders(self, node: str | None = None) -> int:
        with self.ctx.lab.connect(node or self.node) as conn:
            return int(sql.query(conn, NEXT_ORDERS)[0]["n"] or 0)

    def probes(self) -> list[Probe]:
        return [self.probe]

    def start(self) -> None:
        try:
            self.began = (time.monotonic(), self._next_orders())
        except (pymysql.MySQLError, OSError, BenchlibError) as e:
            self.record["why_not"] = f"{self.node}'s districts could not be read before the load: {e}"

    def segment(self, loaded, node: str) -> None:
        result = getattr(loaded, "result", None)
        self.lines += list(result.records) if result is not None else []

    def join(self, loaded):
        self.loaded_at = time.monotonic()
        self.records = frames(self.lines, 0.0)
        return loaded

    def stop(self) -> str | None:
        if self.began is not None and self.loaded_at is not None:
            self.record["load_s"] = self.loaded_at - self.began[0]
            # after a failover and the heal: on the node the writes went to (every node holds the same)
            now = self.ctx.writes_now() or self.node
            try:
                self.record["new_orders_server"] = self._next_orders(now) - self.began[1]
            except (pymysql.MySQLError, OSError, BenchlibError) as e:
                self.record["why_not"] = f"{now}'s districts could not be read after the load: {e}"
        rec = self.records
        committed = {str(k): int(v) for k, v in rec.types.groupby("type")["committed"].sum().items()}
        self.record["committed"] = committed
        self.record["rolled_back"] = int(rec.types.rolled_back.sum())
        self.record["new_orders_client"] = committed.get("new_order", 0)
        self.record["errors"] = {str(k): int(v) for k, v in rec.errors.groupby("code")["count"].sum().items()}
        return None

    def audit(self) -> list[str]:
        """Conditions 1-4 on every node of the cluster (after the shared audit: every node has applied the write
        node's position); what fails, in words."""
        found: list[str] = []
        checked: list[str] = []
        for node in self.ctx.nodes:
            try:
                with self.ctx.lab.connect(node) as conn:
                    warehouses, districts = (sql.query(conn, q) for q in FACTS_SQL)
            except (pymysql.MySQLError, OSError, BenchlibError) as e:
                found.append(f"the consistency conditions could not be read on {node}: {e}")
                continue
            checked.append(node)
            found += violations(node, warehouses, districts)
        self.record.update(checked_on=checked, violations=found)
        return found

    def frames(self, origin: float) -> dict[str, pd.DataFrame]:
        rec = self.records
        rec = Records(rec.types.assign(t_s=rec.types.t_s - origin), rec.errors.assign(t_s=rec.errors.t_s - origin),
                      rec.latency)
        rows = self.probe.rows
        orders = TPCC_ORDERS.frame({"t_s": [t - origin for t, _, _ in rows], "node": [n for _, n, _ in rows],
                                    "next_order_ids": [v for _, _, v in rows]})
        return {"tpcc_types": rec.types, "tpcc_errors": rec.errors, "tpcc_latency": rec.latency,
                "tpcc_orders": orders}

    def manifest(self) -> dict[str, object]:
        return TpccRecord.model_validate(self.record).model_dump()

    def close(self) -> None:
        self.probe.close()
