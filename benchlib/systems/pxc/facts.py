"""What Percona XtraDB Cluster is, as pure data the analysis may read (``benchlib.catalogue``): the entry point of its package."""

from __future__ import annotations

from benchlib.catalogue import SystemFacts
from benchlib.systems.galera import facts as galera

__all__ = ["FACTS"]

FACTS = SystemFacts(
    "pxc", "Percona XtraDB Cluster", "Percona XtraDB Cluster", "MySQL", "galera", multi_writer=True, failover="any",
    promise=galera.PROMISE, read_settings=galera.READ_SETTINGS, read_settings_described=galera.READ_SETTINGS_DESCRIBED,
    roles=("writer", "node"), status_probe="pxc", local=False, spaced_ids="cluster size",
    applier_variables=galera.APPLIER_VARIABLES,
    color="#CC79A7")  # reddish purple
