"""What MariaDB Galera Cluster is, as pure data the analysis may read (``benchlib.catalogue``): the entry point of its package."""

from __future__ import annotations

from benchlib.catalogue import SystemFacts, TopologyFacts, Wiring

__all__ = ["APPLIER_VARIABLES", "FACTS", "PROMISE", "READ_SETTINGS", "READ_SETTINGS_DESCRIBED", "TOPOLOGY"]

#: the read-consistency settings of a Galera node: ``wsrep_sync_wait``'s sixteen bitmasks
READ_SETTINGS = tuple(f"wsrep_sync_wait={bits}" for bits in range(16))
READ_SETTINGS_DESCRIBED = ("wsrep_sync_wait=0 to wsrep_sync_wait=15 (a bitmask: 1 reads, 2 UPDATE and DELETE, 4 INSERT "
                           "and REPLACE, 8 SHOW)")
APPLIER_VARIABLES = ("wsrep_applier_threads", "wsrep_slave_threads")
PROMISE = ("every node of the primary component takes writes; a commit returns once the cluster has ordered it, so the "
           "survivors hold every acknowledged write; they go on once the view has dropped the failed node.")
#: a Galera cluster: every node takes writes; node 1 bootstraps the cluster, the others join it by state transfer
TOPOLOGY = TopologyFacts("galera", multi_writer=True, binlog=False, needs_binlog=False, color="#009E73",  # bluish green
                         roles=("galera", "galera"), ports=(("mysql", 0), ("galera", 1), ("IST", 2), ("SST", 3)),
                         wiring=Wiring(("first", "galera_nodes"), ("joiners", "galera_nodes"), ("--wsrep-new-cluster",),
                                       others_make_accounts=False))

FACTS = SystemFacts(
    "galera", "MariaDB Galera Cluster", "MariaDB", "MariaDB", "galera", multi_writer=True, failover="any",
    promise=PROMISE, read_settings=READ_SETTINGS, read_settings_described=READ_SETTINGS_DESCRIBED,
    roles=("writer", "node"), status_probe="galera", spaced_ids="cluster size", applier_variables=APPLIER_VARIABLES,
    topologies=(TOPOLOGY,), snapshot_isolation=True,
    published=("Jepsen's analysis of MariaDB Galera Cluster 12.1.2 (2026) found lost update and stale reads with no "
               "fault at all (and lost committed transactions after coordinated crashes)"),
    published_kinds=("lost update", "G-single-realtime"))
