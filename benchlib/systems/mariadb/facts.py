"""What MariaDB replication is, as pure data the analysis may read (``benchlib.catalogue``): the entry point of its package."""

from __future__ import annotations

from benchlib.catalogue import SystemFacts

__all__ = ["FACTS"]

FACTS = SystemFacts(
    "mariadb", "MariaDB replication", "MariaDB", "MariaDB", "async", failover="promote",
    promise="nothing fails over by itself (here the lab promotes the most advanced replica, as orchestrator would); "
            "async acknowledges before any replica has the write, so it can lose what the replicas had not received; "
            "semi-sync acknowledges once a replica received it (AFTER_SYNC before the commit is visible, AFTER_COMMIT "
            "after), so a promotion that first applies the relay logs loses none, unless the primary had fallen back "
            "to async.",
    read_settings=("eventual", "causal"), roles=("primary", "replica"), status_probe="mariadb",
    applier_variables=("slave_parallel_threads", "replica_parallel_threads"), snapshot_isolation=True)
