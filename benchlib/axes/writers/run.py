"""The writers axis in a run: every writer node's own counters read just before the load and right after it (the
statements it rolled back, the conflicts its system counts: whatever of ``COUNTERS`` the node has), the clients'
lines of every part of the load read once they end, and per node the server counters whose increase equals the
errors the clients saw. It fails no run: what it cannot read it records as ``why_not``."""

from __future__ import annotations

import pandas as pd
import pymysql

from benchlib.axes.writers import WritersRecord
from benchlib.axis import AxisRun, RunContext
from benchlib.errors import BenchlibError
from benchlib.systems import sql
from benchlib.workloads.counted import frames, totals

__all__ = ["COUNTERS", "WritersRun", "reconciled"]

#: the status counters a conflict may move, on every system that has them (a node reports those it has)
COUNTERS = ("Handler_rollback", "Com_rollback", "Handler_commit", "wsrep_local_cert_failures", "wsrep_local_bf_aborts",
            "wsrep_local_replays")
#: a Group Replication member's own: conflicts its certifier detected, local transactions it rolled back
GROUP_STATS = ("SELECT COUNT_CONFLICTS_DETECTED AS gr_conflicts_detected, COUNT_TRANSACTIONS_LOCAL_ROLLBACK AS "
               "gr_local_rollback FROM performance_schema.replication_group_member_stats "
               "WHERE MEMBER_ID = @@server_uuid")
#: what a server counter (or the sum of two) is compared with: the clients' errors on its node ("errors", or those of
#: one number, "e3101"), or those of every writer node ("group e3101": a group's certifier counts every member's
#: conflicts alike). Measured: a Galera node's Handler_rollback equals its clients' 1213s; a multi-primary group
#: member's COUNT_TRANSACTIONS_LOCAL_ROLLBACK its clients' 3101s and COUNT_CONFLICTS_DETECTED the whole group's (its
#: 1180s and 1213s, local transactions the applier's lock conflicts rolled back, no group counter counts), and its
#: Handler_rollback twice each error at commit (3101, 1180) and once each 1213: every error, counted
CANDIDATES = (("Handler_rollback", "errors"), ("Com_rollback", "errors"), ("wsrep_local_cert_failures", "errors"),
              ("wsrep_local_bf_aborts", "errors"), ("wsrep_local_cert_failures+wsrep_local_bf_aborts", "errors"),
              ("gr_conflicts_detected", "errors"), ("gr_local_rollback", "errors"), ("gr_local_rollback", "e3101"),
              ("gr_conflicts_detected", "group e3101"), ("Handler_rollback", "2 e3101 + 2 e1180 + e1213"))


def counters(conn) -> dict[str, float]:
    """The node's counters of ``COUNTERS`` and, in a group, its member stats."""
    names = ", ".join(f"'{c}'" for c in COUNTERS)
    out = {str(r["Variable_name"]): float(r["Value"]) for r in
           sql.query(conn, f"SHOW GLOBAL STATUS WHERE Variable_name IN ({names})")}
    try:
        rows = sql.query(conn, GROUP_STATS)
    except pymysql.MySQLError:  # no Group Replication here
        rows = []
    if rows and rows[0]["gr_conflicts_detected"] is not None:
        out.update({k: float(v) for k, v in rows[0].items()})
    return out


def _terms(what: str) -> list[tuple[int, str]]:
    """"2 e3101 + e1213" -> [(2, "e3101"), (1, "e1213")]."""
    out = []
    for term in what.split(" + "):
        k, _, key = term.rpartition(" ")
        out.append((int(k) if k else 1, key))
    return out


def _label(counter: str, what: str) -> str:
    if what == "errors":
        return counter
    if " + " in what:  # "its clients' 3101s and 1180s twice and 1213s once"
        times = {1: "once", 2: "twice"}
        by: dict[int, list[str]] = {}
        for k, key in _terms(what):
            by.setdefault(k, []).append(f"{key[1:]}s")
        said = " and ".join(f"{' and '.join(keys)} {times.get(k, f'{k} times')}" for k, keys in sorted(
            by.items(), reverse=True))
        return f"{counter} = its clients' {said}"
    group, _, code = what.rpartition(" ")
    whose = "the group's" if group else "its clients'"
    return f"{counter} = {whose} {code[1:]} errors"


def reconciled(client: dict[str, int], server: dict[str, float], group: dict[str, int] | None = None,
               slack: int = 0) -> list[str]:
    """The comparisons of ``CANDIDATES`` that hold within ``slack``: a node's server counters (``server``) against its
    clients' counts (``client``: "errors" and "eNNNN") and every writer node's (``group``, summed), each named by the
    counter alone (all errors) or "counter = its clients' 3101 errors". A count no error of that number made is 0."""
    out = []
    for counter, what in CANDIDATES:
        parts = counter.split("+")
        if not all(p in server for p in parts):
            continue
        if what != "errors" and client.get("errors", 0) == 0:
            continue  # no error at all: the plain comparison says it
        if " + " in what:
            expected = sum(k * client.get(key, 0) for k, key in _terms(what))
        else:
            where, _, key = what.rpartition(" ")
            expected = ((group or {}) if where else client).get(key, 0)
        if " + " in what and counter in out:
            continue  # a weighting of the errors that their plain count already matched says nothing more
        if abs(sum(server[p] for p in parts) - expected) <= slack:
            out.append(_label(counter, what))
    return out


class WritersRun(AxisRun):
    def __init__(self, ctx: RunContext):
        self.ctx = ctx
        v = ctx.variant
        self.nodes = ctx.nodes[:v.nodes]
        self.record: dict[str, object] = {"nodes": self.nodes, "keys": v.keys, "retry": v.retry}
        self.before: dict[str, dict[str, float]] = {}
        self.lines: list[str] = []
        self.counted = frames([], 0.0)

    def _read(self) -> dict[str, dict[str, float]]:
        out = {}
        for n in self.nodes:
            with self.ctx.lab.connect(n) as conn:
                out[n] = counters(conn)
        return out

    def start(self) -> None:
        try:
            self.before = self._read()
        except (pymysql.MySQLError, OSError, BenchlibError) as e:
            self.record["why_not"] = f"the writer nodes' counters could not be read before the load: {e}"

    def segment(self, loaded, node: str) -> None:
        result = getattr(loaded, "result", None)
        self.lines += [r for r in (result.records if result is not None else []) if r.startswith("benchlib-writer")]

    def join(self, loaded):
        self.counted = frames(self.lines, 0.0)
        client = totals(self.counted)
        self.record["client"] = client
        if self.before:
            try:
                after = self._read()
            except (pymysql.MySQLError, OSError, BenchlibError) as e:
                self.record["why_not"] = f"the writer nodes' counters could not be read after the load: {e}"
                return loaded
            server = {n: {k: after[n][k] - v for k, v in self.before[n].items() if k in after[n]} for n in self.nodes}
            self.record["server"] = server
            # read once every part of the load had ended: a counter that counts the same conflicts equals them
            group: dict[str, int] = {}
            for counts in client.values():
                for k, v in counts.items():
                    group[k] = group.get(k, 0) + v
            self.record["reconciled"] = {n: reconciled(client.get(n, {}), server[n], group) for n in self.nodes}
        return loaded

    def frames(self, origin: float) -> dict[str, pd.DataFrame]:
        c = self.counted
        return {"writer_seconds": c.seconds.assign(t_s=c.seconds.t_s - origin),
                "writer_errors": c.errors.assign(t_s=c.errors.t_s - origin)}

    def manifest(self) -> dict[str, object]:
        return WritersRecord.model_validate(self.record).model_dump()
