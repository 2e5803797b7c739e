"""A list-append history: transactions of reads and appends over keys, as recorded (a frame, a row a micro-operation)
and as the checker reads it (``Txn``).

Each key holds a list; an append adds a value no other append of the history adds to that key, so every read of a
key shows a prefix of the one order its values were appended in (Kingsbury and Alvaro's Elle, VLDB 2020). The
frame's columns (``HISTORY_COLUMNS``):

- ``txn``: the transaction's number, ``process``: the client that ran it (one transaction at a time), ``node``: where;
- ``t_invoke_s``, ``t_complete_s``: when the client began it and when it learnt its outcome (NaN: never);
- ``outcome``: ``ok`` (committed), ``fail`` (the server refused it: it did not happen) or ``info`` (the connection
  was lost at commit: it may or may not have happened);
- ``i``: the micro-operation's place in its transaction, ``f``: ``r`` or ``append``, ``key``;
- ``value``: what an append added; ``read``: what a read returned, the values space-separated in list order ("" an
  empty list, missing when the read never returned)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from benchlib.errors import BenchlibError
from benchlib.schema import Column, Schema

__all__ = ["HISTORY", "HISTORY_COLUMNS", "HistoryError", "Txn", "transactions", "frame_of"]


class HistoryError(BenchlibError):
    """A history the checker cannot read (a column missing, an unknown outcome or micro-operation)."""

HISTORY_COLUMNS = ("txn", "process", "node", "t_invoke_s", "t_complete_s", "outcome", "i", "f", "key", "value",
                   "read")
OUTCOMES = ("ok", "fail", "info")

#: the history probe's frame (``benchlib.axes.history.run``): a row a micro-operation
HISTORY = Schema("history", {
    "txn": Column("int64", "the transaction's number (unique in the run)"),
    "process": Column("int64", "the client that ran it, one transaction at a time"),
    "node": Column("str", "the node the client ran it on"),
    "t_invoke_s": Column("float64", "sampler clock when the client began it, s"),
    "t_complete_s": Column("float64", "sampler clock when it learnt the outcome, s (NaN: never: outcome info)"),
    "outcome": Column("str", "ok (committed), fail (refused: it did not happen) or info (the connection was lost "
                             "at commit: it may or may not have happened)"),
    "i": Column("int64", "the micro-operation's place in its transaction"),
    "f": Column("str", "r (a read of the key's whole list) or append"),
    "key": Column("int64", "the key"),
    "value": Column("Int64", "what an append added (missing: a read)"),
    "read": Column("string", "what a read returned, space-separated in list order (missing: not a read, or it never "
                             "returned)"),
    "error": Column("str", "the error number that failed the transaction (empty: none)"),
})


@dataclass
class Txn:
    """One transaction: its micro-operations in order, ``("r", key, values)`` or ``("append", key, value)``."""

    id: int
    process: int
    node: str
    t0: float
    t1: float  # inf: its outcome never came back
    outcome: str
    ops: list[tuple] = field(default_factory=list)

    def appends(self, key: int) -> list[int]:
        return [v for f, k, v in self.ops if f == "append" and k == key]


def _read(text: object) -> tuple[int, ...] | None:
    if text is None or (isinstance(text, float) and math.isnan(text)) or text is pd.NA:
        return None
    return tuple(map(int, str(text).split()))


def transactions(history: pd.DataFrame) -> list[Txn]:
    """The frame's transactions, in the order of their numbers."""
    missing = [c for c in HISTORY_COLUMNS if c not in history.columns]
    if missing:
        raise HistoryError(f"a history frame lacks the column(s) {', '.join(missing)}",
                            hint=f"a list-append history has {', '.join(HISTORY_COLUMNS)}")
    bad = sorted(set(history.outcome.dropna()) - set(OUTCOMES))
    if bad:
        raise HistoryError(f"a history frame has the outcome(s) {', '.join(map(str, bad))}",
                            hint="a transaction's outcome is ok, fail or info")
    h = history.sort_values(["txn", "i"], kind="stable")
    out: list[Txn] = []
    cur: Txn | None = None
    t1 = h.t_complete_s.to_numpy(dtype=float)
    for j, (txn, process, node, t0, outcome, f, key, value, read) in enumerate(zip(
            h.txn.to_numpy(), h.process.to_numpy(), h.node.to_numpy(), h.t_invoke_s.to_numpy(dtype=float),
            h.outcome.to_numpy(), h.f.to_numpy(), h.key.to_numpy(), h.value.to_numpy(), h.read.to_numpy())):
        if cur is None or cur.id != txn:
            done = t1[j] if not np.isnan(t1[j]) else math.inf
            cur = Txn(int(txn), int(process), str(node), float(t0), done, str(outcome))
            out.append(cur)
        if f == "append":
            cur.ops.append(("append", int(key), int(value)))
        elif f == "r":
            cur.ops.append(("r", int(key), _read(read)))
        else:
            raise HistoryError(f"transaction {txn} of a history has the micro-operation {f!r}",
                                hint="a list-append history's micro-operations are r and append")
    return out


def frame_of(txns: list[Txn]) -> pd.DataFrame:
    """The frame of ``txns`` (what a probe records, and what tests write by hand)."""
    rows = []
    for t in txns:
        for i, (f, k, v) in enumerate(t.ops):
            rows.append((t.id, t.process, t.node, t.t0, t.t1 if math.isfinite(t.t1) else math.nan, t.outcome, i, f,
                         k, v if f == "append" else None,
                         (" ".join(map(str, v)) if v is not None else None) if f == "r" else None))
    frame = pd.DataFrame(rows, columns=list(HISTORY_COLUMNS))
    frame["value"] = frame["value"].astype("Int64")
    frame["read"] = frame["read"].astype("string")
    return frame
