"""The consistency audit after a run: does every node of the cluster hold the same data as the write node?

Once the run's catch-up is done: the write node's position is read, every other node is waited for until it has
applied it (the wait is recorded: a node that does not get there is named), then every node's position is compared
with the write node's (its system's ``positions``: GTID sets, MariaDB GTID positions, Galera seqnos) and the run's
tables are checksummed on every node (``CHECKSUM TABLE``: the run's dataset and the heartbeat table; comparable
between nodes of one server version). A difference names the node and the table. The audit's cost is recorded.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from benchlib import systems
from benchlib.sysbench.options import SysbenchOptions
from benchlib.systems import sql

if TYPE_CHECKING:
    from benchlib.lab.base import Lab

__all__ = ["Audit", "audit", "dataset_tables"]

HEARTBEAT = "benchlib.heartbeat"


@dataclass
class Audit:
    nodes: list[str]
    tables: list[str]
    wait_s: float = 0.0  # until every node had applied the write node's position
    check_s: float = 0.0  # positions read and tables checksummed on every node
    positions: dict[str, str] = field(default_factory=dict)
    checksums: dict[str, dict[str, int | None]] = field(default_factory=dict)  # node -> table -> CHECKSUM TABLE
    mismatches: list[str] = field(default_factory=list)  # each names the node, and the table or the position
    skipped: str = ""  # why nothing was compared (a system with one storage, no position to compare)

    @property
    def identical(self) -> bool:
        return not self.mismatches and not self.skipped

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def dataset_tables(opts: SysbenchOptions) -> list[str]:
    """The tables a run's load writes or reads, plus the heartbeat table."""
    stem = "benchlib_wide" if opts.spec.dataset == "wide" else "sbtest"
    return [f"sbtest.{stem}{i}" for i in range(1, opts.tables + 1)] + [HEARTBEAT]


def _checksums(conn, tables: list[str]) -> dict[str, int | None]:
    rows = sql.query(conn, f"CHECKSUM TABLE {', '.join(tables)}")
    return {r["Table"]: (int(r["Checksum"]) if r["Checksum"] is not None else None) for r in rows}


def audit(lab: "Lab", cluster: str, nodes: list[str], tables: list[str], timeout: float = 30.0) -> Audit:
    """Compare every node of ``nodes`` (the write node first) with the write node (see the module docstring)."""
    result = Audit(list(nodes), list(tables))
    pos = systems.get(lab.system(cluster)).positions
    if pos is None or len(nodes) < 2:
        result.skipped = "one node, or one shared storage: nothing to compare" if len(nodes) < 2 else \
            f"{lab.system(cluster)} shares one storage between its nodes: nothing to compare"
        return result
    writer, others = nodes[0], nodes[1:]
    deadline = time.monotonic() + timeout
    behind = []
    for node in nodes:  # one connection a node: the write node first (nothing writes any more: the run is over)
        with lab.connect(node) as conn:
            t0 = time.monotonic()
            if node == writer:
                target = pos.read(conn, True)
            elif not pos.wait(conn, target, max(0.1, deadline - time.monotonic())):
                behind.append(node)
            t1 = time.monotonic()
            result.positions[node] = target if node == writer else pos.read(conn, False)
            result.checksums[node] = _checksums(conn, tables)
            result.wait_s += t1 - t0
            result.check_s += time.monotonic() - t1
    result.mismatches += [f"{n} did not reach {writer}'s {pos.what} {target} within {timeout:g} s" for n in behind]
    mine = result.checksums[writer]
    for node in others:
        if node not in behind and result.positions[node] != result.positions[writer]:
            result.mismatches.append(f"{node}'s {pos.what} {result.positions[node] or '(none)'} differs from "
                                     f"{writer}'s {result.positions[writer]}")
        for table in tables:
            theirs = result.checksums[node].get(table)
            if theirs != mine.get(table):
                result.mismatches.append(f"{node} differs from {writer} in {table} (CHECKSUM TABLE {theirs} against "
                                         f"{mine.get(table)})")
    return result
