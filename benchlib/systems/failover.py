"""How each system fails over, and which node takes the writes now: what a client that must never stop writing
(the ledger writer of a fault run) asks after a fault.

- Group Replication, single primary: the group elects a new primary once it has expelled the old one (about 5 s of
  suspicion, then ``group_replication_member_expel_timeout``); any ONLINE member names it.
- Galera: every node of the primary component takes writes; the survivors stay primary while they are a majority.
- Async and semi-sync (MariaDB, MySQL): nothing fails over by itself; a lab may promote a replica (``promote``),
  and then the new primary is the one it promoted.

``benchlib.systems.failover_of(system)`` gives a system's ``Failover``: how it fails over and its promise from the
catalogue, and its ``locate`` from its ``System`` record. ``locate(connect, nodes, current)`` answers from the nodes themselves (None: none takes writes now); ``connect``
is a node name -> connection function with a short timeout, ``nodes`` the cluster's nodes (name, host, port).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from benchlib.systems.sql import global_status, query, scalar

__all__ = ["Failover", "galera_node", "gr_primary", "unchanged"]

Locate = Callable[[Callable[[str], Any], Sequence[Any], str], "str | None"]


def _answering(connect, nodes, current, ask) -> str | None:
    """``ask(conn, node)`` on each node, the current one first, until one gives an answer that is not None."""
    order = sorted(nodes, key=lambda n: n.name != current)
    for n in order:
        try:
            with connect(n.name) as conn:
                found = ask(conn, n)
        except Exception:  # noqa: BLE001 - a node that is down, frozen or cut off says nothing
            continue
        if found is not None:
            return found
    return None


def gr_primary(connect, nodes, current) -> str | None:
    by_address = {(n.host, int(n.port)): n.name for n in nodes}

    def ask(conn, node) -> str | None:
        rows = query(conn, "SELECT MEMBER_ID, MEMBER_HOST, MEMBER_PORT, MEMBER_STATE, MEMBER_ROLE "
                           "FROM performance_schema.replication_group_members")
        me = scalar(conn, "SELECT @@server_uuid")
        if not any(r["MEMBER_ID"] == me and r["MEMBER_STATE"] == "ONLINE" for r in rows):
            return None  # an expelled or recovering member's view is not the group's
        primary = [r for r in rows if r["MEMBER_ROLE"] == "PRIMARY" and r["MEMBER_STATE"] == "ONLINE"]
        if len(primary) > 1:  # multi-primary: every ONLINE member takes writes
            return node.name
        if not primary:
            return None
        return by_address.get((primary[0]["MEMBER_HOST"], int(primary[0]["MEMBER_PORT"])))

    return _answering(connect, nodes, current, ask)


def galera_node(connect, nodes, current) -> str | None:
    def ask(conn, node) -> str | None:
        st = global_status(conn, "wsrep_")
        ok = st.get("wsrep_ready") == "ON" and st.get("wsrep_cluster_status") == "Primary" \
            and st.get("wsrep_local_state_comment") == "Synced"
        return node.name if ok else None

    return _answering(connect, nodes, current, ask)


def unchanged(connect, nodes, current) -> str | None:
    return current


@dataclass(frozen=True)
class Failover:
    how: str  # elect | any | promote (benchlib.catalogue.SystemFacts.failover)
    promise: str  # what the system promises when the node taking writes fails, in words (the catalogue's)
    locate: Locate

    @property
    def automatic(self) -> bool:
        return self.how != "promote"
