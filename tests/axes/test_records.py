"""Each axis's entry of a run's manifest is typed by the axis's own record: validated when the run is written
(a bad one is refused, naming the run) and read back typed."""

from __future__ import annotations

import pytest

from benchlib.axis import AXES
from benchlib.axes.stall import StallRecord
from benchlib.store import RunWriter, StoreError, read_manifest

STALL = {"node": "async-3", "at_s": 5.0, "duration_s": 5.0, "how": "STOP REPLICA SQL_THREAD", "started_s": 5.2,
         "ended_s": 10.2, "held_s": 5.0}


def test_the_stall_entry_is_written_and_read_as_its_record(tmp_path):
    done = RunWriter(tmp_path, "r001", {"stall_s": 5.0}).finish(axes={"stall": STALL})
    m = read_manifest(done)
    stall = AXES.lookup("stall").recorded(m)
    assert isinstance(stall, StallRecord) and stall.node == "async-3" and stall.held_s == 5.0
    assert AXES.lookup("stall").facts(stall) == {"stalled_node": "async-3", "stalled_for_s": 5.0,
                                                 "stalled_from_s": 5.2, "stalled_to_s": 10.2}
    assert AXES.lookup("stall").recorded({"axes": {"stall": None}}) is None


def test_an_entry_its_record_refuses_is_not_written(tmp_path):
    w = RunWriter(tmp_path, "r002", {})
    with pytest.raises(StoreError, match="r002: its manifest does not validate: axes.stall.node: Field required"):
        w.finish(axes={"stall": {k: v for k, v in STALL.items() if k != "node"}})
    with pytest.raises(StoreError, match="r002: its manifest has an entry of axis 'nope', which is not registered"):
        w.finish(axes={"nope": {"x": 1}})
    w.abandon()


@pytest.mark.parametrize("name", ["probe", "read_split", "fault", "stall"])
def test_every_axis_that_records_something_has_a_typed_record(name):
    assert AXES.lookup(name).record is not None


def test_a_semisync_primary_is_watched_until_it_was_lost_and_no_longer():
    """semisync_summary: the fallback and the commits without an ack count from the fault until the write node was
    lost (a switchover's end: the old primary goes on as a replica, whose semi-sync status says nothing of it)."""
    from benchlib.axes.fault.run_records import semisync_summary
    from benchlib.sampling.status import StatusLog

    log = StatusLog()
    for t in range(0, 30):
        log.add(float(t), "semi-1", "semisync_status", 0.0 if t >= 20 else 1.0)  # off 10 s after a switchover at 10
        log.add(float(t), "semi-1", "semisync_no_tx", float(max(0, t - 20) * 25), counter=True)
    switched = semisync_summary(log, "semi-1", 9.5, 10.2, 0.0)
    assert switched == {"on_at_fault": True, "fell_back_s": None, "fell_back_at_s": None, "no_ack_commits": 0}
    killed = semisync_summary(log, "semi-1", 9.5, 9.5, 0.0)  # lost at the fault itself: watched to the end
    assert killed["fell_back_s"] == 20 - 9.5 and killed["no_ack_commits"] == 225
