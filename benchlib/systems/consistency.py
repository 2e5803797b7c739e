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

from dataclasses import dataclass
from typing import Any, Callable

from benchlib import catalogue
from benchlib.errors import SpecError
from benchlib.systems import positions
from benchlib.systems.sql import scalar

__all__ = ["ReadSetting", "SETTINGS", "described", "for_system", "supported"]


@dataclass(frozen=True)
class ReadSetting:
    name: str  # as a campaign names it
    doc: str
    reader: tuple[str, ...] = ()  # run once on each reader's session
    writer: tuple[str, ...] = ()  # run once on the writer's session
    #: the writer, after each commit: a token naming what it committed (its GTID), None: no causal wait
    token: Callable[[Any], str] | None = None
    #: the reader, before each read: wait until the node has applied ``token``; (connection, token, timeout s) -> done
    wait: Callable[[Any, str, float], bool] | None = None
    #: settings (``benchlib.systems`` vocabulary) the sysbench load runs under as well, so that its throughput shows
    #: the price (GR's AFTER levels); a campaign applies them with the run's other settings
    load: dict[str, str] | None = None
    #: a read under it may wait (a causal wait, or the server holding it until the node has caught up): its reader
    #: needs a thread of its own; readers that never wait share one and read together (one wake-up a tick)
    waits: bool = True


def _mariadb_token(conn) -> str:
    return scalar(conn, "SELECT @@SESSION.last_gtid") or ""


def _mysql_token(conn) -> str:  # pymysql does not expose the OK packet's GTID: the executed set is a superset
    return positions.GTID.read(conn, True)


def _waits_for(where: positions.Positions) -> Callable[[Any, str, float], bool]:
    """The reader's causal wait: the replica has applied the writer's token (none yet: nothing to wait for)."""
    return lambda conn, token, timeout: not token or where.wait(conn, token, timeout)


_REPLICA = {
    "eventual": "reads whatever the replica has applied",
    "causal": "waits until the replica has applied the writer's last acknowledged transaction, then reads",
}
_GALERA_BITS = "1 reads, 2 UPDATE and DELETE, 4 INSERT and REPLACE, 8 SHOW"
_GR = {
    "EVENTUAL": "reads what the member has applied (the default)",
    "BEFORE_ON_PRIMARY_FAILOVER": "as EVENTUAL, except on a new primary until it applied its backlog",
    "BEFORE": "each transaction waits until the member applied every earlier transaction of the group",
    "AFTER": "a read-write transaction's commit returns once every member applied it",
    "BEFORE_AND_AFTER": "BEFORE and AFTER together",
}


def _gr(level: str, doc: str) -> ReadSetting:
    statement = (f"SET SESSION group_replication_consistency = '{level}'",)
    writes = level in ("AFTER", "BEFORE_AND_AFTER")  # the writer pays: its commits wait for every member
    # the load runs under the level when it makes writers pay, else under EVENTUAL (an earlier run may have set AFTER)
    return ReadSetting(level, doc, reader=statement, writer=statement,
                       load={"gr_consistency": level if writes else "EVENTUAL"},
                       waits=level not in ("EVENTUAL", "BEFORE_ON_PRIMARY_FAILOVER"))


SETTINGS: dict[str, dict[str, ReadSetting]] = {
    "mariadb": {
        "eventual": ReadSetting("eventual", _REPLICA["eventual"], waits=False),
        "causal": ReadSetting("causal", _REPLICA["causal"], token=_mariadb_token,
                              wait=_waits_for(positions.MARIADB)),
    },
    "mysql": {
        "eventual": ReadSetting("eventual", _REPLICA["eventual"], waits=False),
        "causal": ReadSetting("causal", _REPLICA["causal"], token=_mysql_token, wait=_waits_for(positions.GTID)),
    },
    "galera": {
        f"wsrep_sync_wait={bits}": ReadSetting(f"wsrep_sync_wait={bits}",
                                               f"wsrep_sync_wait bitmask {bits} ({_GALERA_BITS})",
                                               reader=(f"SET SESSION wsrep_sync_wait = {bits}",),
                                               waits=bool(bits & 1))  # bit 1: a SELECT waits for the node to catch up
        for bits in range(16)
    },
    "group_replication": {level: _gr(level, doc) for level, doc in _GR.items()},
    "aurora": {"eventual": ReadSetting("eventual", "an Aurora replica reads the shared storage as of its last redo "
                                                   "record applied", waits=False)},
}
SETTINGS["pxc"] = SETTINGS["galera"]


def supported(system: str) -> list[str]:
    """The settings a session of ``system`` can read under, the default first (the catalogue's list)."""
    facts = catalogue.get(system)
    return list(facts.read_settings) if facts else ["eventual"]


def for_system(system: str, name: str | None) -> ReadSetting:
    """``name`` of ``system`` (None: its default); a SpecError listing what it supports when it has no such."""
    known = SETTINGS.get(system, {})
    if name is None:
        return next(iter(known.values()), ReadSetting("eventual", _REPLICA["eventual"], waits=False))
    if name not in known:
        raise SpecError(f"{system} has no read consistency {name!r}", hint=f"{system} supports {described(system)}")
    return known[name]


def described(system: str) -> str:
    """What ``system`` supports, in a few words (Galera's sixteen bitmasks as a range)."""
    facts = catalogue.get(system)
    return facts.described() if facts else ", ".join(supported(system))
