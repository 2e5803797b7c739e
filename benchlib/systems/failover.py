"""How each system fails over, and which node takes the writes now: what a client that must never stop writing
(the ledger writer of a fault run) asks after a fault.

- Group Replication, single primary: the group elects a new primary once it has expelled the old one (about 5 s of
  suspicion, then ``group_replication_member_expel_timeout``); any ONLINE member names it.
- Galera: every node of the primary component takes writes; the survivors stay primary while they are a majority.
- Async and semi-sync (MariaDB, MySQL): nothing fails over by itself; a lab may promote a replica (``promote``),
  and then the new primary is the one it promoted.

``locate(connect, nodes, current)`` answers from the nodes themselves (None: none takes writes now); ``connect``
is a node name -> connection function with a short timeout, ``nodes`` the cluster's nodes (name, host, port).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from benchlib.systems.sql import global_status, query, scalar

__all__ = ["FAILOVER", "Failover", "of"]

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


def _gr_primary(connect, nodes, current) -> str | None:
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


def _galera_node(connect, nodes, current) -> str | None:
    def ask(conn, node) -> str | None:
        st = global_status(conn, "wsrep_")
        ok = st.get("wsrep_ready") == "ON" and st.get("wsrep_cluster_status") == "Primary" \
            and st.get("wsrep_local_state_comment") == "Synced"
        return node.name if ok else None

    return _answering(connect, nodes, current, ask)


def _unchanged(connect, nodes, current) -> str | None:
    return current


@dataclass(frozen=True)
class Failover:
    how: str  # elect | any | promote
    promise: str  # what the system promises when the node taking writes fails, in words (README, report)
    locate: Locate

    @property
    def automatic(self) -> bool:
        return self.how != "promote"


GROUP = Failover("elect", "the group elects a new primary once it has expelled the failed one; a transaction the "
                          "old primary acknowledged was certified by a majority, so none is lost", _gr_primary)
GALERA = Failover("any", "every node of the primary component takes writes; a commit returns after the cluster "
                         "ordered it, so a survivor has every acknowledged write", _galera_node)
REPLICATION = Failover("promote", "nothing fails over by itself: an operator or a tool (orchestrator, MHA, "
                                  "MaxScale) promotes a replica; async acknowledges before any replica has the "
                                  "write, semi-sync once one replica received it", _unchanged)

FAILOVER: dict[str, Failover] = {"group_replication": GROUP, "galera": GALERA, "pxc": GALERA,
                                 "mariadb": REPLICATION, "mysql": REPLICATION}


def of(system: str) -> Failover | None:
    """The failover of ``system`` (None: benchlib knows none, e.g. Aurora, whose failover is the cloud's)."""
    return FAILOVER.get(system)
