"""Run validity: what must hold on a cluster through a run's measured window, checked on the samples the run took.

A run whose cluster changed mode while it was measured did not measure the configuration it names: a semi-sync
primary that fell back to async, a replica whose threads stopped, a Galera node that left the Primary component, a
Group Replication member that left the group or a primary that moved, a node the sampler could not reach. Each
system registers its invariants (``System.invariants``, local and remote labs alike); every one is a function of the
run's long cluster frame (``t_s``, ``node``, ``metric``, ``value``) and its ``Window``, returning one ``Breach`` per
thing that broke, with the node, when, for how long and the evidence. The run is then stored as *invalid* with
those sentences as its reason, and analysis leaves it out.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterable

import pandas as pd

__all__ = ["Breach", "Invariant", "Window", "check", "galera_membership", "group_membership", "nodes_answer",
           "replica_threads", "semisync_holds", "excuse"]

#: a node that no probe got an answer from for this long inside the window did not answer the sampler
SILENT_S = 5.0


@dataclass(frozen=True)
class Window:
    """The measured window of a run on the cluster frame's clock, and the cluster's nodes (the write node first)."""

    nodes: list[str]
    start_s: float
    end_s: float


@dataclass(frozen=True)
class Breach:
    """One invariant broken: ``node`` ``what`` at ``at_s`` (into the window) for ``for_s`` seconds (None: until the
    end of the window or a single sample), ``evidence`` in words."""

    node: str
    what: str
    at_s: float
    for_s: float | None = None
    evidence: str = ""

    def sentence(self) -> str:
        span = f" for {self.for_s:.1f} s" if self.for_s else ""
        return f"{self.node} {self.what} at {self.at_s:.1f} s{span}" + (f": {self.evidence}" if self.evidence else "")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


Invariant = Callable[[pd.DataFrame, Window], list[Breach]]


def check(frame: pd.DataFrame, window: Window, invariants: Iterable[Invariant]) -> list[Breach]:
    """Every breach of ``invariants`` in ``window``, in the order they began."""
    inside = frame[(frame.t_s >= window.start_s) & (frame.t_s <= window.end_s)]
    found = [b for inv in invariants for b in inv(inside, window)]
    return sorted(found, key=lambda b: b.at_s)


#: a breach this close to a window done on purpose is its doing: the slow probes sample about once a second
EXCUSE_BEFORE_S, EXCUSE_AFTER_S = 1.5, 2.5


def excuse(breaches: list[Breach], start_s: float, on_purpose: list[tuple[str, float, float]]) -> list[Breach]:
    """``breaches`` (``at_s`` into a window starting at ``start_s``) without those of a node within a window where
    something was done to it on purpose (node, from, to: the cluster frame's clock), such as a stalled applier."""
    def done_on_purpose(b: Breach) -> bool:
        t = start_s + b.at_s
        return any(b.node == n and t0 - EXCUSE_BEFORE_S <= t <= t1 + EXCUSE_AFTER_S for n, t0, t1 in on_purpose)

    return [b for b in breaches if not done_on_purpose(b)]


# ---- helpers ---------------------------------------------------------------------------------------------------

def _series(frame: pd.DataFrame, node: str, *metrics: str) -> pd.Series:
    """The first of ``metrics`` sampled on ``node``: its values indexed by time (empty if none was)."""
    for metric in metrics:
        rows = frame[(frame.node == node) & (frame.metric == metric)]
        if len(rows):
            return pd.Series(rows.value.to_numpy(dtype=float), index=rows.t_s.to_numpy(dtype=float)).sort_index()
    return pd.Series(dtype=float)


def _spans(bad: pd.Series, window: Window) -> list[tuple[float, float | None]]:
    """(start into the window, duration) of every run of True samples in a time-indexed boolean series: from the
    first bad sample to the next good one (None: still bad at the window's end, one sample only)."""
    out: list[tuple[float, float | None]] = []
    start = None
    for t, is_bad in bad.items():
        if is_bad and start is None:
            start = t
        elif not is_bad and start is not None:
            out.append((start - window.start_s, t - start))
            start = None
    if start is not None:
        out.append((start - window.start_s, window.end_s - start if window.end_s > start else None))
    return out


def _delta(counter: pd.Series) -> float:
    """How much a raw counter rose over the window (a counter that went down restarted: its rises are summed)."""
    if len(counter) < 2:
        return 0.0
    steps = counter.diff().dropna()
    return float(steps[steps > 0].sum())


# ---- the invariants --------------------------------------------------------------------------------------------

def semisync_holds(frame: pd.DataFrame, w: Window) -> list[Breach]:
    """A primary whose semi-sync was ON when the load started stays ON, and commits nothing without an ack. The
    status is read once a second; a fallback shorter than that still shows in the count of commits without an
    ack (``no_tx``), which dates it to the samples between which the count rose."""
    primary = w.nodes[0]
    status = _series(frame, primary, "rpl_semi_sync_master_status", "semisync_status")
    if status.empty or status.iloc[0] < 1:
        return []  # not semi-sync (or async by configuration): nothing to hold
    no_tx = _series(frame, primary, "rpl_semi_sync_master_no_tx", "semisync_no_tx")
    no_ack = _delta(no_tx)
    evidence = f"{no_ack:,.0f} commits without a replica's ack"
    spans = _spans(status < 1, w)
    if spans:
        return [Breach(primary, "fell back to async", at, for_s, evidence if i == 0 else "")
                for i, (at, for_s) in enumerate(spans)]
    if no_ack > 0:
        times = no_tx.index.to_numpy()
        rose = [i for i in range(1, len(no_tx)) if no_tx.iloc[i] > no_tx.iloc[i - 1]]
        first, last = times[rose[0] - 1], times[rose[-1]]
        return [Breach(primary, "fell back to async", float(first - w.start_s), float(last - first), evidence)]
    return []


def replica_threads(frame: pd.DataFrame, w: Window) -> list[Breach]:
    """Every replica's IO (receiver) and SQL (applier) thread runs."""
    out = []
    for node in w.nodes[1:]:
        for metric, name in (("io_running", "IO"), ("sql_running", "SQL")):
            for at, for_s in _spans(_series(frame, node, metric) < 1, w):
                out.append(Breach(node, f"had its replication {name} thread stopped", at, for_s))
    return out


def galera_membership(frame: pd.DataFrame, w: Window) -> list[Breach]:
    """Every node stays Synced in the Primary component, and the cluster keeps every node."""
    out = []
    size = len(w.nodes)
    for node in w.nodes:
        for at, for_s in _spans(_series(frame, node, "wsrep_primary") < 1, w):
            out.append(Breach(node, "left the Primary component", at, for_s))
        state = _series(frame, node, "wsrep_local_state")
        for at, for_s in _spans(state != 4, w):  # 4: Synced
            seen = sorted({int(v) for v in state[state != 4]})
            out.append(Breach(node, "was not Synced", at, for_s, f"wsrep_local_state {seen} (4 is Synced)"))
        members = _series(frame, node, "wsrep_cluster_size")
        for at, for_s in _spans(members != size, w):
            seen = sorted({int(v) for v in members[members != size]})
            out.append(Breach(node, f"saw the cluster at {', '.join(map(str, seen))} of {size} nodes", at, for_s))
    return out


def group_membership(frame: pd.DataFrame, w: Window) -> list[Breach]:
    """Every member stays ONLINE, and the primary does not move (in a multi-primary group: every member stays one)."""
    out = []
    for node in w.nodes:
        for at, for_s in _spans(_series(frame, node, "gr_online") < 1, w):
            out.append(Breach(node, "was not ONLINE in the group", at, for_s))
    rows = frame[frame.metric == "gr_primary"].sort_values("t_s")
    at_start = {str(n) for n, g in rows.groupby("node", sort=False) if g.value.iloc[0] >= 1}
    if len(at_start) > 1:  # multi-primary: every member a primary, and each stays one
        for node in sorted(at_start):
            series = rows[rows.node == node]
            lost = series[series.value < 1]
            if len(lost):
                out.append(Breach(node, "stopped being a primary (a multi-primary group's member)",
                                  float(lost.t_s.iloc[0]) - w.start_s))
        return out
    primaries = rows[rows.value >= 1]
    if len(primaries):
        first = primaries.node.iloc[0]
        moved = primaries[primaries.node != first]
        if len(moved):
            at = float(moved.t_s.iloc[0]) - w.start_s
            out.append(Breach(first, f"stopped being the primary ({moved.node.iloc[0]} became it)", at))
    return out


def nodes_answer(frame: pd.DataFrame, w: Window) -> list[Breach]:
    """The sampler's liveness probe (``alive`` rows: one a second per node, each on a thread of its own) got an
    answer from every node at least every ``SILENT_S`` seconds. Other probes share threads, and a node's process
    rows come from /proc: neither says that this node answered."""
    alive = frame[frame.metric == "alive"]
    if alive.empty:
        return []  # a run recorded before liveness rows were
    out = []
    for node in w.nodes:
        times = sorted({w.start_s, *alive[alive.node == node].t_s.astype(float), w.end_s})
        for a, b in zip(times, times[1:]):
            if b - a > SILENT_S:
                out.append(Breach(node, "did not answer the sampler", a - w.start_s, b - a))
    return out
