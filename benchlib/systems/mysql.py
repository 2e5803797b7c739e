"""MySQL (and Percona Server) asynchronous replication, 5.7 to 9.x: the names follow the version.

Settings: durability, the replica's parallel apply (``replica_parallel_workers``, before
8.0.26 ``slave_parallel_workers``; the SQL thread is restarted), semi-sync under MySQL's
names (``rpl_semi_sync_source_*``, with the number of replica acks a commit waits for), plus
``performance_schema`` on a remote lab that allows restarts (``SET PERSIST_ONLY`` then ``RESTART``).
"""

from __future__ import annotations

from typing import Any

from benchlib.systems import queries as q
from benchlib.systems import semisync
from benchlib.systems.settings import COMMON, Setting
from benchlib.systems.sql import global_status, query
from benchlib.systems.values import int_range, parse_bool, sql_literal

__all__ = ["RESTART_SETTINGS", "SETTINGS", "VARIABLES", "detect", "node_status"]


#: recorded in each run's manifest (the names before 8.0.26 and after; a server has one of each pair)
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


def detect(conn) -> q.ServerKind:
    rows = query(conn, "SELECT @@version AS version, @@version_comment AS version_comment")
    return q.detect(rows[0])


def node_status(conn, role: str) -> dict[str, Any]:
    kind = detect(conn)
    if role == "primary":
        rows = query(conn, q.binary_log_status_sql(kind))
        out: dict[str, Any] = {"gtid_executed": (rows[0].get("Executed_Gtid_Set") if rows else "") or ""}
        st = global_status(conn, "Rpl_semi_sync_source_")
        if st:
            out["semisync"] = st.get("rpl_semi_sync_source_status", "OFF")
            out["semisync_clients"] = int(st.get("rpl_semi_sync_source_clients", 0))
        return out
    rows = query(conn, q.replica_status_sql(kind))
    st = rows[0] if rows else {}
    return {
        "io_running": st.get("Replica_IO_Running", st.get("Slave_IO_Running", "-")),
        "sql_running": st.get("Replica_SQL_Running", st.get("Slave_SQL_Running", "-")),
        "seconds_behind_master": st.get(q.seconds_behind_column(kind)),
        "last_error": st.get("Last_IO_Error") or st.get("Last_SQL_Error") or "",
    }
