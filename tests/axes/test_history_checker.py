"""The isolation checker (benchlib.axes.history.checker) on hand-written list-append histories, one per anomaly class,
the valid ones found clean, and on a generated strictly serializable history of 100,000 transactions: no false
alarm."""

from __future__ import annotations

import math

import pytest

from benchlib.axes.history.checker import KINDS, Txn, check, frame_of
from benchlib.axes.history.checker.simulate import strictly_serializable
from benchlib.axes.history.checker.history import HistoryError


def T(id, *ops, outcome="ok", t0=0.0, t1=100.0, process=None):  # noqa: N802 - a transaction, as histories are written
    """A transaction; by default every one overlaps every other (no real-time order)."""
    parsed = []
    for op in ops:
        f, k, v = op.split(" ", 2) if op.count(" ") >= 2 else (*op.split(" "), "")
        parsed.append(("r", int(k), tuple(int(x) for x in v.strip("[]").replace(",", " ").split()))
                      if f == "r" else ("append", int(k), int(v)))
    return Txn(id, process if process is not None else id, "n1", t0, t1, outcome, parsed)


def found(txns, **kw):
    got = check(frame_of(txns), **kw)  # through the frame, as a recorded history is read
    return {k: n for k, n in got.counts.items() if n}, got


def test_a_write_cycle_is_g0():
    counts, got = found([T(1, "append 1 1", "append 2 1"), T(2, "append 1 2", "append 2 2"),
                         T(3, "r 1 [1,2]", "r 2 [2,1]")])
    assert counts == {"G0": 2}  # T1 -> T2 on key 1, T2 -> T1 on key 2: each closes the cycle
    words = next(e.words for e in got.examples if e.kind == "G0")
    assert "appended 1 to key 1 and T2 the next value, 2" in words and "a write cycle" in words, words


def test_each_reading_the_other_is_g1c():
    counts, got = found([T(1, "append 1 1", "r 2 [1]"), T(2, "append 2 1", "r 1 [1]")])
    assert counts == {"G1c": 2}
    assert "whose last value T1 appended" in next(e.words for e in got.examples if e.kind == "G1c")


def test_read_skew_is_g_single():
    counts, got = found([T(1, "append 1 1", "append 2 1"), T(2, "append 1 2", "append 2 2"),
                         T(3, "r 1 [1]", "r 2 [1,2]"), T(4, "r 1 [1,2]")])
    assert counts == {"G-single": 1}
    words = next(e.words for e in got.examples if e.kind == "G-single")
    assert words.startswith("T3 read key 1 as [1], without the 2 that T2 appended next; ") and "read skew" in words


def test_write_skew_is_g2_item():
    counts, _ = found([T(1, "r 1 []", "r 2 []", "append 1 1"), T(2, "r 1 []", "r 2 []", "append 2 1"),
                       T(3, "r 1 [1]", "r 2 [1]")])
    assert counts == {"G2-item": 2}


def test_two_appends_after_reading_the_same_version_are_a_lost_update_and_its_g_single():
    counts, got = found([T(1, "append 1 1"), T(2, "r 1 [1]", "append 1 2"), T(3, "r 1 [1]", "append 1 3"),
                         T(4, "r 1 [1,2,3]")])
    assert counts == {"lost update": 1, "G-single": 1}
    lost = next(e for e in got.examples if e.kind == "lost update")
    assert lost.txns == (2, 3)
    assert lost.words == "T2 and T3 both read key 1 as [1] and appended to it (2; 3); both committed: a lost update"


def test_reading_what_a_failed_transaction_appended_is_g1a():
    counts, _ = found([T(1, "append 1 1", outcome="fail"), T(2, "r 1 [1]")])
    assert counts == {"G1a": 1}


def test_reading_the_middle_of_another_transaction_is_g1b():
    counts, _ = found([T(1, "append 1 1", "append 1 2"), T(2, "r 1 [1]"), T(3, "r 1 [1,2]")])
    assert counts == {"G1b": 1}


def test_a_transaction_that_does_not_see_its_own_append_is_internally_inconsistent():
    counts, _ = found([T(0, "append 1 1"), T(1, "r 1 [1]", "append 1 2", "r 1 [1]"), T(2, "r 1 [1,2]")])
    assert counts == {"internal": 1}


