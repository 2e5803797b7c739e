"""Heartbeat lag on real labs: truth against a replica applier blocked for a known time."""

from __future__ import annotations

import time

import pytest

from benchlib.sampling.heartbeat import Heartbeat
from benchlib.sampling.probe import Sampler
from benchlib.schema import LAG
from tests.conftest import example_spec, lab_of


async_lab = lab_of("async-1p2r.toml", "t-hb")


@pytest.mark.measures  # 20 ms between what a reader saw and the replica's apply time: a busy machine spoils it (2
# clean clones in a row had one heartbeat 25.8 and 28.8 ms off in phase 2, beside the other process's lab tests)
def test_lag_truth_with_a_blocked_applier(async_lab):
    """async-3's SQL thread is stopped for 1.5 s: every heartbeat written meanwhile must show a lag of (restart time
    - its commit time) plus the time the replica then took to apply its backlog (its trigger's own apply time),
    to within 20 ms; async-2 keeps a small lag throughout."""
    hb = Heartbeat(async_lab.connect, "async-1", ["async-2", "async-3"], trigger_on={"async-2", "async-3"})
    hb.prepare()
    assert hb.triggers == {"async-2", "async-3"} and not hb.warnings
    sampler = Sampler(hb.probes).start()
    try:
        time.sleep(0.6)
        with async_lab.connect("async-3") as conn:
            conn.cursor().execute("STOP SLAVE SQL_THREAD")
            blocked_at = time.monotonic()
            time.sleep(1.5)
            conn.cursor().execute("START SLAVE SQL_THREAD")
            released_at = time.monotonic()
        deadline = time.monotonic() + 10
        while not hb.caught_up() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
    finally:
        sampler.stop()
    assert not sampler.errors
    df = LAG.validate(hb.frame(sampler.t0))
    assert df.lag_ms.notna().all(), "a heartbeat was never seen"
    assert (df.lag_low_ms.fillna(0) <= df.lag_ms).all()  # NaN: seen at a reader's very first poll

    far = df[df.node == "async-3"].copy()
    far["truth_ms"] = (released_at - sampler.t0 - far.t_commit_s) * 1000
    blocked = far[(far.t_commit_s > blocked_at - sampler.t0) & (far.t_commit_s < released_at - sampler.t0)]
    assert len(blocked) >= 12  # 1.5 s of heartbeats every 100 ms
    # the replica's own apply time, recorded by its trigger: nothing before the release, and the backlog of
    # about 15 durable commits applied right after it (each waits for its fsync: tens of ms on a busy machine)
    applied = blocked.apply_lag_ms - blocked.truth_ms
    assert (applied >= -20).all() and (applied <= 100).all(), applied.describe()
    # what the readers saw agrees with when the replica applied each heartbeat, to within the poll bracket
    midpoint = (blocked.lag_ms + blocked.lag_low_ms) / 2
    assert (midpoint - blocked.apply_lag_ms).abs().max() <= 20, (midpoint - blocked.apply_lag_ms).describe()
    assert (blocked.lag_low_ms <= blocked.truth_ms + 100).all() and (blocked.lag_ms >= blocked.truth_ms - 20).all()
    assert blocked.lag_ms.max() > 1300

    near = df[df.node == "async-2"]
    assert near.lag_ms.median() < 40 and near.apply_lag_ms.median() < 10


def test_heartbeat_on_galera_has_no_trigger_and_small_lag(labs):
    lab = labs.up(example_spec("galera-3.toml", "t-hbg"))
    hb = Heartbeat(lab.connect, "galera-1", ["galera-2", "galera-3"])
    hb.prepare()
    with Sampler(hb.probes) as sampler:
        time.sleep(1.2)
    df = hb.frame(sampler.t0)
    seen = df.dropna(subset=["lag_ms"])
    assert len(seen) >= 2 * 8 and seen.lag_ms.median() < 40
    assert df.apply_lag_ms.isna().all()
    with lab.connect("galera-2") as conn:
        with conn.cursor() as cur:
            cur.execute("SELECT COUNT(*) AS n FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'benchlib'")
            assert cur.fetchone()["n"] == 0


def test_trigger_creates_no_errant_gtid(async_lab):
    """The trigger and its table are created with the binary log off: replicas stay in strict GTID order."""
    with async_lab.connect("async-1") as conn:
        with conn.cursor() as cur:
            cur.execute("SELECT @@GLOBAL.gtid_binlog_pos AS p")
            primary = cur.fetchone()["p"]
    for node in ("async-2", "async-3"):
        with async_lab.connect(node) as conn:
            with conn.cursor() as cur:
                cur.execute("SELECT @@GLOBAL.gtid_binlog_pos AS b, @@GLOBAL.gtid_slave_pos AS s")
                row = cur.fetchone()
                assert row["b"] == row["s"] == primary  # nothing of the replica's own in its binary log


def test_a_heartbeat_a_replica_shows_before_the_writer_logged_its_commit_is_seen_not_lost():
    """The writer's commit returns, the replica applies it and a reader's first poll finds it, all before the writer
    logs the commit: the reader counts it seen (the heartbeat's own first seq is above what was there before), with
    a lag of 0, not a heartbeat never seen (the clean clone of 8587bb4 saw one, its lag "at least 304 ms")."""
    from benchlib.sampling.heartbeat import HeartbeatLog, HeartbeatReader

    class Replica:  # the replica's MAX(seq): a previous heartbeat's 4, then this one's 5
        top = 5

        def execute(self, sql):
            pass

        def fetchone(self):
            return (self.top,)

    clock = iter([1.0, 1.1, 1.2, 1.3]).__next__
    log = HeartbeatLog(base_seq=4)
    reader = HeartbeatReader(lambda node: None, "r", log, clock)
    reader.cur = Replica()
    reader.sample(0.0)  # at 1.0: seq 5 is on the replica; the writer logs it at 1.1
    log.commit(5, clock(), 0.0)
    reader.sample(0.0)  # at 1.2
    df = log.frame()
    assert df.seq.tolist() == [5] and df.lag_ms.tolist() == [0.0] and df.t_seen_s.tolist() == [1.0]


def test_stopping_right_after_a_commit_loses_no_heartbeat(async_lab):
    """The sampler stops a moment after a commit, before the poll it woke: the readers poll once more
    on the way out, so the last heartbeat is seen on every node in sync (it used to look lost)."""
    for _ in range(5):
        hb = Heartbeat(async_lab.connect, "async-1", ["async-2", "async-3"])
        hb.prepare()
        sampler = Sampler(hb.probes).start()
        try:
            time.sleep(0.25)
            before = hb.log.last_seq
            while hb.log.last_seq == before:
                time.sleep(0.0005)
        finally:
            sampler.stop()
        df = LAG.validate(hb.frame(sampler.t0))
        last = df[df.seq == df.seq.max()]
        assert set(last.node) == {"async-2", "async-3"}
        assert df.lag_ms.notna().all(), df[df.lag_ms.isna()]
