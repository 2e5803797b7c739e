"""What MySQL Group Replication is, as pure data the analysis may read (``benchlib.catalogue``): the entry point of its package."""

from __future__ import annotations

from benchlib.catalogue import SystemFacts, TopologyFacts, Wiring
from benchlib.systems.mysql.facts import APPLIER_VARIABLES, PUBLISHED

__all__ = ["CONSISTENCY", "FACTS", "TOPOLOGY"]

#: group_replication_consistency's levels, what each does to a session, EVENTUAL (the default) first
CONSISTENCY = {
    "EVENTUAL": "reads what the member has applied (the default)",
    "BEFORE_ON_PRIMARY_FAILOVER": "as EVENTUAL, except on a new primary until it applied its backlog",
    "BEFORE": "each transaction waits until the member applied every earlier transaction of the group",
    "AFTER": "a read-write transaction's commit returns once every member applied it",
    "BEFORE_AND_AFTER": "BEFORE and AFTER together",
}
#: a group: node 1 bootstraps it, the others join one after another
TOPOLOGY = TopologyFacts("group_replication", multi_writer=True, color="#D55E00",  # vermillion
                         roles=("primary", "secondary"), ports=(("mysql", 0), ("group replication", 1)),
                         wiring=Wiring(("first", "group_first"), ("first", "group_joiners")))

FACTS = SystemFacts(
    "group_replication", "MySQL Group Replication", "MySQL", "MySQL", "group_replication", multi_writer=True,
    failover="elect",
    promise="the group elects a new primary once it has expelled the failed one (5 s of suspicion, then "
            "group_replication_member_expel_timeout); an acknowledged transaction was certified by a majority, so "
            "none is lost.",
    read_settings=tuple(CONSISTENCY), roles=("primary", "secondary"), status_probe="group_replication",
    modes=("single-primary", "multi-primary"), spaced_ids="7 when multi-primary", applier_variables=APPLIER_VARIABLES,
    topologies=(TOPOLOGY,), published=PUBLISHED.replace("(2023)", "(2023), the server every member runs,"),
    published_kinds=("lost update", "G-single", "G2-item"))
