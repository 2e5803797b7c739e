"""Which MySQL-family server a connection reaches, and the statements that follow from its version.

``detect(variables)`` reads the system and version from ``@@version``, ``@@version_comment`` and, where they exist,
``@@wsrep_on``, ``@@aurora_version`` and ``@@group_replication_group_name``; ``replica_status_sql``,
``binary_log_status_sql`` and ``seconds_behind_column`` give the names a server of that version knows. Pure
functions over values, tested on the documented shapes of servers that cannot run here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from benchlib import catalogue
from benchlib.errors import BenchlibError

__all__ = ["ProbeError", "ServerKind", "binary_log_status_sql", "detect", "replica_status_sql",
           "seconds_behind_column"]


class ProbeError(BenchlibError):
    """A server that cannot be probed as asked (missing privilege, unknown system)."""


@dataclass(frozen=True)
class ServerKind:
    system: str  # mariadb | mysql | percona | pxc | mariadb_galera | aurora
    version: tuple[int, int, int]
    galera: bool = False
    group_replication: bool = False

    @property
    def mysql_family(self) -> bool:
        """MySQL's own statements and performance_schema tables (MySQL, Percona Server, PXC, Aurora)."""
        return self.system in catalogue.MYSQL_FAMILY_KINDS


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
