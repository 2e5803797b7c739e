"""What the throwaway system is: its title, server, roles, read settings, colour and the topology it brings."""

from __future__ import annotations

from benchlib.catalogue import SystemFacts, TopologyFacts

__all__ = ["FACTS"]

FACTS = SystemFacts(
    "tiny", "Tiny replication", "MariaDB", "MariaDB", "tiny", read_settings=("eventual",), roles=("leader", "follower"), status_probe="mariadb", local=False, color="#AA3377",
    topologies=(TopologyFacts("tiny", local=False, commit_waits=False, color="#AA3377"),))
