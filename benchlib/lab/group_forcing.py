"""A Group Replication group that lost its majority, formed again by its survivors (``force``): what the heal of a
group with two of three members killed does before they start again (``benchlib.lab.group_replication``)."""

from __future__ import annotations

from typing import Any

import pymysql

from benchlib.lab import sql

__all__ = ["FORCE_S", "force"]

#: a survivor's force was seen to hang in the SET past its 60 s read timeout, with its group communication still
#: reaching for the members it had just lost (two clean clones of the suite in a row, and beside CPU and disk hogs):
#: it is given this long to answer
FORCE_S = 30.0


def force(topo: Any, members: list) -> None:
    """The survivors ``members`` of ``topo``'s group forced to a group of themselves
    (``group_replication_force_members``, as an operator would); a lone survivor whose force does not answer within
    ``FORCE_S`` leaves the group and forms it again by itself (a bootstrap: what the force would have made)."""
    survivor = members[0]
    try:
        with topo.connect(survivor, read_timeout=FORCE_S) as c:
            with c.cursor() as cur:
                cur.execute("SET GLOBAL group_replication_force_members = %s",
                            (",".join(topo._address(m) for m in members),))
            sql.execute(c, "SET GLOBAL group_replication_force_members = ''")
        return
    except pymysql.err.OperationalError as exc:
        if exc.args[0] != 2013 or len(members) > 1:  # not a timeout, or survivors a bootstrap would split
            raise
    with topo.connect(survivor, read_timeout=topo.START_S) as c:
        # the force that did not answer stays set, and a group cannot start with it
        sql.execute(c, "STOP GROUP_REPLICATION", "SET GLOBAL group_replication_force_members = ''")
    topo._start(survivor, bootstrap=True)
    topo.__dict__.setdefault("notes", {})["forced"] = (
        f"the group formed again around {survivor.name} (forcing it to a group of itself did not answer within "
        f"{FORCE_S:g} s)")
