"""Asynchronous replication's statements and names, as data: MariaDB's and MySQL's (as ``semisync.Names`` keeps
semi-sync's), so that one procedure points a replica at its primary, reads its threads and waits for a position
on either server.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from benchlib.systems import dialect as q
from benchlib.systems.sql import query

__all__ = ["MARIADB", "MYSQL", "Names", "reads", "readiness", "replica_problems", "threads_running"]


#: every worker of one channel: what it applies and applied, with their commit timestamps (MySQL 8 and later)
MYSQL8_APPLIER_SQL = """
SELECT w.WORKER_ID, w.SERVICE_STATE, c.SERVICE_STATE AS IO_STATE,
       UNIX_TIMESTAMP(SYSDATE(6)) AS NOW_TS,
       UNIX_TIMESTAMP(w.APPLYING_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP) AS APPLYING_ICT,
       UNIX_TIMESTAMP(w.LAST_APPLIED_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP) AS APPLIED_ICT,
       UNIX_TIMESTAMP(w.LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP) AS APPLIED_END,
       c.LAST_QUEUED_TRANSACTION AS LAST_QUEUED,
       UNIX_TIMESTAMP(c.LAST_QUEUED_TRANSACTION_END_QUEUE_TIMESTAMP) AS QUEUED_END
FROM performance_schema.replication_applier_status_by_worker w
JOIN performance_schema.replication_connection_status c USING (CHANNEL_NAME)
WHERE CHANNEL_NAME = %s
"""


@dataclass(frozen=True)
class Names:
    stop: str  # stops the replica's threads
    start: str
    #: points a replica at its primary: host, port and the replication password as parameters (%s), GTID positioning
    change_source: str
    status: str  # the replica's status statement
    io_running: str  # its columns: the IO (receiver) thread, the SQL (applier) thread, seconds behind
    sql_running: str
    seconds_behind: str
    position: str  # the primary's executed GTID position (one value)
    wait: str  # waits for a position (%s) for up to %s seconds: 0 when reached
    #: the same positioning as ``change_source`` in the options of Ansible's community.mysql.mysql_replication
    #: (benchlib provision; MySQL: TLS where the statement asks for the source's public key)
    ansible: tuple[tuple[str, Any], ...] = ()


MARIADB = Names(
    stop="STOP SLAVE", start="START SLAVE",
    change_source="CHANGE MASTER TO MASTER_HOST=%s, MASTER_PORT=%s, MASTER_USER='repl', MASTER_PASSWORD=%s, "
                  "MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1",
    status="SHOW SLAVE STATUS", io_running="Slave_IO_Running", sql_running="Slave_SQL_Running",
    seconds_behind="Seconds_Behind_Master",
    position="SELECT @@GLOBAL.gtid_binlog_pos", wait="SELECT MASTER_GTID_WAIT(%s, %s)",
    ansible=(("primary_use_gtid", "replica_pos"), ("primary_connect_retry", 1)))
MYSQL = Names(
    stop="STOP REPLICA", start="START REPLICA",
    change_source="CHANGE REPLICATION SOURCE TO SOURCE_HOST=%s, SOURCE_PORT=%s, SOURCE_USER='repl', "
                  "SOURCE_PASSWORD=%s, SOURCE_AUTO_POSITION=1, GET_SOURCE_PUBLIC_KEY=1, SOURCE_CONNECT_RETRY=1",
    status="SHOW REPLICA STATUS", io_running="Replica_IO_Running", sql_running="Replica_SQL_Running",
    seconds_behind="Seconds_Behind_Source",
    position="SELECT @@GLOBAL.gtid_executed", wait="SELECT WAIT_FOR_EXECUTED_GTID_SET(%s, %s)",
    ansible=(("primary_auto_position", True), ("primary_ssl", True), ("primary_connect_retry", 1)))


def threads_running(row: Mapping[str, Any] | None) -> tuple[bool, str]:
    """(both threads run, why not) of one replica-status row, under either naming (Slave_* or Replica_*)."""
    if not row:
        return False, "replication not configured"
    io = row.get("Replica_IO_Running", row.get("Slave_IO_Running"))
    sq = row.get("Replica_SQL_Running", row.get("Slave_SQL_Running"))
    if io == "Yes" and sq == "Yes":
        return True, ""
    err = row.get("Last_IO_Error") or row.get("Last_SQL_Error") or ""
    return False, f"IO={io} SQL={sq} {err}".strip()


def replica_problems(row: Mapping[str, Any] | None, node: str, kind: q.ServerKind) -> list[str]:
    """What keeps a replica from being ready, from its replica-status row, each with what to do."""
    if not row:
        return [f"{node}: not configured as a replica (SHOW REPLICA STATUS is empty): set up replication from the "
                "primary, or give the node another role in the spec"]
    if threads_running(row)[0]:
        return []
    io = row.get("Replica_IO_Running", row.get("Slave_IO_Running"))
    sq = row.get("Replica_SQL_Running", row.get("Slave_SQL_Running"))
    errors = "; ".join(str(row.get(k)) for k in ("Last_IO_Error", "Last_SQL_Error") if row.get(k))
    start = "START REPLICA" if q.replica_status_sql(kind) == "SHOW REPLICA STATUS" else "START SLAVE"
    return [f"{node}: replication is stopped (IO thread: {io}, SQL thread: {sq}"
            + (f"; last error: {errors}" if errors else "") + f"): run {start} on {node}"
            + (" after fixing the error" if errors else "")]


def readiness(conn, writer: bool, size: int, node: str) -> list[str]:
    """A primary is ready when it answers; a replica when both its threads run."""
    if writer:
        return []
    kind = q.detect(query(conn, "SELECT @@version AS version, @@version_comment AS version_comment")[0])
    rows = query(conn, q.replica_status_sql(kind))
    return replica_problems(rows[0] if rows else None, node, kind)


def reads(kind: q.ServerKind, writer: bool) -> list[tuple[str, str, Any]]:
    """What the sampler reads on a node of a replicated pair, as (privilege probe, SQL, parameters): a replica's
    status, and on MySQL 8+ its applier tables."""
    if writer:
        return []
    out: list[tuple[str, str, Any]] = [("replica_status", q.replica_status_sql(kind), None)]
    if kind.mysql_family and kind.version >= (8, 0, 0):
        out.append(("performance_schema", MYSQL8_APPLIER_SQL, ("",)))
    return out
