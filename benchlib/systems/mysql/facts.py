"""What MySQL replication is, as pure data the analysis may read (``benchlib.catalogue``): the entry point of its package."""

from __future__ import annotations

from benchlib.catalogue import SystemFacts

__all__ = ["FACTS"]

#: the variables that say how many workers apply replicated transactions (MySQL 8.0.26 renamed them)
APPLIER_VARIABLES = ("replica_parallel_workers", "slave_parallel_workers")

#: Jepsen's analysis of the server (a single node: it holds for every MySQL cluster's REPEATABLE READ)
PUBLISHED = ("Jepsen's analysis of MySQL 8.0.34 (2023) found that its REPEATABLE READ allows lost update, G-single "
             "(read skew) and G2-item (write skew)")

FACTS = SystemFacts(
    "mysql", "MySQL replication", "MySQL", "MySQL", "async", failover="promote",
    promise="as MariaDB: nothing fails over by itself (here the lab promotes); async can lose what the replicas had "
            "not received.",
    read_settings=("eventual", "causal"), roles=("primary", "replica"), status_probe="mysql",
    applier_variables=APPLIER_VARIABLES, color="#999999",
    published=PUBLISHED, published_kinds=("lost update", "G-single", "G2-item"))
