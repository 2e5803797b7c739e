"""A member cloned from a donor, started again and made safe to crash (``finish_clone``): what the heal of a group
does when distributed recovery's clone shut a member down (no supervisor restarts it), before the member joins again
(``benchlib.lab.group_replication``).

The first start after a clone finishes it (the cloned files put in place, the cloned redo applied). Killed soon after
that start, a MySQL 9.7 member then recovers badly: "We scanned the log up to 19793088. A checkpoint was at 19781667
and the maximum LSN on a database page was 19845024. It is possible that the database is now corrupt!", "Tablespace
'innodb_undo_001' Page ... log sequence number 19845024 is in the future!", and once (a clean clone of the suite: a
member cloned twice, then killed with its whole group) "Assertion failure: trx0purge.cc:180:purge_sys->iter.trx_no
<= purge_sys->rseg->last_trx_no" at every start after. Measured here, beside two CPU hogs: a member made to diverge,
cloned, and killed seconds after it joined again did so at the first try, three tries out of three; the pages it
found were newer than its donor's log position and than its own after the clone, so writing redo on it until it
passed its donor's did not help (tried).

A clean shutdown and a start after the first one do: six members cloned and killed in a row, beside the same hogs,
all recovered cleanly. Their shutdown checkpoints what the clone left; it costs the heal one restart of the member.

It is not enough when the clone went over the member's own old data: a member of the embedded lab cloned a second
time over its own datadir, then killed after it joined, found undo pages of its earlier life "in the future" and hit
the trx0purge.cc:180 assertion at every start (two tries in three, beside a CPU and disk hog). A member the lab
rebuilds on purpose (it held transactions the group lacked) therefore gets a fresh datadir first, when its lab can
make one (``ClusterContext.renew``): five rebuilds and kills in a row, beside the same hog, all recovered."""

from __future__ import annotations

from typing import Any

from benchlib.lab import sql

__all__ = ["finish_clone"]


def finish_clone(topo: Any, node: Any) -> None:
    """Start ``node`` (its clone shut it down), shut it down cleanly, start it again: Group Replication not started."""
    topo.ctx.restart([node])
    with topo.connect(node, read_timeout=topo.START_S) as conn:
        sql.execute(conn, "SHUTDOWN")
    topo.ctx.restart([node])
