"""Where a node stands in its cluster's history, and waiting until it has applied a position: per system, for the
consistency audit that compares every node with the write node after a run (``benchlib.campaign.setup.RunSetup.audit``).

- MariaDB replication: the primary's ``gtid_binlog_pos`` against a replica's ``gtid_slave_pos``; ``MASTER_GTID_WAIT``.
- MySQL replication and Group Replication: ``gtid_executed`` on every node (equal sets: no errant transaction
  anywhere); ``WAIT_FOR_EXECUTED_GTID_SET``.
- Galera (MariaDB, PXC): ``wsrep_last_committed``, the cluster's seqno, waited for by polling.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from benchlib.systems import replication
from benchlib.systems.sql import global_status, scalar

__all__ = ["GALERA", "GTID", "MARIADB", "Positions"]


@dataclass(frozen=True)
class Positions:
    read: Callable[[Any, bool], str]  # (connection, is the write node) -> its position, as text
    wait: Callable[[Any, str, float], bool]  # (connection, position, timeout s) -> reached within the timeout
    what: str  # how a person names the position ("GTID position", "seqno")


def _replicated(names: replication.Names, replica_position: str | None, what: str) -> Positions:
    """A replication system's positions from its statements (``replication.Names``, as the lab waits for them):
    the write node's ``position``; a replica's own (``replica_position``: MariaDB's gtid_slave_pos) or the same."""

    def read(conn, writer: bool) -> str:
        text = scalar(conn, names.position if writer or replica_position is None else replica_position) or ""
        return "".join(text.split())  # MySQL breaks a long GTID set over lines

    def wait(conn, position: str, timeout: float) -> bool:
        return scalar(conn, names.wait, (position, timeout)) == 0

    return Positions(read, wait, what)


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


MARIADB = _replicated(replication.MARIADB, "SELECT @@GLOBAL.gtid_slave_pos", "GTID position")
GTID = _replicated(replication.MYSQL, None, "executed GTID set")
GALERA = Positions(_galera_read, _galera_wait, "seqno")
