"""What to query on each MySQL-family system, and how to read the answers (``../shared/notes/probes.md``).

Pure functions over result rows, so that systems that cannot run here (MySQL 8, Group Replication,
Percona XtraDB Cluster, Aurora) are tested against rows recorded in the documented shapes:

- ``detect(variables)``: which system and version a server is, from ``@@version``, ``@@version_comment``,
  ``@@wsrep_on`` / ``@@wsrep_provider`` and ``@@aurora_version``; the statements then follow the version
  (``replica_status_sql``, ``binary_log_status_sql``, the Seconds_Behind column).
- ``mysql8_lag_us``: microsecond apply lag from performance_schema's applier and connection tables (the
  logic of cashapp/blip), ``gtid_count`` for GTID_SUBTRACT backlogs (MySQL 5.7 Group Replication and 8.x),
  ``group_member_stats`` and ``group_flow_control``, ``galera_status`` (MariaDB and PXC), ``semisync`` for
  both naming schemes, ``aurora_replicas`` from ``information_schema.replica_host_status``.
- ``privilege_message``: a missing privilege becomes one message naming the grant to add.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from benchlib.errors import BenchlibError


class ProbeError(BenchlibError):
    """A server that cannot be probed as asked (missing privilege, unknown system)."""


# ---- which system ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ServerKind:
    system: str  # mariadb | mysql | percona | pxc | mariadb_galera | aurora
    version: tuple[int, int, int]
    galera: bool = False
    group_replication: bool = False

    @property
    def mysql_family(self) -> bool:
        """MySQL's own statements and performance_schema tables (MySQL, Percona Server, PXC, Aurora)."""
        return self.system in ("mysql", "percona", "pxc", "aurora")


