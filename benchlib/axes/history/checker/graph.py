"""What a list-append history says of its transactions' order (Elle's inference, Adya's dependencies).

From each key's version order (the longest read of it; every other read must be a prefix of it) come the edges
between transactions: ``ww`` (T appended a value the next of which U appended), ``wr`` (U read a list whose last value
T appended), ``rw`` (T read a list that U's append later extended: an anti-dependency), and ``rt`` (T completed before
U began: real time, reduced to the edges no chain of others implies). On the way, what needs no cycle: an aborted or
intermediate read, a transaction inconsistent with itself, a read incompatible with the others of its key, a value
read twice, a value no transaction appended."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from benchlib.axes.history.checker.history import Txn

__all__ = ["WW", "WR", "RW", "RT", "EDGE_NAMES", "Inferred", "infer"]

WW, WR, RW, RT = 1, 2, 4, 8
EDGE_NAMES = {WW: "ww", WR: "wr", RW: "rw", RT: "rt"}


@dataclass
class Found:
    """An anomaly that needs no cycle: its kind, the transactions, the key, and what shows it."""

    kind: str
    txns: tuple[int, ...]
    key: int | None
    what: str


@dataclass
class Inferred:
    """The edges (``(from, to) -> kinds``, a bit each) and the anomalies seen on the way."""

    txns: dict[int, Txn]
    edges: dict[tuple[int, int], int] = field(default_factory=dict)
    found: list[Found] = field(default_factory=list)
    orders: dict[int, tuple[int, ...]] = field(default_factory=dict)
    #: (key, the version read) -> the committed transactions that read it and then appended to the key
    read_then_appended: dict[tuple[int, int | None], list[int]] = field(default_factory=dict)
    #: (from, to, kind) -> what shows it, the first found (``words.edge`` says it): ww (key, value, next value),
    #: wr (key, the list read), rw (key, the list read, the value appended next)
    why: dict[tuple[int, int, int], tuple] = field(default_factory=dict)

    def add(self, a: int, b: int, kind: int, why: tuple = ()) -> None:
        if a != b:
            self.edges[(a, b)] = self.edges.get((a, b), 0) | kind
            if why:
                self.why.setdefault((a, b, kind), why)


def _internal(t: Txn) -> tuple[dict[int, tuple[int, ...]], list[Found]]:
    """Each key's external read in ``t`` (what it read of the others' appends: a read without its own appends of the
    key before it) and where ``t`` disagrees with itself (a read that is not what its own earlier operations left)."""
    state: dict[int, list[int]] = {}
    own: dict[int, list[int]] = {}
    external: dict[int, tuple[int, ...]] = {}
    found = []
    for f, k, v in t.ops:
        if f == "append":
            (state[k].append(v) if k in state else own.setdefault(k, []).append(v))
            continue
        if v is None:
            continue
        if k in state:
            if list(v) != state[k]:
                found.append(Found("internal", (t.id,), k, f"read {list(v)} after its own operations left "
                                                            f"{state[k]}"))
        else:
            mine = own.get(k, [])
            if mine and list(v[-len(mine):]) != mine:
                found.append(Found("internal", (t.id,), k, f"read {list(v)} without its own appends {mine} at "
                                                            "its end"))
            external[k] = tuple(v[:len(v) - len(mine)] if mine else v)
        state[k] = list(v)
    return external, found


def _realtime(inf: Inferred, txns: list[Txn]) -> None:
    """``rt`` edges, reduced: a transaction gets one from each that completed before it began and that no other
    transaction completed since it began (which would be a chain between them)."""
    events = []
    for t in txns:
        events.append((t.t0, 1, t.id))
        if math.isfinite(t.t1):
            events.append((t.t1, 0, t.id))  # at one instant completions come first: they happened before
    events.sort()
    frontier: set[int] = set()
    before: dict[int, frozenset[int]] = {}
    for _, kind, tid in events:
        if kind == 1:
            before[tid] = frozenset(frontier)
            for f in frontier:
                inf.add(f, tid, RT)
        else:
            frontier -= before.get(tid, frozenset())
            frontier.add(tid)


def infer(txns: list[Txn]) -> Inferred:
    """The dependencies between the committed (and the maybe-committed, once a read saw their appends) transactions
    of ``txns``, and the anomalies that show without a cycle."""
    inf = Inferred({t.id: t for t in txns})
    writer: dict[tuple[int, int], int] = {}
    failed: dict[tuple[int, int], int] = {}
    last_append: dict[tuple[int, int], int] = {}
    reads: list[tuple[int, int, tuple[int, ...]]] = []
    for t in txns:
        for f, k, v in t.ops:
            if f == "append":
                (failed if t.outcome == "fail" else writer)[(k, v)] = t.id
                if t.outcome != "fail":
                    last_append[(t.id, k)] = v
        if t.outcome != "ok":
            continue
        external, found = _internal(t)
        inf.found += found
        first: dict[int, str] = {}
        for f, k, _ in t.ops:
            first.setdefault(k, f)
        for k, v in external.items():
            reads.append((t.id, k, v))
            if first[k] == "r" and t.appends(k):  # it read the key, then appended to it
                inf.read_then_appended.setdefault((k, v[-1] if v else None), []).append(t.id)
    seen_info = set()
    longest: dict[int, tuple[int, ...]] = {}
    for tid, k, v in reads:
        if len(set(v)) < len(v):
            inf.found.append(Found("duplicate", (tid,), k, f"read {list(v)}, a value twice"))
        for x in v:
            if (k, x) in failed:
                inf.found.append(Found("G1a", (failed[(k, x)], tid), k,
                                       f"read {x}, appended by T{failed[(k, x)]}, which failed"))
            elif (k, x) not in writer:
                inf.found.append(Found("garbage", (tid,), k, f"read {x}, which no transaction appended"))
            elif inf.txns[writer[(k, x)]].outcome == "info":
                seen_info.add(writer[(k, x)])
        if v and (k, v[-1]) in writer:
            w = writer[(k, v[-1])]
            if w != tid and last_append.get((w, k)) != v[-1]:
                inf.found.append(Found("G1b", (w, tid), k, f"read {list(v)}, ending at {v[-1]}, which T{w} "
                                                            f"appended before its last append to key {k}"))
        if len(v) > len(longest.get(k, ())):
            longest[k] = v
    inf.orders = longest
    for tid, k, v in reads:
        order = longest.get(k, ())
        if order[:len(v)] != v:
            inf.found.append(Found("incompatible-order", (tid,), k, f"read {list(v)}, not a prefix of {list(order)}"))
            continue
        if v and (k, v[-1]) in writer:
            inf.add(writer[(k, v[-1])], tid, WR, (k, v))
        nxt = writer.get((k, order[len(v)])) if len(v) < len(order) else None
        if nxt is not None and not (v and writer.get((k, v[-1])) == nxt):  # the same writer's next: a G1b, above
            inf.add(tid, nxt, RW, (k, v, order[len(v)]))
    for k, order in longest.items():
        ws = [writer.get((k, x)) for x in order]
        for (a, b), (x, y) in zip(zip(ws, ws[1:]), zip(order, order[1:])):
            if a is not None and b is not None:
                inf.add(a, b, WW, (k, x, y))
    nodes = [t for t in txns if t.outcome == "ok" or t.id in seen_info]
    _realtime(inf, nodes)
    return inf
