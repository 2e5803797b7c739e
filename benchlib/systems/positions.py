"""Where a node stands in its cluster's history, and waiting until it has applied a position: per system, for the
consistency audit that compares every node with the write node after a run (``benchlib.campaign.audit``).

- MariaDB replication: the primary's ``gtid_binlog_pos`` against a replica's ``gtid_slave_pos``; ``MASTER_GTID_WAIT``.
- MySQL replication and Group Replication: ``gtid_executed`` on every node (equal sets: no errant transaction
  anywhere); ``WAIT_FOR_EXECUTED_GTID_SET``.
- Galera (MariaDB, PXC): ``wsrep_last_committed``, the cluster's seqno, waited for by polling.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from benchlib.systems.sql import global_status, scalar

__all__ = ["GALERA", "GTID", "MARIADB", "Positions"]


@dataclass(frozen=True)
class Positions:
    read: Callable[[Any, bool], str]  # (connection, is the write node) -> its position, as text
    wait: Callable[[Any, str, float], bool]  # (connection, position, timeout s) -> reached within the timeout
    what: str  # how a person names the position ("GTID position", "seqno")


def _mariadb_read(conn, writer: bool) -> str:
    return scalar(conn, "SELECT @@GLOBAL.gtid_binlog_pos" if writer else "SELECT @@GLOBAL.gtid_slave_pos") or ""


def _mariadb_wait(conn, position: str, timeout: float) -> bool:
    return scalar(conn, "SELECT MASTER_GTID_WAIT(%s, %s)", (position, timeout)) == 0


def _gtid_read(conn, writer: bool) -> str:
    return "".join((scalar(conn, "SELECT @@GLOBAL.gtid_executed") or "").split())


def _gtid_wait(conn, position: str, timeout: float) -> bool:
    return scalar(conn, "SELECT WAIT_FOR_EXECUTED_GTID_SET(%s, %s)", (position, timeout)) == 0


def _seqno(conn) -> int:
    return int(global_status(conn, "wsrep_last_committed").get("wsrep_last_committed") or -1)


def _galera_read(conn, writer: bool) -> str:
    return str(_seqno(conn))


def _galera_wait(conn, position: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while _seqno(conn) < int(position):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


MARIADB = Positions(_mariadb_read, _mariadb_wait, "GTID position")
GTID = Positions(_gtid_read, _gtid_wait, "executed GTID set")
GALERA = Positions(_galera_read, _galera_wait, "seqno")