def _version(text: str) -> tuple[int, int, int]:
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", text or "")
    if not m:
        raise ProbeError(f"cannot read a server version from {text!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def detect(variables: Mapping[str, Any]) -> ServerKind:
    """The system behind a connection, from ``SELECT @@version, @@version_comment`` and, where they exist,
    ``@@wsrep_on``, ``@@aurora_version`` and ``@@group_replication_group_name`` (missing keys: absent)."""
    version = str(variables.get("version", ""))
    comment = str(variables.get("version_comment", "")).lower()
    v = _version(version)
    wsrep = str(variables.get("wsrep_on", "")).upper() in ("ON", "1")
    gr = bool(variables.get("group_replication_group_name"))
    if variables.get("aurora_version"):
        return ServerKind("aurora", v)
    if "mariadb" in version.lower() or "mariadb" in comment:
        return ServerKind("mariadb_galera" if wsrep else "mariadb", v, galera=wsrep)
    if wsrep or "xtradb cluster" in comment:
        return ServerKind("pxc", v, galera=True)
    if "percona" in comment:
        return ServerKind("percona", v, group_replication=gr)
    return ServerKind("mysql", v, group_replication=gr)


def replica_status_sql(k: ServerKind) -> str:
    """SHOW REPLICA STATUS where the server has it (MySQL 8.0.22+, MariaDB 10.5.1+), else SHOW SLAVE STATUS
    (removed in MySQL 8.4)."""
    if k.system.startswith("mariadb"):
        return "SHOW REPLICA STATUS" if k.version >= (10, 5, 1) else "SHOW SLAVE STATUS"
    return "SHOW REPLICA STATUS" if k.version >= (8, 0, 22) else "SHOW SLAVE STATUS"


def seconds_behind_column(k: ServerKind) -> str:
    if k.mysql_family and k.version >= (8, 0, 22):
        return "Seconds_Behind_Source"
    return "Seconds_Behind_Master"


def binary_log_status_sql(k: ServerKind) -> str:
    if k.mysql_family and k.version >= (8, 2, 0):
        return "SHOW BINARY LOG STATUS"
    return "SHOW MASTER STATUS"


# ---- MySQL 8 performance_schema apply lag ---------------------------------------------------------------------

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
GROUP_REPLICATION_CHANNEL = "group_replication_applier"


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


# ---- Group Replication ----------------------------------------------------------------------------------------

GROUP_MEMBER_STATS_SQL = """
SELECT m.MEMBER_HOST, m.MEMBER_PORT, m.MEMBER_STATE, m.MEMBER_ROLE, s.COUNT_TRANSACTIONS_IN_QUEUE,
       s.COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE, s.COUNT_TRANSACTIONS_CHECKED,
       s.COUNT_TRANSACTIONS_REMOTE_APPLIED, s.COUNT_TRANSACTIONS_LOCAL_PROPOSED, s.COUNT_CONFLICTS_DETECTED
FROM performance_schema.replication_group_member_stats s
JOIN performance_schema.replication_group_members m USING (MEMBER_ID)
WHERE s.MEMBER_ID = @@server_uuid
"""
GROUP_FLOW_CONTROL_VARIABLES = ("group_replication_flow_control_mode",
                                "group_replication_flow_control_certifier_threshold",
                                "group_replication_flow_control_applier_threshold",
                                "group_replication_flow_control_period",
                                "group_replication_flow_control_hold_percent",
                                "group_replication_flow_control_release_percent",
                                "group_replication_flow_control_min_quota",
                                "group_replication_flow_control_max_quota")


def group_member_stats(row: Mapping[str, Any]) -> dict[str, float]:
    """One member's own row (query every member for its own: remote rows refresh once per period)."""
    out = {"certifier_queue": float(row["COUNT_TRANSACTIONS_IN_QUEUE"]),
           "applier_queue": float(row.get("COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE") or 0),
           "checked": float(row["COUNT_TRANSACTIONS_CHECKED"]),
           "remote_applied": float(row.get("COUNT_TRANSACTIONS_REMOTE_APPLIED") or 0),
           "local_proposed": float(row.get("COUNT_TRANSACTIONS_LOCAL_PROPOSED") or 0),
           "conflicts": float(row["COUNT_CONFLICTS_DETECTED"])}
    out["backlog"] = out["certifier_queue"] + out["applier_queue"]
    return out


GROUP_THROTTLE_SQL = "SHOW GLOBAL STATUS LIKE 'Gr\\_flow\\_control\\_throttle\\_%'"


def group_throttle(rows) -> dict[str, float]:
    """Flow-control throttling of one member, from the stats component's status variables: time its
    transactions spent throttled (ns, a counter), how many were throttled, how many are now. Empty without
    the component."""
    st = {r["Variable_name"].lower(): r["Value"] for r in rows}
    if "gr_flow_control_throttle_time_sum" not in st:
        return {}
    return {"throttle_time_ns": float(st["gr_flow_control_throttle_time_sum"] or 0) * 1000,
            "throttle_count": float(st.get("gr_flow_control_throttle_count") or 0),
            "throttle_active": float(st.get("gr_flow_control_throttle_active_count") or 0)}


def group_flow_control(variables: Mapping[str, Any]) -> dict[str, Any]:
    """The flow-control configuration, short names: mode, certifier_threshold, applier_threshold, ..."""
    out: dict[str, Any] = {}
    for name in GROUP_FLOW_CONTROL_VARIABLES:
        if name in variables:
            key = name.removeprefix("group_replication_flow_control_")
            value = variables[name]
            out[key] = value if key == "mode" else int(value)
    return out


# ---- Galera (MariaDB Galera Cluster, Percona XtraDB Cluster) --------------------------------------------------

GALERA_STATUS = ("wsrep_local_recv_queue", "wsrep_local_send_queue", "wsrep_last_committed", "wsrep_last_applied",
                 "wsrep_flow_control_paused_ns", "wsrep_flow_control_sent", "wsrep_flow_control_recv",
                 "wsrep_flow_control_active", "wsrep_flow_control_status", "wsrep_local_cert_failures",
                 "wsrep_local_bf_aborts", "wsrep_cluster_size", "wsrep_local_state_comment")


def galera_status(status: Mapping[str, Any]) -> dict[str, Any]:
    """The numbers of SHOW GLOBAL STATUS LIKE 'wsrep%' benchlib samples; PXC's extras where present."""
    out: dict[str, Any] = {}
    for name in GALERA_STATUS:
        if name not in status:
            continue
        value = status[name]
        if name in ("wsrep_local_state_comment", "wsrep_flow_control_status", "wsrep_flow_control_active"):
            out[name] = str(value)
        else:
            out[name] = float(value)
    return out


def provider_options(text: str) -> dict[str, str]:
    """``wsrep_provider_options`` ("gcs.fc_limit = 16; gcs.fc_factor = 1.0; ...") as a dict."""
    out = {}
    for item in (text or "").split(";"):
        key, sep, value = item.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


# ---- semi-sync, both naming schemes ---------------------------------------------------------------------------

def semisync(status: Mapping[str, Any]) -> dict[str, float]:
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


# ---- Aurora ---------------------------------------------------------------------------------------------------

AURORA_REPLICAS_SQL = ("SELECT SERVER_ID, SESSION_ID, REPLICA_LAG_IN_MILLISECONDS, LAST_UPDATE_TIMESTAMP, CPU "
                       "FROM information_schema.replica_host_status WHERE SESSION_ID = 'MASTER_SESSION_ID' "
                       "OR LAST_UPDATE_TIMESTAMP > NOW() - INTERVAL 60 SECOND")


def aurora_replicas(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Per reader instance (the writer's own row left out): lag in ms and CPU %."""
    out = {}
    for r in rows:
        if r["SESSION_ID"] == "MASTER_SESSION_ID":
            continue
        out[str(r["SERVER_ID"])] = {"lag_ms": float(r["REPLICA_LAG_IN_MILLISECONDS"]), "cpu_pct": float(r["CPU"])}
    return out


# ---- privileges ---------------------------------------------------------------------------------------------

#: what each probe needs, as the grant to add
GRANTS = {
    "replica_status": "GRANT REPLICATION CLIENT ON *.* TO {user}   (MariaDB 10.5+: GRANT SLAVE MONITOR ON *.* TO {user})",
    "performance_schema": "GRANT SELECT ON performance_schema.{table} TO {user}",
    "heartbeat_read": "GRANT SELECT ON {schema}.heartbeat TO {user}",
    "heartbeat_write": "GRANT INSERT, UPDATE ON {schema}.heartbeat TO {writer}",
    "schemas": "GRANT ALL PRIVILEGES ON benchlib.* TO {user}; GRANT ALL PRIVILEGES ON sbtest.* TO {user}",
    "set_global": "GRANT SYSTEM_VARIABLES_ADMIN ON *.* TO {user}   (MariaDB, MySQL 5.7: SUPER)",
}
ACCESS_DENIED = {1044, 1142, 1143, 1227, 1370, 3530}  # DB, table, column, specific privilege, routine, role
WRONG_PASSWORD = 1045


def privilege_message(errno: int, server_message: str, *, node: str, probe: str, user: str, **names: str) -> str:
    """One message for a failed probe query: the grant to add for access denied, the password variable to
    check for a refused login; otherwise the server's message."""
    if errno == WRONG_PASSWORD:
        return (f"{node}: the server refused the login of {user!r} (wrong password or host): check the password "
                f"in the environment variable the lab spec names for {node}")
    if errno in ACCESS_DENIED and probe in GRANTS:
        grant = GRANTS[probe].format(user=user, writer=names.get("writer", user), table=names.get("table", "*"),
                                     schema=names.get("schema", "benchlib"))
        return f"{node}: {user!r} lacks a privilege the {probe} probe needs ({server_message}); add it: {grant}"
    return f"{node}: {probe} failed: {server_message}"
