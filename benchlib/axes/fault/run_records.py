"""What a fault run records besides its load: the fault resolved to nodes, its events at their times, and the ledger
audited on every node after the heal (lost and phantom writes)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import pandas as pd
import pymysql

from benchlib.axes.fault.sequences import Step, steps_of
from benchlib.errors import BenchlibError
from benchlib.lab.base import Fault
from benchlib.axes.fault.run_ledger import TABLE as LEDGER_TABLE
from benchlib.axes.fault.frames import FAULT_EVENTS
from benchlib.systems import sql

if TYPE_CHECKING:
    from benchlib.axes.fault import FaultPlan
    from benchlib.lab.base import Lab

__all__ = ["Events", "Planned", "fault_of", "ledger_audit", "ledger_rows", "schedule_of"]


def _fault(do: str, target: str, nodes: list[str]) -> Fault:
    """The lab's fault for a step: its target resolved to nodes (write node, last replica, every node) or a site."""
    if target.startswith("site:"):
        return Fault(do, (), target[5:])
    if target == "all_nodes":
        return Fault(do, tuple(nodes))
    return Fault(do, (nodes[0],) if target == "write_node" else (nodes[-1],))


@dataclass(frozen=True)
class Planned:
    """One step of a run's fault, resolved: the lab's fault it injects, or the earlier one it releases."""

    step: Step
    fault: Fault

    @property
    def where(self) -> str:
        return ",".join(self.fault.nodes) or (self.fault.site or "")


def schedule_of(plan: "FaultPlan", nodes: list[str]) -> list[Planned]:
    """The run's steps in order, each with the lab's fault it injects or releases."""
    steps = plan.steps or steps_of(plan.kind, plan.target, plan.duration_s)
    held: dict[str, Fault] = {}
    out = []
    for st in sorted(steps, key=lambda s: s.at_s):
        if st.do == "release":
            fault = held.pop(st.target)
        else:
            fault = _fault(st.do, st.target, nodes)
            if st.do != "kill":
                held[st.target] = fault
        out.append(Planned(st, fault))
    return out


def fault_of(plan: "FaultPlan", cluster: str, nodes: list[str]) -> Fault:
    """The lab's fault of a planned one's first step."""
    return schedule_of(plan, nodes)[0].fault


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


#: what a release does, by the kind of hold it ends (the event's words)
RELEASED = {"freeze": "SIGCONT", "cut": "link up", "isolate": "back in its cluster"}


def words(p: Planned) -> str:
    """A step of the fault in words."""
    if p.step.do != "release":
        return p.fault.words()
    return {"freeze": f"thawed {p.where} (SIGCONT)", "cut": f"site {p.where}'s link up again",
            "isolate": f"let {p.where} back into its cluster"}[p.fault.kind]


def semisync_summary(log: Any, node: str, t_fault: float | None, lost_at: float | None,
                     origin: float) -> dict[str, Any] | None:
    """A semi-sync primary through the fault (``benchlib.sampling.status.SemisyncWatch``'s rows): when it fell back to
    async (s after the fault, None: never), and the commits it made without an ack from the fault until it was lost
    (or until its last answer); None when it ran no semi-sync when the fault came."""
    with log.lock:
        rows = [(t, m, v) for t, n, m, v in zip(log.rows["t_s"], log.rows["node"], log.rows["metric"],
                                                log.rows["value"]) if n == node and m.startswith("semisync_")]
    status = [(t, v) for t, m, v in rows if m == "semisync_status"]
    on = next((v == 1.0 for t, v in reversed(status) if t_fault is not None and t <= t_fault), None)
    if not on:  # no semi-sync running when the fault came (an async primary has the plugin, switched off)
        return None
    no_tx = [(t, v) for t, m, v in rows if m == "semisync_no_tx"]
    end = lost_at if lost_at is not None and t_fault is not None and lost_at > t_fault else float("inf")
    before = [v for t, v in no_tx if t <= t_fault]
    during = [v for t, v in no_tx if t_fault < t <= end]
    off = next((t for t, v in status if t_fault < t <= end and v == 0.0), None)
    return {"on_at_fault": True,
            "fell_back_s": None if off is None else off - t_fault,
            "fell_back_at_s": None if off is None else off - origin,
            "no_ack_commits": int(during[-1] - before[-1]) if before and during else None}
