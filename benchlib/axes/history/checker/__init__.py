"""Isolation anomalies in a recorded list-append history, checked by benchlib's own checker (Elle's method, after
Kingsbury and Alvaro, "Elle: Inferring Isolation Anomalies from Experimental Observations", VLDB 2020, and Adya's
definitions): ``check(history)``.

``history`` (``benchlib.axes.history.checker.history``) is a frame of transactions that read whole lists and append
unique values to them, by key. From it: each key's version order, the dependencies between transactions
(``graph``), the cycles they close, by class (``cycles``), the lost updates, and what shows without a cycle (an
aborted or intermediate read, a transaction inconsistent with itself); each anomaly with the transactions that show
it, in words (``words``). A transaction whose outcome is unknown (``info``) is taken as committed once a read saw
what it appended, and ignored otherwise. Sound, not complete: every anomaly reported is one; a cycle the search
could not resolve within its budget is counted in the class above (never dropped)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from benchlib.analysis.exact_intervals import share_interval
from benchlib.axes.history.checker.cycles import CLASSES, find_cycles
from benchlib.axes.history.checker.graph import infer
from benchlib.axes.history.checker.history import HISTORY_COLUMNS, Txn, frame_of, transactions
from benchlib.axes.history.checker.words import MEANING, cycle_words, lost_update_words

__all__ = ["Anomaly", "Checked", "check", "HISTORY_COLUMNS", "Txn", "frame_of", "KINDS", "MEANING"]

DIRECT = ("G1a", "G1b", "internal", "incompatible-order", "duplicate", "garbage")
KINDS = ("lost update",) + CLASSES + DIRECT


@dataclass
class Anomaly:
    """One anomaly found: its kind, the transactions that show it, and what they did, in words."""

    kind: str
    txns: tuple[int, ...]
    words: str


@dataclass
class Checked:
    """What the checker found in one history: the transactions (committed, failed, unknown), the anomalies counted by
    kind (every one) and examples of each in words."""

    committed: int
    failed: int
    unknown: int
    counts: dict[str, int] = field(default_factory=dict)
    examples: list[Anomaly] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not any(self.counts.values())

    def rate(self, kind: str) -> tuple[float, float, float]:
        """``kind`` per 100,000 committed transactions, with its exact 95% interval (Clopper-Pearson: each committed
        transaction a trial; the upper end is the bound when none was seen)."""
        n, k = self.committed, self.counts.get(kind, 0)
        if not n:
            return (math.nan, math.nan, math.nan)
        low, high = share_interval(min(k, n), n)
        return (1e5 * k / n, 1e5 * low, 1e5 * high)

    def table(self) -> pd.DataFrame:
        """A row per kind: how many, per 100,000 committed transactions, its interval."""
        rows = []
        for kind in KINDS:
            r, low, high = self.rate(kind)
            rows.append({"kind": kind, "count": self.counts.get(kind, 0), "per_100k": r, "low": low, "high": high,
                         "meaning": MEANING.get(kind, "")})
        return pd.DataFrame(rows)


def check(history: pd.DataFrame | list[Txn], examples: int = 5) -> Checked:
    """The anomalies of ``history`` (a frame, or ``Txn`` objects), counted by kind, with up to ``examples`` of each
    in words."""
    txns = history if isinstance(history, list) else transactions(history)
    out = Checked(committed=sum(t.outcome == "ok" for t in txns), failed=sum(t.outcome == "fail" for t in txns),
                  unknown=sum(t.outcome == "info" for t in txns), counts={k: 0 for k in KINDS})
    inf = infer(txns)
    shown: dict[str, int] = {}

    def keep(kind: str, ids: tuple[int, ...], words: str) -> None:
        if shown.get(kind, 0) < examples:
            shown[kind] = shown.get(kind, 0) + 1
            out.examples.append(Anomaly(kind, ids, words))

    for f in inf.found:
        out.counts[f.kind] += 1
        keep(f.kind, f.txns, f"T{f.txns[-1]} {f.what}: {f.kind}, {MEANING[f.kind]}")
    for (key, version), ids in inf.read_then_appended.items():
        if len(ids) > 1:
            out.counts["lost update"] += 1
            keep("lost update", tuple(ids), lost_update_words(inf, key, version, ids))
    counts, cycles = find_cycles(inf)
    for kind, n in counts.items():
        out.counts[kind] += n
    for c in cycles:
        keep(c.kind, c.txns, cycle_words(inf, c.kind, c.steps))
    return out
