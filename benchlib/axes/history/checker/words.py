"""An anomaly in words: each step of its cycle, what the transactions did, and the class it makes."""

from __future__ import annotations

from benchlib.axes.history.checker.graph import RT, RW, WR, WW, Inferred

__all__ = ["edge", "counted", "cycle_words", "lost_update_words", "MEANING"]

#: how a count of each kind reads, one and several ("27 lost updates"); a cycle class is its name ("165 G-single")
NOUNS = {"lost update": ("lost update", "lost updates"), "G1a": ("aborted read (G1a)", "aborted reads (G1a)"),
         "G1b": ("intermediate read (G1b)", "intermediate reads (G1b)"),
         "internal": ("transaction inconsistent with itself", "transactions inconsistent with themselves"),
         "incompatible-order": ("read no order explains", "reads no order explains"),
         "duplicate": ("value read twice", "values read twice"),
         "garbage": ("value no transaction appended", "values no transaction appended")}


def counted(n: int, kind: str) -> str:
    """'27 lost updates', '1 lost update', '165 G-single'."""
    one, many = NOUNS.get(kind, (kind, kind))
    return f"{n:,} {one if n == 1 else many}"


MEANING = {
    "G0": "a write cycle: each transaction's append came after the other's",
    "G1c": "circular information flow: each transaction saw the other's effects",
    "G-single": "a cycle with one anti-dependency (read skew): a transaction missed a write that depends on it",
    "G2-item": "a cycle of anti-dependencies (write skew): each transaction missed another's write",
    "lost update": "two transactions read the same version of a key and both appended to it",
    "G1a": "an aborted read: a committed transaction read what a failed one wrote",
    "G1b": "an intermediate read: a transaction read a state another left only in the middle of its own",
    "internal": "a transaction that did not read its own writes",
    "incompatible-order": "reads of one key that no single order of its appends explains",
    "duplicate": "a value read twice in one list",
    "garbage": "a value no transaction appended",
}
for _k in ("G0", "G1c", "G-single", "G2-item"):
    MEANING[_k + "-realtime"] = MEANING[_k] + ", once real time is counted (a stale read)"


def _list(v) -> str:
    """A list read, its first value and last three when it is longer than five: '[13, …, 80, 84, 85]'."""
    v = list(v)
    shown = v if len(v) <= 5 else [v[0], "…", *v[-3:]]
    return "[" + ", ".join(map(str, shown)) + "]"


def edge(inf: Inferred, a: int, b: int, kind: int) -> str:
    """What makes ``a`` come before ``b`` by an edge of ``kind``."""
    why = inf.why.get((a, b, kind), ())
    if kind == WW and why:
        k, x, y = why
        return f"T{a} appended {x} to key {k} and T{b} the next value, {y}"
    if kind == WR and why:
        k, v = why
        return f"T{b} read key {k} as {_list(v)}, whose last value T{a} appended"
    if kind == RW and why:
        k, v, nxt = why
        return f"T{a} read key {k} as {_list(v)}, without the {nxt} that T{b} appended next"
    if kind == RT:
        return f"T{a} completed before T{b} began"
    return f"T{a} comes before T{b}"


def cycle_words(inf: Inferred, kind: str, steps: list[tuple[int, int, int]]) -> str:
    """'T3 read key 1 as [1], without the 2 that T4 appended next; T4 appended 2 ... : G-single (...)'."""
    said = "; ".join(edge(inf, a, b, k) for a, b, k in steps)
    return f"{said}: {kind}, {MEANING.get(kind, '')}"


def lost_update_words(inf: Inferred, key: int, version: int | None, txns: list[int]) -> str:
    """'T12 and T15 both read key 3 as [1, 2] and appended to it (5, 6); both committed: a lost update'."""
    order = inf.orders.get(key, ())
    seen = order[:order.index(version) + 1] if version in order else ((version,) if version is not None else ())
    appended = "; ".join(", ".join(map(str, inf.txns[x].appends(key))) for x in txns)
    names = ", ".join(f"T{x}" for x in txns[:-1]) + f" and T{txns[-1]}"
    every = "all" if len(txns) > 2 else "both"
    return (f"{names} {every} read key {key} as {_list(seen)} and appended to it ({appended}); {every} committed: "
            "a lost update")
