"""Histories with a known answer, for tests and ``bench/``: ``strictly_serializable`` runs generated list-append
transactions one after another, inside time intervals that overlap as concurrent clients' do."""

from __future__ import annotations

import numpy as np

from benchlib.axes.history.checker.history import Txn

__all__ = ["strictly_serializable"]


def strictly_serializable(n: int, keys: int, seed: int, per_key: int = 32, clients: int = 20) -> list[Txn]:
    """``n`` transactions of 1-4 reads and appends over ``keys`` keys at a time (a key retired after ``per_key``
    appends and a new one put in its place, as Jepsen's list-append does: lists stay short), run one after another
    in the order of their numbers; each inside a time interval around its turn that overlaps others' (real time
    orders only what it must). A checker must find nothing in it."""
    rng = np.random.default_rng(seed)
    lists: dict[int, list[int]] = {}
    live, fresh, value = list(range(keys)), keys, 0
    out = []
    for i in range(n):
        ops: list[tuple] = []
        for _ in range(int(rng.integers(1, 5))):
            slot = int(rng.integers(0, keys))
            k = live[slot]
            if rng.random() < 0.5:
                ops.append(("r", k, tuple(lists.get(k, ()))))
            else:
                value += 1
                ops.append(("append", k, value))
                lists.setdefault(k, []).append(value)
                if len(lists[k]) >= per_key:
                    live[slot], fresh = fresh, fresh + 1
        turn = i * 1e-3
        out.append(Txn(i, i % clients, "n1", turn - float(rng.uniform(0, 5e-3)), turn + float(rng.uniform(0, 5e-3)),
                       "ok", ops))
    return out
