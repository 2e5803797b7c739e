"""Settings a campaign sweeps on a remote cluster: which exist per system, and the SQL that applies them.

A setting is applied with SET GLOBAL on the nodes it concerns, read back, and recorded in
every run's manifest. Some need more than SET GLOBAL:

- replica apply threads take effect when the applier restarts: the replica's SQL thread
  is stopped, the variable set, the thread started again (no server restart);
- settings that only take effect at server start (``RESTART_SETTINGS``) are refused
  unless the remote lab spec says ``allow_restart = true``; even then only MySQL 8.0.17+
  can do it from SQL (``SET PERSIST_ONLY`` then ``RESTART``, which needs a supervisor such
  as systemd or mysqld_safe to bring the server back). MariaDB has no RESTART statement:
  those settings are refused there with the way to set them by hand.

Aurora's parameters live in DB cluster parameter groups, outside SQL: no setting is swept there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from benchlib.errors import SettingError
from benchlib.lab.spec import DURABILITY
from benchlib.lab.topology import _bool, _choice, _float, _int

Parser = Callable[[Any], Any]

COMMON: dict[str, tuple[Parser, str]] = {
    "durability": (_choice("durable", "relaxed"), "sync_binlog and innodb_flush_log_at_trx_commit together"),
    "sync_binlog": (_int(0, 1_000_000), "binary log fsync every N commits (0: leave it to the OS)"),
    "innodb_flush_log_at_trx_commit": (_int(0, 2), "redo log flush policy (1: fsync at every commit)"),
}
REPLICA: dict[str, tuple[Parser, str]] = {
    "parallel_threads": (_int(0, 1024), "replica apply threads (MariaDB slave_parallel_threads, MySQL "
                                        "replica_parallel_workers); the SQL thread is restarted"),
}
GALERA: dict[str, tuple[Parser, str]] = {
    "fc_limit": (_int(1, 2_147_483_647), "gcs.fc_limit: receive queue length that triggers flow control"),
    "fc_factor": (_float(0.0, 1.0), "gcs.fc_factor: fraction of fc_limit at which flow control is released"),
    "applier_threads": (_int(1, 512), "wsrep_slave_threads (PXC 8.0.26+: wsrep_applier_threads)"),
}
GROUP: dict[str, tuple[Parser, str]] = {
    "gr_flow_control_mode": (_choice("QUOTA", "DISABLED"), "group_replication_flow_control_mode"),
    "gr_applier_threshold": (_int(0, 2_147_483_647), "group_replication_flow_control_applier_threshold"),
    "gr_certifier_threshold": (_int(0, 2_147_483_647), "group_replication_flow_control_certifier_threshold"),
    "gr_flow_control_period": (_int(1, 60), "group_replication_flow_control_period (s)"),
}
#: settings read only at server start: name -> (parser, help, variable)
RESTART_SETTINGS: dict[str, tuple[Parser, str, str]] = {
    "performance_schema": (_bool, "performance_schema on or off (read at server start)", "performance_schema"),
}

SYSTEM_SETTINGS: dict[str, dict[str, tuple[Parser, str]]] = {
    "mariadb": {**COMMON, **REPLICA},
    "mysql": {**COMMON, **REPLICA},
    "galera": {**COMMON, **GALERA},
    "pxc": {**COMMON, **GALERA},
    "group_replication": {**COMMON, **GROUP},
    "aurora": {},
}


@dataclass(frozen=True)
class RemoteRules:
    """The settings of one remote cluster: parsed like a local topology's (``benchlib.campaign.spec.plan``)."""

    system: str
    allow_restart: bool = False

    @property
    def name(self) -> str:
        return self.system

    @property
    def SETTINGS(self) -> dict[str, tuple[Parser, str]]:  # noqa: N802 - the local topologies' attribute
        restart = {k: (p, h) for k, (p, h, _) in RESTART_SETTINGS.items()} if self.system != "aurora" else {}
        return {**SYSTEM_SETTINGS[self.system], **restart}

    def parse_setting(self, key: str, value: Any) -> Any:
        rules = self.SETTINGS
        if key not in rules:
            where = ("Aurora's parameters are set in its DB cluster parameter group, not from SQL"
                     if self.system == "aurora" else f"settings of {self.system}: {', '.join(sorted(rules))}")
            raise SettingError(f"{key!r} is not a setting benchlib can sweep on {self.system} clusters", hint=where)
        parser, help_ = rules[key]
        try:
            value = parser(value)
        except ValueError as exc:
            raise SettingError(f"{key}={value!r}: {exc}", hint=f"{key}: {help_}") from None
        if key in RESTART_SETTINGS:
            self.check_restart(key)
        return value

    def check_restart(self, key: str) -> None:
        if not self.allow_restart:
            raise SettingError(f"{key} takes effect only when the server restarts, and this remote lab does not "
                               "allow restarts", hint="set allow_restart = true in the remote lab spec (MySQL 8.0.17+ "
                                                      "restarts from SQL), or set it on the servers by hand and drop "
                                                      "it from the campaign's matrix")
        if self.system in ("mariadb", "galera"):
            raise SettingError(f"{key} needs a server restart, which benchlib cannot do on a remote MariaDB server "
                               "(MariaDB has no RESTART statement)",
                               hint="set it in the servers' configuration, restart them by hand, and drop it from "
                                    "the campaign's matrix")


