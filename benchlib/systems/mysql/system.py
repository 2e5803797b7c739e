"""MySQL (and Percona Server) asynchronous replication, 5.7 to 9.x: the names follow the version.

Settings: durability, the replica's parallel apply (``replica_parallel_workers``, before
8.0.26 ``slave_parallel_workers``; the SQL thread is restarted), semi-sync under MySQL's
names (``rpl_semi_sync_source_*``, with the number of replica acks a commit waits for), plus
``performance_schema`` on a remote lab that allows restarts (``SET PERSIST_ONLY`` then ``RESTART``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from benchlib.systems import dialect
from benchlib.systems import semisync
from benchlib.systems.replication import MYSQL8_APPLIER_SQL
from benchlib.systems.settings import COMMON, Setting
from benchlib.systems.sql import global_status, query
from benchlib.systems.values import int_range, parse_bool, sql_literal
from benchlib.systems import consistency, positions, replication
from benchlib.systems import invariants as inv
from benchlib.systems.base import Stall, System

__all__ = ["SYSTEM", "MYSQL8_APPLIER_SQL", "MYSQL_BACKLOG_SQL", "RESTART_SETTINGS", "SETTINGS", "VARIABLES", "ApplierState",
           "detect", "gtid_count", "mysql8_lag_us", "node_status"]


#: recorded in each run's manifest (the names before 8.0.26 and after; a server has one of each pair)
#: semi-sync's waits on a MySQL source: the time transactions waited for a replica's acknowledgement, and how many
COUNTERS = ("Rpl_semi_sync_source_tx_wait_time", "Rpl_semi_sync_source_tx_waits")
VARIABLES = ("replica_parallel_workers", "slave_parallel_workers", "replica_preserve_commit_order",
             "rpl_semi_sync_source_enabled", "rpl_semi_sync_source_wait_point", "rpl_semi_sync_source_timeout",
             "rpl_semi_sync_master_enabled", "binlog_transaction_dependency_tracking")


def _workers(variables: dict[str, str]) -> str:
    return "replica_parallel_workers" if "replica_parallel_workers" in variables else "slave_parallel_workers"


def _parallel(value: Any, role: str, variables: dict[str, str]) -> list[str]:
    if role != "replica":
        return []
    word = "REPLICA" if "replica_parallel_workers" in variables else "SLAVE"
    return [f"STOP {word} SQL_THREAD", f"SET GLOBAL {_workers(variables)} = {sql_literal(value)}",
            f"START {word} SQL_THREAD"]


RESTART_SETTINGS: dict[str, Setting] = {
    "performance_schema": Setting("performance_schema", parse_bool, "performance_schema on or off (read at server "
                                  "start)", restart="performance_schema"),
}
SETTINGS: dict[str, Setting] = {**COMMON, **{s.name: s for s in [
    Setting("parallel_threads", int_range(0, 1024), "replica apply threads (replica_parallel_workers); the SQL "
            "thread is restarted", _parallel, lambda v, vs: {_workers(vs): v}, replicas_only=True,
            variables=("replica_parallel_workers", "slave_parallel_workers")),
    *semisync.settings(semisync.MYSQL),
]}}


def detect(conn) -> dialect.ServerKind:
    rows = query(conn, "SELECT @@version AS version, @@version_comment AS version_comment")
    return dialect.detect(rows[0])


def node_status(conn, role: str) -> dict[str, object]:
    kind = detect(conn)
    if role == "primary":
        rows = query(conn, dialect.binary_log_status_sql(kind))
        out: dict[str, object] = {"gtid_executed": (rows[0].get("Executed_Gtid_Set") if rows else "") or ""}
        st = global_status(conn, "Rpl_semi_sync_source_")
        if st:
            out["semisync"] = st.get("rpl_semi_sync_source_status", "OFF")
            out["semisync_clients"] = int(st.get("rpl_semi_sync_source_clients", 0))
        return out
    rows = query(conn, dialect.replica_status_sql(kind))
    st = rows[0] if rows else {}
    return {
        "io_running": st.get("Replica_IO_Running", st.get("Slave_IO_Running", "-")),
        "sql_running": st.get("Replica_SQL_Running", st.get("Slave_SQL_Running", "-")),
        "seconds_behind_master": st.get(dialect.seconds_behind_column(kind)),
        "last_error": st.get("Last_IO_Error") or st.get("Last_SQL_Error") or "",
    }


# ---- MySQL 8 performance_schema apply lag ---------------------------------------------------------------------

@dataclass
class ApplierState:
    """What mysql8_lag_us remembers between polls."""

    last_queued: str | None = None


def mysql8_lag_us(rows: Iterable[Mapping[str, Any]], state: ApplierState) -> float | None:
    """Apply lag in microseconds from one poll of MYSQL8_APPLIER_SQL (all workers of one channel), on the
    replica's and the source's clocks (correct with offsets for cross-host use). A worker applying a
    transaction: now - the oldest applying commit timestamp. Nothing applying but new transactions queued
    since the last poll: end of apply - commit timestamp of the last applied. A thread not ON: now - end
    of the last apply (lag grows while it is stopped). Otherwise 0. UNIX_TIMESTAMP 0 means "none yet".
    None when there are no rows (no such channel)."""
    rows = list(rows)
    if not rows:
        return None
    now = float(rows[0]["NOW_TS"])
    applying = [float(r["APPLYING_ICT"]) for r in rows if r["APPLYING_ICT"] and float(r["APPLYING_ICT"]) > 0]
    queued = rows[0]["LAST_QUEUED"] or None
    new_queued = queued is not None and queued != state.last_queued
    state.last_queued = queued
    if applying:
        return (now - min(applying)) * 1e6
    done = [r for r in rows if r["APPLIED_ICT"] and float(r["APPLIED_ICT"]) > 0]
    last = max(done, key=lambda r: float(r["APPLIED_END"] or 0), default=None)
    if new_queued and last is not None:
        return (float(last["APPLIED_END"]) - float(last["APPLIED_ICT"])) * 1e6
    if any(r["SERVICE_STATE"] != "ON" or r["IO_STATE"] != "ON" for r in rows) and last is not None:
        return (now - float(last["APPLIED_END"])) * 1e6
    return 0.0


# ---- GTID backlogs --------------------------------------------------------------------------------------------

MYSQL_BACKLOG_SQL = ("SELECT GTID_SUBTRACT(RECEIVED_TRANSACTION_SET, @@GLOBAL.gtid_executed) AS BACKLOG "
                     "FROM performance_schema.replication_connection_status WHERE CHANNEL_NAME = %s")


def gtid_count(gtid_set: str | None) -> int:
    """Transactions in a MySQL GTID set text: ``uuid:1-5:7,uuid2:3`` -> 7 (tags of 8.3+ allowed)."""
    if not gtid_set:
        return 0
    total = 0
    for part in gtid_set.replace("\n", "").split(","):
        part = part.strip()
        if not part:
            continue
        for interval in part.split(":")[1:]:
            if not interval or not interval[0].isdigit():
                continue  # a tag (8.3+): uuid:tag:1-5
            lo, _, hi = interval.partition("-")
            total += (int(hi) if hi else int(lo)) - int(lo) + 1
    return total


SYSTEM = System("mysql", SETTINGS, node_status, replication.readiness, replication.reads,
                frozenset({"mysql", "percona"}), invariants=(inv.semisync_holds, inv.replica_threads, inv.nodes_answer),
                positions=positions.GTID,
                stall=Stall(("STOP REPLICA SQL_THREAD",), ("START REPLICA SQL_THREAD",),
                            "the replica's SQL thread stopped (what a long DDL on a serial applier does to what follows)"),
                restart_settings=RESTART_SETTINGS, variables=VARIABLES, counters=COUNTERS,
                read_settings=consistency.replica_settings(consistency.mysql_token, positions.GTID))
