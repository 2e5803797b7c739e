"""What acts on a Percona XtraDB Cluster's servers: Galera's (``benchlib.systems.galera``), on MySQL's server."""

from __future__ import annotations

from benchlib.systems import failover, positions
from benchlib.systems.base import System
from benchlib.systems.galera.system import (INVARIANTS, READ_SETTINGS, RESTART_SETTINGS, SETTINGS, STALL, VARIABLES,
                                            node_status, readiness, reads)

__all__ = ["SYSTEM"]

SYSTEM = System("pxc", SETTINGS, node_status, readiness, reads, frozenset({"pxc"}), invariants=INVARIANTS,
                positions=positions.GALERA, locate=failover.galera_node, stall=STALL,
                restart_settings=RESTART_SETTINGS, variables=VARIABLES, read_settings=READ_SETTINGS)
