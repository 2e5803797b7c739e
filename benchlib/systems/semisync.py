"""Semi-synchronous replication, switched at runtime: one procedure, MariaDB's or MySQL's names.

Semi-sync is switched on replicas first (their IO thread reconnects so the primary sees the
change), then on the primary, which is ready when enough replicas are its semi-sync clients.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Mapping

from benchlib.errors import ReplicationError
from benchlib.systems.settings import ClusterTarget, NodeRef, Setting, read_var, set_global
from benchlib.systems.sql import global_status, query
from benchlib.systems.values import choice, int_range, parse_bool

__all__ = ["MARIADB", "MYSQL", "Names", "enable", "fallen_back", "settings", "status_of"]


@dataclass(frozen=True)
class Names:
    source: str  # prefix of the primary's variables and status: rpl_semi_sync_master_ / rpl_semi_sync_source_
    replica_enabled: str  # the replica's switch
    restart_io: tuple[str, str]  # statements that reconnect a replica's IO thread
    replica_count: str | None = None  # the variable of how many acks the primary waits for (MySQL)

    def var(self, name: str) -> str:
        return f"{self.source}{name}"


MARIADB = Names("rpl_semi_sync_master_", "rpl_semi_sync_slave_enabled", ("STOP SLAVE IO_THREAD", "START SLAVE IO_THREAD"))
MYSQL = Names("rpl_semi_sync_source_", "rpl_semi_sync_replica_enabled",
              ("STOP REPLICA IO_THREAD", "START REPLICA IO_THREAD"), "rpl_semi_sync_source_wait_for_replica_count")


def wait_clients(target: ClusterTarget, names: Names, timeout: float) -> None:
    """Wait until the primary's semi-sync is ON with every replica as a client; replicas that attached before
    the primary's side was on are reconnected once."""
    want = len(target.replicas)
    conn = target.connect(target.primary.name)
    try:

        def clients() -> tuple[bool, str]:
            st = global_status(conn, names.source)
            n = int(st.get(names.var("clients"), 0))
            return n >= want and st.get(names.var("status")) == "ON", f"{n}/{want} semi-sync clients"

        deadline = time.monotonic() + timeout
        ok, why = clients()
        if not ok:
            _replica_side(target, names, target.replicas, True)
        while not ok:
            if time.monotonic() > deadline:
                raise ReplicationError(f"{target.cluster}: semi-sync clients attached not reached within "
                                       f"{timeout:.0f} s: {why}")
            time.sleep(0.02)
            ok, why = clients()
    finally:
        conn.close()


def enable(target: ClusterTarget, names: Names, timeout: float) -> None:
    """The primary's side on (once replicas are attached), then wait for its replicas as clients."""
    target.execute(target.primary.name, f"SET GLOBAL {names.var('enabled')} = ON")
    wait_clients(target, names, timeout)


def _replica_side(target: ClusterTarget, names: Names, replicas: list[NodeRef], on: bool) -> None:
    for r in replicas:
        target.execute(r.name, f"SET GLOBAL {names.replica_enabled} = {'ON' if on else 'OFF'}", *names.restart_io)


def _switch(names: Names):
    def apply(target: ClusterTarget, on: Any, nodes: list[NodeRef]) -> None:
        replicas = [n for n in nodes if n.role != "primary"] or target.replicas
        if on:
            _replica_side(target, names, replicas, True)
            enable(target, names, 60)
        else:
            target.execute(target.primary.name, f"SET GLOBAL {names.var('enabled')} = OFF")
            _replica_side(target, names, replicas, False)
    return apply


def settings(names: Names) -> list[Setting]:
    """The runtime settings of semi-sync under ``names``."""
    out = [
        Setting("semisync", parse_bool, "semi-synchronous replication on or off", replicas_only=True,
                apply=_switch(names)),
        Setting("semisync_wait_point", choice("AFTER_SYNC", "AFTER_COMMIT"), names.var("wait_point"),
                set_global(names.var("wait_point"), ("primary",)), read_var(names.var("wait_point")),
                replicas_only=True, only_with="semisync"),
        Setting("semisync_timeout_ms", int_range(1, 3_600_000), f"{names.var('timeout')} in ms",
                set_global(names.var("timeout"), ("primary",)), read_var(names.var("timeout")), replicas_only=True,
                only_with="semisync"),
    ]
    if names.replica_count:
        out.append(Setting("semisync_replica_count", int_range(1, 65535), f"{names.replica_count}: replica acks "
                           "a commit waits for", set_global(names.replica_count, ("primary",)),
                           read_var(names.replica_count), replicas_only=True, only_with="semisync"))
    return out


def fallen_back(conn) -> bool:
    """Whether this server is a semi-sync primary that is switched on but has fallen back to async (a commit waited
    longer than its timeout for an acknowledgement; it switches back on once a replica has caught up)."""
    for prefix in ("rpl_semi_sync_source_", "rpl_semi_sync_master_"):
        rows = query(conn, "SHOW GLOBAL VARIABLES LIKE %s", (f"{prefix}enabled",))
        if rows:
            if str(rows[0]["Value"]).upper() != "ON":
                return False
            return status_of(global_status(conn, prefix.capitalize())).get("status", 1.0) < 1
    return False


def status_of(status: Mapping[str, Any]) -> dict[str, float]:
    """Rpl_semi_sync_source_* (MySQL 8.0.26+ plugin) or Rpl_semi_sync_master_* (older, MariaDB) -> status,
    clients, yes_tx, no_tx, avg_wait_us, wait_sessions."""
    lower = {k.lower(): v for k, v in status.items()}
    prefix = next((p for p in ("rpl_semi_sync_source_", "rpl_semi_sync_master_") if f"{p}status" in lower), None)
    if prefix is None:
        return {}
    names = {"status": "status", "clients": "clients", "yes_tx": "yes_tx", "no_tx": "no_tx",
             "avg_wait_us": "tx_avg_wait_time", "wait_sessions": "wait_sessions"}
    out = {}
    for key, name in names.items():
        value = lower.get(prefix + name)
        if value is None:
            continue
        out[key] = 1.0 if str(value).upper() == "ON" else 0.0 if str(value).upper() == "OFF" else float(value)
    return out
