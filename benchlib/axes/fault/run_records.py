"""What a fault run records besides its load: the fault resolved to nodes, its events at their times, and the ledger
audited on every node after the heal (lost and phantom writes)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable

import pandas as pd
import pymysql

from benchlib.errors import BenchlibError
from benchlib.lab.base import Fault
from benchlib.sampling.ledger import TABLE as LEDGER_TABLE
from benchlib.schema import FAULT_EVENTS
from benchlib.systems import sql

if TYPE_CHECKING:
    from benchlib.axes.fault import FaultPlan
    from benchlib.lab.base import Lab

__all__ = ["Events", "fault_of", "ledger_audit", "ledger_rows"]


def fault_of(plan: "FaultPlan", cluster: str, nodes: list[str]) -> Fault:
    """The lab's fault for a planned one: its target resolved to nodes (write node, last replica) or a site."""
    if plan.target.startswith("site:"):
        return Fault(plan.kind, (), plan.target[5:])
    return Fault(plan.kind, (nodes[0],) if plan.target == "write_node" else (nodes[-1],))


class Events:
    """The run's fault events (fault, released, step, primary, rejoin..., heal), each at its time."""

    def __init__(self, clock: Callable[[], float]):
        self.clock, self.lock = clock, threading.Lock()
        self.rows: list[tuple[float, str, str, str]] = []

    def add(self, event: str, node: str = "", detail: str = "", t: float | None = None) -> None:
        with self.lock:
            self.rows.append((self.clock() if t is None else t, event, node, detail))

    def frame(self, origin: float) -> pd.DataFrame:
        rows = sorted(self.rows)
        return FAULT_EVENTS.frame({"t_s": [r[0] - origin for r in rows], "event": [r[1] for r in rows],
                                   "node": [r[2] for r in rows], "detail": [r[3] for r in rows]})


def ledger_rows(lab: "Lab", node: str, run: str) -> set[int] | None:
    try:
        with lab.connect(node) as conn:
            return {int(r["seq"]) for r in sql.query(conn, f"SELECT seq FROM {LEDGER_TABLE} WHERE run = %s", (run,))}
    except (BenchlibError, pymysql.MySQLError, OSError):
        return None


def ledger_audit(lab: "Lab", writers: list[Any], ledger: Any, run_id: str, order: list[str],
                 origin: float) -> tuple[pd.DataFrame, dict[str, dict[str, Any]]]:
    """Every writer's writes with their outcome, and per writer the counts: acknowledged writes absent from the node
    that took the writes last (``order[0]``) are lost, failed or unknown ones present are phantoms; what each other
    node lacks."""
    survivor = order[0]
    frames, counts = [], {}
    for w in writers:
        key = run_id if w is ledger else f"{run_id}~{w.via}"
        held = {n: ledger_rows(lab, n, key) for n in order}
        present = held.get(survivor)
        frame = w.frame(origin, present)
        frames.append(frame)
        acked = frame[frame["outcome"] == "acked"]
        lost = sorted(set(acked["seq"]) - present) if present is not None else []
        phantoms = sorted(set(frame.loc[frame["outcome"] != "acked", "seq"]) & present) if present is not None else []
        missing = {n: len(set(acked["seq"]) - rows) for n, rows in held.items() if rows is not None and n != survivor}
        counts[w.via] = {"writes": len(frame), "acked": len(acked), "failed": int((frame["outcome"] == "failed").sum()),
                         "unknown": int((frame["outcome"] == "unknown").sum()), "lost": len(lost),
                         "lost_seqs": lost[:50], "phantoms": len(phantoms), "audited_on": survivor,
                         "missing_on": missing}
    return pd.concat(frames, ignore_index=True), counts