def test_reads_no_order_explains_are_incompatible():
    counts, _ = found([T(1, "append 1 1"), T(2, "append 1 2"), T(3, "r 1 [1,2]"), T(4, "r 1 [2,1]")])
    assert counts["incompatible-order"] == 1


def test_a_read_that_missed_a_write_completed_before_it_began_is_a_stale_read():
    stale = [T(1, "append 1 1", t0=0, t1=1), T(2, "r 1 []", t0=2, t1=3), T(3, "r 1 [1]", t0=4, t1=5)]
    counts, got = found(stale)
    assert counts == {"G-single-realtime": 1}
    words = next(e.words for e in got.examples if e.kind == "G-single-realtime")
    assert "T1 completed before T2 began" in words and "stale read" in words, words
    counts, _ = found([T(1, "append 1 1", t0=0, t1=2), T(2, "r 1 []", t0=1, t1=3), T(3, "r 1 [1]", t0=4, t1=5)])
    # concurrent: no anomaly
    assert counts == {}


def test_an_unknown_outcome_counts_once_a_read_saw_it_and_not_otherwise():
    counts, got = found([T(1, "append 1 1", outcome="info", t1=math.inf), T(2, "r 1 [1]"),
                         T(3, "append 1 9", outcome="info", t1=math.inf), T(4, "append 2 1", outcome="fail")])
    assert counts == {} and (got.committed, got.unknown, got.failed) == (1, 2, 1)


def test_a_serial_history_is_clean_and_its_rates_have_upper_bounds():
    txns, lists = [], {}
    for i in range(200):
        k = i % 3
        txns.append(T(i, f"r {k} [{','.join(map(str, lists.get(k, [])))}]", f"append {k} {i}", t0=i, t1=i + 0.5))
        lists.setdefault(k, []).append(i)
    counts, got = found(txns)
    assert counts == {} and got.clean
    rate, low, high = got.rate("lost update")
    assert rate == 0 and low == 0 and high == pytest.approx(1e5 * (1 - 0.025 ** (1 / 200)), rel=1e-6)
    assert list(got.table().kind) == list(KINDS)


def test_a_generated_strictly_serializable_history_raises_no_alarm():
    got = check(strictly_serializable(5_000, 20, seed=60))
    assert got.committed == 5_000 and got.clean, {k: n for k, n in got.counts.items() if n}


@pytest.mark.long
def test_a_generated_strictly_serializable_history_of_100000_transactions_raises_no_alarm():
    got = check(frame_of(strictly_serializable(100_000, 200, seed=61)))
    assert got.committed == 100_000 and got.clean, {k: n for k, n in got.counts.items() if n}


def test_the_same_history_with_one_read_made_stale_shows_exactly_that():
    """A strictly serializable history, and one read in it given the list its key held 3 appends earlier: the
    checker finds that read's anomaly and nothing else."""
    txns = strictly_serializable(5_000, 20, seed=62)
    t = next(t for t in txns[2_000:] if any(f == "r" and len(v) > 4 for f, _, v in t.ops))
    j, (_, k, v) = next((j, op) for j, op in enumerate(t.ops) if op[0] == "r" and len(op[2]) > 4)
    t.ops[j] = ("r", k, v[:-3])
    counts, got = found(txns)
    assert set(counts) <= {"G-single", "G-single-realtime", "G2-item", "G2-item-realtime"} and counts, counts
    assert all(t.id in e.txns for e in got.examples), got.examples


def test_a_history_frame_without_its_columns_gets_one_message():
    frame = frame_of([T(1, "append 1 1")]).drop(columns=["outcome"])
    with pytest.raises(HistoryError, match="lacks the column"):
        check(frame)


def test_counts_and_long_lists_read_well():
    from benchlib.axes.history.checker.words import _list, counted

    assert counted(27, "lost update") == "27 lost updates" and counted(1, "lost update") == "1 lost update"
    assert counted(1, "internal") == "1 transaction inconsistent with itself"
    assert counted(165, "G-single") == "165 G-single"
    assert _list(range(1, 10)) == "[1, …, 7, 8, 9]" and _list([1, 2]) == "[1, 2]"
