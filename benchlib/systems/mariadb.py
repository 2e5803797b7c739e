"""MariaDB asynchronous and semi-synchronous replication (GTID), serial or parallel apply.

Settings: durability, the replica's parallel apply (threads and mode: the replica's
replication threads are stopped, the variable set, the threads started again) and
semi-sync (on/off, wait point, timeout). Semi-sync is switched on replicas first, then
on the primary, which is ready when every replica is its semi-sync client.
"""

from __future__ import annotations

import time
from typing import Any

from benchlib.errors import ReplicationError
from benchlib.systems.settings import COMMON, ClusterTarget, NodeRef, Setting, read_var, set_global
from benchlib.systems.sql import global_status, scalar, slave_status
from benchlib.systems.values import choice, int_range, parse_bool

__all__ = ["SETTINGS", "VARIABLES", "enable_semisync", "node_status", "set_semisync"]


#: recorded in each run's manifest
VARIABLES = ("slave_parallel_threads", "slave_parallel_mode", "rpl_semi_sync_master_enabled",
             "rpl_semi_sync_master_wait_point", "rpl_semi_sync_master_timeout")


def _parallel(var: str):
    def stmts(value: Any, role: str, variables: dict[str, str]) -> list[str]:
        from benchlib.systems.values import sql_literal

        return ["STOP SLAVE", f"SET GLOBAL {var} = {sql_literal(value)}", "START SLAVE"] if role == "replica" else []
    return stmts


def wait_semisync_clients(target: ClusterTarget, timeout: float) -> None:
    """Wait until the primary has every replica as a semi-sync client; replicas that attached before the
    primary's side was on are reconnected (their IO thread restarted) once."""
    want = len(target.replicas)
    conn = target.connect(target.primary.name)
    try:
        def clients() -> tuple[bool, str]:
            st = global_status(conn, "Rpl_semi_sync_master_")
            n = int(st.get("rpl_semi_sync_master_clients", 0))
            return n >= want and st.get("rpl_semi_sync_master_status") == "ON", f"{n}/{want} semi-sync clients"

        deadline = time.monotonic() + timeout
        ok, why = clients()
        if not ok:
            _replica_side(target, target.replicas, True)
        while not ok:
            if time.monotonic() > deadline:
                raise ReplicationError(f"{target.cluster}: semi-sync clients attached not reached within "
                                       f"{timeout:.0f} s: {why}")
            time.sleep(0.02)
            ok, why = clients()
    finally:
        conn.close()


def enable_semisync(target: ClusterTarget, timeout: float) -> None:
    """The primary's side on (once replicas are attached), then wait for every replica as a client."""
    target.execute(target.primary.name, "SET GLOBAL rpl_semi_sync_master_enabled = ON")
    wait_semisync_clients(target, timeout)


def _replica_side(target: ClusterTarget, replicas: list[NodeRef], on: bool) -> None:
    """The replicas' side on or off; their IO thread reconnects so that the primary sees the change."""
    for r in replicas:
        target.execute(r.name, f"SET GLOBAL rpl_semi_sync_slave_enabled = {'ON' if on else 'OFF'}",
                       "STOP SLAVE IO_THREAD", "START SLAVE IO_THREAD")


def set_semisync(target: ClusterTarget, on: Any, nodes: list[NodeRef]) -> None:
    replicas = [n for n in nodes if n.role != "primary"] or target.replicas
    if on:
        _replica_side(target, replicas, True)
        enable_semisync(target, 60)
    else:
        target.execute(target.primary.name, "SET GLOBAL rpl_semi_sync_master_enabled = OFF")
        _replica_side(target, replicas, False)


SETTINGS: dict[str, Setting] = {**COMMON, **{s.name: s for s in [
    Setting("parallel_threads", int_range(0, 16383), "slave_parallel_threads on replicas (0: serial apply); the "
            "replica's replication threads are restarted", _parallel("slave_parallel_threads"),
            read_var("slave_parallel_threads"), replicas_only=True),
    Setting("parallel_mode", choice("optimistic", "conservative", "aggressive", "minimal", "none"),
            "slave_parallel_mode", _parallel("slave_parallel_mode"), read_var("slave_parallel_mode"),
            replicas_only=True),
    Setting("semisync", parse_bool, "semi-synchronous replication on or off", replicas_only=True,
            apply=set_semisync),
    Setting("semisync_wait_point", choice("AFTER_SYNC", "AFTER_COMMIT"), "rpl_semi_sync_master_wait_point",
            set_global("rpl_semi_sync_master_wait_point", ("primary",)), read_var("rpl_semi_sync_master_wait_point"),
            replicas_only=True),
    Setting("semisync_timeout_ms", int_range(1, 3_600_000), "rpl_semi_sync_master_timeout in ms",
            set_global("rpl_semi_sync_master_timeout", ("primary",)), read_var("rpl_semi_sync_master_timeout"),
            replicas_only=True),
]}}


def node_status(conn, role: str) -> dict[str, Any]:
    """What ``lab status`` shows of a MariaDB node: positions and semi-sync (primary), threads (replica)."""
    if role == "primary":
        out: dict[str, Any] = {"gtid_binlog_pos": scalar(conn, "SELECT @@GLOBAL.gtid_binlog_pos") or ""}
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


def single_status(conn, role: str) -> dict[str, Any]:
    return {"gtid_binlog_pos": scalar(conn, "SELECT @@GLOBAL.gtid_binlog_pos") or ""}
