"""What Amazon Aurora MySQL is, as pure data the analysis may read (``benchlib.catalogue``): the entry point of its package."""

from __future__ import annotations

from benchlib.catalogue import SystemFacts, TopologyFacts

__all__ = ["FACTS"]

FACTS = SystemFacts(
    "aurora", "Amazon Aurora MySQL", "Aurora MySQL", "Aurora", "aurora", roles=("writer", "reader"),
    status_probe="aurora", local=False,
    topologies=(TopologyFacts("aurora", local=False, needs_binlog=False, color="#56B4E9"),))  # sky blue