def statements(system: str, key: str, value: Any, *, role: str, variables: dict[str, str]) -> list[str]:
    """The statements that apply one parsed setting on one node of ``role``; ``variables`` holds the node's
    current global variables (lower-case names) to pick the name its version uses. [] : not for this node."""
    from benchlib.lab.topology import sql_literal

    def set_global(var: str, v: Any) -> str:
        return f"SET GLOBAL {var} = {sql_literal(v)}"

    if key == "durability":
        return [set_global(k, v) for k, v in DURABILITY[value].items()]
    if key in ("sync_binlog", "innodb_flush_log_at_trx_commit"):
        return [set_global(key, value)]
    if key == "parallel_threads":
        if role != "replica":
            return []
        if system == "mariadb":
            return ["STOP SLAVE SQL_THREAD", set_global("slave_parallel_threads", value), "START SLAVE SQL_THREAD"]
        var = "replica_parallel_workers" if "replica_parallel_workers" in variables else "slave_parallel_workers"
        stop, start = (("STOP REPLICA SQL_THREAD", "START REPLICA SQL_THREAD") if "replica_parallel_workers" in variables
                       else ("STOP SLAVE SQL_THREAD", "START SLAVE SQL_THREAD"))
        return [stop, set_global(var, value), start]
    if key in ("fc_limit", "fc_factor"):
        return [set_global("wsrep_provider_options", f"gcs.{key}={value}")]
    if key == "applier_threads":
        var = "wsrep_applier_threads" if "wsrep_applier_threads" in variables else "wsrep_slave_threads"
        return [set_global(var, value)]
    if key.startswith("gr_"):
        var = "group_replication_" + {"gr_flow_control_mode": "flow_control_mode",
                                      "gr_applier_threshold": "flow_control_applier_threshold",
                                      "gr_certifier_threshold": "flow_control_certifier_threshold",
                                      "gr_flow_control_period": "flow_control_period"}[key]
        return [set_global(var, value)]
    if key in RESTART_SETTINGS:
        return [f"SET PERSIST_ONLY {RESTART_SETTINGS[key][2]} = {sql_literal(value)}", "RESTART"]
    raise SettingError(f"{key!r} has no applier on {system}")  # pragma: no cover - guarded by parse_setting


def read_back(key: str, value: Any) -> dict[str, Any]:
    """Variables to read back after applying (name -> expected value); {} when not checkable by SELECT."""
    if key == "durability":
        return dict(DURABILITY[value])
    if key in ("sync_binlog", "innodb_flush_log_at_trx_commit"):
        return {key: value}
    return {}
