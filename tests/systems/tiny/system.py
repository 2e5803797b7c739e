"""What acts on the throwaway system's servers: MariaDB's settings, status and readiness, under its own name."""

from __future__ import annotations

from benchlib.systems import consistency, replication
from benchlib.systems.base import System
from benchlib.systems.mariadb import system as mariadb

__all__ = ["SYSTEM"]

SYSTEM = System("tiny", mariadb.SETTINGS, mariadb.node_status, replication.readiness, replication.reads,
                frozenset({"mariadb"}), read_settings={"eventual": consistency.EVENTUAL})
