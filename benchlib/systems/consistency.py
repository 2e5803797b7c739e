"""Read consistency settings per system: how a session on another node reads what the write node committed.

A ``ReadSetting`` is what the stale-read probe (``benchlib.sampling.stale_reads``) applies to its sessions: statements
on the reader's session (Galera ``wsrep_sync_wait``, Group Replication ``group_replication_consistency``), statements
on the writer's session (GR's AFTER levels make the writer's commit wait for every member), and for causal reads on
replicas a token the writer takes after each commit (its GTID) that the reader waits for before it reads (MariaDB
``MASTER_GTID_WAIT``, MySQL ``WAIT_FOR_EXECUTED_GTID_SET``: what MaxScale's ``causal_reads`` does). The first setting
of each system is what a session gets by default. docs/campaigns/spec.md (the stale-read probe) says what each
setting promises.
"""

from __future__ import annotations

from typing import Any, Callable

from benchlib import catalogue
from benchlib.errors import SpecError
from benchlib.systems import positions
from benchlib.systems.base import SYSTEMS, ReadSetting
from benchlib.systems.sql import scalar

__all__ = ["ReadSetting", "described", "for_system", "mariadb_token", "mysql_token", "replica_settings", "supported"]


def mariadb_token(conn) -> str:
    return scalar(conn, "SELECT @@SESSION.last_gtid") or ""


def mysql_token(conn) -> str:  # pymysql does not expose the OK packet's GTID: the executed set is a superset
    return positions.GTID.read(conn, True)


def _waits_for(where: positions.Positions) -> Callable[[Any, str, float], bool]:
    """The reader's causal wait: the replica has applied the writer's token (none yet: nothing to wait for)."""
    return lambda conn, token, timeout: not token or where.wait(conn, token, timeout)


_REPLICA = {
    "eventual": "reads whatever the replica has applied",
    "causal": "waits until the replica has applied the writer's last acknowledged transaction, then reads",
}
EVENTUAL = ReadSetting("eventual", _REPLICA["eventual"], waits=False)


def replica_settings(token: Callable[[Any], str], where: positions.Positions) -> dict[str, ReadSetting]:
    """A replicated system's settings: eventual (the default), and causal reads that wait for the writer's token."""
    return {"eventual": EVENTUAL, "causal": ReadSetting("causal", _REPLICA["causal"], token=token,
                                                        wait=_waits_for(where))}


def supported(system: str) -> list[str]:
    """The settings a session of ``system`` can read under, the default first (the catalogue's list)."""
    facts = catalogue.get(system)
    return list(facts.read_settings) if facts else ["eventual"]


def for_system(system: str, name: str | None) -> ReadSetting:
    """``name`` of ``system`` (None: its default); a SpecError listing what it supports when it has no such."""
    found = SYSTEMS.get(system)
    known = found.read_settings if found else {}
    if name is None:
        return next(iter(known.values()), EVENTUAL)
    if name not in known:
        raise SpecError(f"{system} has no read consistency {name!r}", hint=f"{system} supports {described(system)}")
    return known[name]


def described(system: str) -> str:
    """What ``system`` supports, in a few words (Galera's sixteen bitmasks as a range)."""
    facts = catalogue.get(system)
    return facts.described() if facts else ", ".join(supported(system))
