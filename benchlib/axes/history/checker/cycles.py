"""Cycles in a history's dependency graph, found and classified as Adya and Elle do.

An edge that closes a cycle is one anomaly, of the class of the cheapest cycle it closes:

- ``G0``: a ``ww`` edge on a cycle of ``ww`` edges only (a write cycle);
- ``G1c``: a ``wr`` edge on a cycle of ``ww`` and ``wr`` edges (circular information flow);
- ``G-single``: an ``rw`` edge whose head reaches its tail by ``ww`` and ``wr`` edges (a cycle with exactly one
  anti-dependency: read skew, and the lost update's cycle);
- ``G2-item``: an ``rw`` edge on a cycle that needs more anti-dependencies;
- the ``-realtime`` variants: the same, once ``rt`` edges may be used too, for an edge whose cycle needs them (a read
  that missed a write completed before it began: a stale read is ``G-single-realtime``).

Membership of one strongly connected component decides G0, G1c and the cycles at all (scipy's); the path that shows a
cycle, and whether an anti-dependency's cycle needs another, are a breadth-first search inside the component, with a
budget: an edge whose search outgrows it is counted in the next class up (``G2-item``), never dropped."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from benchlib.axes.history.checker.graph import RT, RW, WR, WW, Inferred

__all__ = ["Cycle", "CLASSES", "find_cycles"]

CLASSES = ("G0", "G1c", "G-single", "G2-item", "G0-realtime", "G1c-realtime", "G-single-realtime",
           "G2-item-realtime")
BUDGET = 20_000  # nodes a search may visit before it gives up on a cheaper class
EXAMPLES = 20  # cycles kept a class, as examples (every one is counted)


@dataclass
class Cycle:
    """One anomaly: its class, and the cycle that shows it as (from, to, edge kind) steps, its closing edge first."""

    kind: str
    steps: list[tuple[int, int, int]]

    @property
    def txns(self) -> tuple[int, ...]:
        return tuple(a for a, _, _ in self.steps)


class _Graph:
    def __init__(self, inf: Inferred):
        ids = sorted({x for e in inf.edges for x in e})
        self.index = {t: i for i, t in enumerate(ids)}
        self.ids = ids
        self.out: dict[int, list[tuple[int, int]]] = {}
        for (a, b), kind in inf.edges.items():
            self.out.setdefault(a, []).append((b, kind))
        self.edges = inf.edges
        index = self.index
        self._rows = np.fromiter((index[a] for a, _ in inf.edges), dtype=np.int64, count=len(inf.edges))
        self._cols = np.fromiter((index[b] for _, b in inf.edges), dtype=np.int64, count=len(inf.edges))
        self._kinds = np.fromiter(inf.edges.values(), dtype=np.int64, count=len(inf.edges))

    def components(self, mask: int) -> dict[int, int]:
        """Transaction -> its strongly connected component over the edges of kinds ``mask``."""
        keep = (self._kinds & mask) != 0
        n = len(self.ids)
        m = csr_matrix((np.ones(int(keep.sum()), dtype=np.int8), (self._rows[keep], self._cols[keep])), shape=(n, n))
        _, labels = connected_components(m, directed=True, connection="strong")
        return dict(zip(self.ids, labels.tolist()))

    def path(self, start: int, goal: int, mask: int, comp: dict[int, int]) -> list[tuple[int, int, int]] | None:
        """The shortest path ``start`` to ``goal`` over edges of kinds ``mask`` within ``goal``'s component; None when
        there is none or the search outgrew ``BUDGET``."""
        if start == goal:
            return []
        where = comp.get(goal)
        prev: dict[int, tuple[int, int]] = {start: (start, 0)}
        queue = deque([start])
        while queue and len(prev) < BUDGET:
            a = queue.popleft()
            for b, kind in self.out.get(a, ()):
                if not kind & mask or b in prev or comp.get(b) != where:
                    continue
                prev[b] = (a, kind & mask)
                if b == goal:
                    steps = []
                    while b != start:
                        a, k = prev[b]
                        steps.append((a, b, _first(k)))
                        b = a
                    return steps[::-1]
                queue.append(b)
        return None


def _first(kinds: int) -> int:
    """One kind of a set of edge kinds, the cheapest (ww before wr before rw before rt)."""
    return next(k for k in (WW, WR, RW, RT) if kinds & k)


def find_cycles(inf: Inferred) -> tuple[dict[str, int], list[Cycle]]:
    """Every edge that closes a cycle, counted by class, and up to ``EXAMPLES`` cycles a class."""
    g = _Graph(inf)
    counts = {c: 0 for c in CLASSES}
    examples: list[Cycle] = []
    shown = {c: 0 for c in CLASSES}

    def found(kind: str, a: int, b: int, closing: int, back: list | None, mask: int, comp: dict) -> None:
        counts[kind] += 1
        if shown[kind] < EXAMPLES:
            back = back if back is not None else g.path(b, a, mask, comp)
            if back is not None:
                shown[kind] += 1
                examples.append(Cycle(kind, [(a, b, closing)] + back))

    plain: dict[int, int] = {}
    for rt, suffix in ((0, ""), (RT, "-realtime")):
        ww, wwr, every = g.components(WW | rt), g.components(WW | WR | rt), g.components(WW | WR | RW | rt)
        for (a, b), kind in inf.edges.items():
            if every[a] != every[b] or (rt and plain[a] == plain[b]):  # realtime: only where no plain cycle is
                continue
            if kind & WW and ww[a] == ww[b]:
                found("G0" + suffix, a, b, WW, None, WW | rt, ww)
            elif kind & WR and wwr[a] == wwr[b]:
                found("G1c" + suffix, a, b, WR, None, WW | WR | rt, wwr)
            elif kind & RW:
                back = g.path(b, a, WW | WR | rt, every)
                if back is not None:
                    found("G-single" + suffix, a, b, RW, back, 0, every)
                else:
                    found("G2-item" + suffix, a, b, RW, None, WW | WR | RW | rt, every)
            # an rt edge itself is not counted: the edges whose cycles it closes are
        plain = every
    return counts, examples
