"""MariaDB asynchronous and semi-synchronous replication (GTID), serial or parallel apply.

Settings: durability, the replica's parallel apply (threads and mode: the replica's
replication threads are stopped, the variable set, the threads started again) and
semi-sync (on/off, wait point, timeout). Semi-sync is switched on replicas first, then
on the primary, which is ready when every replica is its semi-sync client.
"""

from __future__ import annotations

from typing import Any

from benchlib.systems import semisync
from benchlib.systems.settings import COMMON, Setting, read_var
from benchlib.systems.sql import global_status, scalar, slave_status
from benchlib.systems.values import choice, int_range
from benchlib.systems import consistency, positions, replication
from benchlib.systems import invariants as inv
from benchlib.systems.base import NO_RESTART, Stall, System
from benchlib.systems.mysql.system import RESTART_SETTINGS

__all__ = ["SYSTEM", "SETTINGS", "VARIABLES", "node_status"]


#: recorded in each run's manifest
VARIABLES = ("slave_parallel_threads", "slave_parallel_mode", "rpl_semi_sync_master_enabled",
             "rpl_semi_sync_master_wait_point", "rpl_semi_sync_master_timeout")


def _parallel(var: str):
    def stmts(value: Any, role: str, variables: dict[str, str]) -> list[str]:
        from benchlib.systems.values import sql_literal

        return ["STOP SLAVE", f"SET GLOBAL {var} = {sql_literal(value)}", "START SLAVE"] if role == "replica" else []
    return stmts


SETTINGS: dict[str, Setting] = {**COMMON, **{s.name: s for s in [
    Setting("parallel_threads", int_range(0, 16383), "slave_parallel_threads on replicas (0: serial apply); the "
            "replica's replication threads are restarted", _parallel("slave_parallel_threads"),
            read_var("slave_parallel_threads"), replicas_only=True),
    Setting("parallel_mode", choice("optimistic", "conservative", "aggressive", "minimal", "none"),
            "slave_parallel_mode", _parallel("slave_parallel_mode"), read_var("slave_parallel_mode"),
            replicas_only=True),
    *semisync.settings(semisync.MARIADB),
]}}


def node_status(conn, role: str) -> dict[str, object]:
    """What ``lab status`` shows of a MariaDB node: positions and semi-sync (primary), threads (replica)."""
    if role == "primary":
        out: dict[str, object] = {"gtid_binlog_pos": scalar(conn, "SELECT @@GLOBAL.gtid_binlog_pos") or ""}
        st = global_status(conn, "Rpl_semi_sync_master_")
        out["semisync"] = st.get("rpl_semi_sync_master_status", "OFF")
        out["semisync_clients"] = int(st.get("rpl_semi_sync_master_clients", 0))
        return out
    st = slave_status(conn) or {}
    return {
        "io_running": st.get("Slave_IO_Running", "-"),
        "sql_running": st.get("Slave_SQL_Running", "-"),
        "gtid_slave_pos": scalar(conn, "SELECT @@GLOBAL.gtid_slave_pos") or "",
        "gtid_io_pos": st.get("Gtid_IO_Pos", ""),
        "seconds_behind_master": st.get("Seconds_Behind_Master"),
        "parallel_threads": int(scalar(conn, "SELECT @@GLOBAL.slave_parallel_threads")),
        "last_error": st.get("Last_IO_Error") or st.get("Last_SQL_Error") or "",
    }


def single_status(conn, role: str) -> dict[str, object]:
    return {"gtid_binlog_pos": scalar(conn, "SELECT @@GLOBAL.gtid_binlog_pos") or ""}

#: MariaDB's binary log group commit counters (commits / group commits is the group-commit ratio; with sync_binlog = 1
#: a group commit is one fsync of the binary log) and semi-sync's waits: the time transactions waited for a replica's
#: acknowledgement and how many waited (their quotient is the mean wait in a window), and the same for the network
#: round trip of each acknowledgement
COUNTERS = ("Binlog_commits", "Binlog_group_commits", "Binlog_bytes_written", "Rpl_semi_sync_master_tx_wait_time",
            "Rpl_semi_sync_master_tx_waits", "Rpl_semi_sync_master_net_wait_time", "Rpl_semi_sync_master_net_waits")


SYSTEM = System("mariadb", SETTINGS, node_status, replication.readiness, replication.reads, frozenset({"mariadb"}),
                no_restart=NO_RESTART, invariants=(inv.semisync_holds, inv.replica_threads, inv.nodes_answer),
                positions=positions.MARIADB,
                stall=Stall(("STOP SLAVE SQL_THREAD",), ("START SLAVE SQL_THREAD",),
                            "the replica's SQL thread stopped (what a long DDL on a serial applier does to what follows)"),
                restart_settings=RESTART_SETTINGS, variables=VARIABLES, counters=COUNTERS,
                read_settings=consistency.replica_settings(consistency.mariadb_token, positions.MARIADB))
