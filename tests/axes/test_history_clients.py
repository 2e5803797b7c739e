"""The history probe on real servers (benchlib.axes.history.run), checked by benchlib's isolation checker: known
truth on one MariaDB primary and its async replicas. Under REPEATABLE READ read-then-append transactions that do not
lock lose updates; under SERIALIZABLE none is lost and nothing else is seen, the refusals counted by error number;
under REPEATABLE READ with innodb_snapshot_isolation = ON no update is lost and no read skewed (the later writer
refused with 1020), and write skew (G2-item), which snapshot isolation allows, may be seen; reads from an async
replica miss writes completed before they began (stale reads: G-single-realtime) while reads from the primary do
not."""

from __future__ import annotations

import os
import time

import pytest

from benchlib.axes.history.checker import check
from benchlib.axes.history.run import HistoryOptions, HistoryProbe
from benchlib.sampling.probe import Sampler
from tests.conftest import lab_of

async_lab = lab_of("async-1p2r.toml", "t-hi")

#: transactions a configuration (BENCHLIB_HISTORY_TXNS: 20,000 for the issue's own figure)
TXNS = int(os.environ.get("BENCHLIB_HISTORY_TXNS", "3000"))


def _history(lab, nodes, *, read_only=(), until=TXNS, timeout=120.0, **options):
    opts = HistoryOptions(**{"clients": 6, "rate": 200.0, "keys": 4, **options})
    probe = HistoryProbe(lab.connect, "async-1", nodes, opts, time.monotonic, read_only=read_only, seed=1)
    probe.prepare()
    time.sleep(0.3)  # the table reaches the replicas
    sampler = Sampler(probe.probes).start()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and len({r[0] for r in probe.shared.rows}) < until:
            time.sleep(0.2)
    finally:
        sampler.stop()
    assert not sampler.errors, sampler.errors
    frame = probe.frame(sampler.t0)
    got = check(frame)
    refused = frame[frame.outcome == "fail"].drop_duplicates("txn").error.value_counts().to_dict()
    print(f"{opts.isolation} {opts.session} on {nodes}: {got.committed:,} committed, {got.failed:,} refused {refused}, "
          f"{got.unknown} unknown; found {({k: n for k, n in got.counts.items() if n})}")
    return frame, got


def test_repeatable_read_loses_updates_that_serializable_and_snapshot_isolation_refuse(async_lab):
    _, rr = _history(async_lab, ["async-1"])
    assert rr.counts["lost update"] > 0 and rr.counts["G-single"] > 0, rr.counts
    lost = next(e for e in rr.examples if e.kind == "lost update")
    assert "both read key" in lost.words and "both committed: a lost update" in lost.words, lost.words
    frame, got = _history(async_lab, ["async-1"], isolation="SERIALIZABLE",
                          session=("SET SESSION innodb_lock_wait_timeout = 2",))  # (the default 50 s stalls clients)
    assert got.committed >= 0.5 * TXNS and got.clean, {k: n for k, n in got.counts.items() if n}
    refused = frame[frame.outcome == "fail"].drop_duplicates("txn").error.value_counts().to_dict()
    assert got.failed and set(refused) <= {"1213", "1205"}, refused
    # snapshot isolation: no lost update, no read skew; write skew (G2-item) is what it allows
    frame, got = _history(async_lab, ["async-1"], session=("SET SESSION innodb_snapshot_isolation = ON",))
    seen = {k: n for k, n in got.counts.items() if n}
    assert got.committed >= 0.5 * TXNS and set(seen) <= {"G2-item", "G2-item-realtime"}, seen
    refused = frame[frame.outcome == "fail"].drop_duplicates("txn").error.value_counts().to_dict()
    assert refused.get("1020", 0) > 0 and set(refused) <= {"1020", "1213", "1205"}, refused


def test_reads_from_an_async_replica_are_stale_and_reads_from_the_primary_are_not(async_lab):
    # appends on the primary; a reader on each replica and one on the primary, read-only transactions
    nodes = ["async-1", "async-2", "async-1", "async-3", "async-1", "async-1"]
    frame, got = _history(async_lab, nodes, read_only=("async-2", "async-3"), keys=2, reads=0.3)
    stale = [e for e in got.examples if e.kind == "G-single-realtime"]
    assert got.counts["G-single-realtime"] > 0 and stale, got.counts
    on = frame.drop_duplicates("txn").set_index("txn").node
    assert all(any(on[t] in ("async-2", "async-3") for t in e.txns) for e in stale), [e.words for e in stale]
