"""A lost host on real servers: the write node cut off from its replicas while its client still reaches it, then
killed, and a replica promoted (examples/labs/host-loss.toml, every node in a namespace of its own). Async loses what it
acknowledged during the cut, and the ledger names those writes; semi-sync AFTER_SYNC with a timeout longer than the
cut loses none; with a shorter one it falls back to async, and from then on loses too; AFTER_COMMIT acknowledges
nothing it loses, but lets another client read what the failover then loses."""

from __future__ import annotations

import dataclasses
import tomllib

import pytest

from benchlib.axes.fault import FaultPlan
from benchlib.axes.fault.run import execute_fault_run
from benchlib.axes.fault.sequences import steps_of
from benchlib.lab import isolation
from benchlib.store import RunWriter, read_run
from benchlib.sysbench.options import SysbenchOptions
from tests.conftest import EXAMPLES, example_spec, needs_root

LONG_S = 90  # about how long this module's light tests take: phase 2 starts the longest first

#: 12 s: after the release (7.5 s) the writer has a few seconds on the new primary, also when the machine is busy
OPTS = SysbenchOptions(workload="oltp_write_only", tables=2, table_size=2000, threads=2, time_s=12, rate=100)
CUT_S = 4.0  # the write node's cut before the kill


def _lab(*clusters: str, name: str = "t-hl"):
    data = tomllib.loads((EXAMPLES / "host-loss.toml").read_text())
    keep = {f"{c}-{i}" for c in clusters for i in range(1, 4)}
    return example_spec("host-loss.toml", name, clusters={c: data["clusters"][c] for c in clusters},
                        sites={s: v for s, v in data["sites"].items() if set(v["nodes"]) <= keep})


@pytest.fixture(scope="module")
def lab(labs):
    return labs.up(_lab("async", "semi", "semifast", "semicommit"))


def _host_loss(lab, tmp_path, cluster: str, run_id: str):
    plan = FaultPlan("host_loss", "write_node", at_s=3.0, duration_s=CUT_S, promote=True, detect_s=0.5,
                     write_rate=50.0, timeout_s=1.0, heal_timeout_s=180.0, steps=steps_of("host_loss", "", CUT_S))
    writer = RunWriter(tmp_path, run_id, {"workload": OPTS.workload}, secrets=list(lab.creds.passwords.values()))
    run = read_run(execute_fault_run(lab, cluster, OPTS, writer, plan))
    assert run.manifest.status == "ok", run.manifest.reason
    return run


@needs_root
def test_async_loses_the_writes_it_acknowledged_while_cut_off_and_the_ledger_names_them(lab, tmp_path):
    run = _host_loss(lab, tmp_path, "async", "hl1")
    m, ledger, events = run.manifest, run.frames["ledger"], run.frames["fault_events"]
    isolate, kill, release = m.axis("fault").steps_done
    assert (isolate["do"], kill["do"], release["do"]) == ("isolate", "kill", "release")
    for step in m.axis("fault").steps_done:  # each step started when it was planned, to the scheduler's tick
        assert 0 <= step["started_s"] - step["planned_s"] < 0.5 and step["started_s"] <= step["done_s"], step
    assert kill["planned_s"] - isolate["planned_s"] == CUT_S
    # the client stayed beside async-1 through the cut and had its writes acknowledged there
    cut = ledger[(ledger.t_sent_s > isolate["done_s"] + 0.1) & (ledger.t_done_s < kill["done_s"] - 0.1)]
    # (at its 50/s, less what a loaded host costs the writer: 74% of the rate in a suite run on a slow disk)
    assert (cut.outcome == "acked").all() and (cut.node == "async-1").all() and len(cut) >= 0.6 * 50 * (CUT_S - 0.2)
    new = m.axis("fault").promotion["primary"]
    assert new in ("async-2", "async-3") and m.axis("fault").survivor == new
    assert events.event.tolist().count("fault") == 2 and "released" in set(events.event)
    # ... which were lost: absent from the promoted replica, named by sequence number
    lost = ledger[(ledger.outcome == "acked") & ~ledger.present.astype(bool)]
    assert m.axis("fault").ledger["lost"] == len(lost) >= len(cut) and m.axis("fault").ledger["lost_seqs"][:5] == sorted(lost.seq)[:5]
    assert (lost.node == "async-1").all() and lost.t_sent_s.min() >= isolate["done_s"] - 1.0
    after = ledger[(ledger.t_sent_s > release["done_s"] + 1.0) & (ledger.outcome == "acked")]
    assert len(after) and (after.node == new).all() and after.present.astype(bool).all()
    assert m.axis("fault").semisync is None  # async runs no semi-sync
    assert m.axis("fault").ledger["reads_of_lost"] > 0  # a client beside it read writes that the failover then lost
    assert not lab.health.broken() and not isolation.leftovers(lab.layout) and not m.audit["mismatches"]


@needs_root
def test_semisync_after_sync_with_a_timeout_longer_than_the_cut_loses_nothing(lab, tmp_path):
    run = _host_loss(lab, tmp_path, "semi", "hl2")
    m, ledger = run.manifest, run.frames["ledger"]
    isolate = m.axis("fault").steps_done[0]
    assert m.axis("fault").ledger["lost"] == 0 and m.axis("fault").ledger["acked"] > 100
    cut = ledger[(ledger.t_sent_s > isolate["done_s"] + 0.1) & (ledger.t_sent_s < m.axis("fault").steps_done[1]["done_s"])]
    assert len(cut) and not (cut.outcome == "acked").any()  # the commits waited for an ack that could not come
    assert m.axis("fault").semisync["on_at_fault"] and m.axis("fault").semisync["fell_back_s"] is None and m.axis("fault").semisync["no_ack_commits"] == 0
    reads = run.frames["ledger_reads"]
    assert m.axis("fault").ledger["reads"] > 100 and m.axis("fault").ledger["reads_of_lost"] == 0 and not reads.lost.dropna().astype(bool).any()


@needs_root
def test_semisync_after_commit_acknowledges_nothing_it_loses_but_lets_a_client_read_what_the_failover_loses(
        lab, tmp_path):
    """AFTER_COMMIT commits in the engine before it waits for the ack: the writer's commit times out (unknown, never
    acknowledged, so never counted lost), but a reader beside it already sees it, and the promoted replica lacks it."""
    run = _host_loss(lab, tmp_path, "semicommit", "hl4")
    m, reads = run.manifest, run.frames["ledger_reads"]
    assert m.axis("fault").ledger["lost"] == 0 and m.axis("fault").semisync["fell_back_s"] is None
    assert m.axis("fault").ledger["reads_of_lost"] > 0
    seen = reads[reads.lost.astype("boolean").fillna(False)]
    # read once the cut was under way: the isolate takes effect before its command returns (done_s), so a read can
    # see a write committed after the cut a fraction of a millisecond before the step is recorded done
    assert (seen.t_done_s >= m.axis("fault").steps_done[0]["planned_s"]).all() and (seen.node == "semicommit-1").all()


@needs_root
def test_semisync_with_a_timeout_shorter_than_the_cut_falls_back_and_loses_what_it_acknowledged_after(lab, tmp_path):
    run = _host_loss(lab, tmp_path, "semifast", "hl3")
    m, ledger = run.manifest, run.frames["ledger"]
    fell = m.axis("fault").semisync["fell_back_s"]
    assert m.axis("fault").semisync["on_at_fault"] and fell is not None and 1.5 < fell < 3.5  # its timeout is 2 s
    assert m.axis("fault").semisync["no_ack_commits"] > 0
    assert m.axis("fault").ledger["lost"] > 0
    lost = ledger[(ledger.outcome == "acked") & ~ledger.present.astype(bool)]
    assert lost.t_done_s.min() >= m.axis("fault").steps_done[0]["done_s"] + 1.5  # acknowledged once semi-sync had given up


@pytest.fixture(scope="module")
def group(labs):
    return labs.up(_lab("gr", name="t-hlgr"))


@needs_root
def test_a_group_replication_primary_cut_off_from_its_group_stops_acknowledging_at_once(group, tmp_path):
    """Its client still reaches it, but a commit needs the majority: nothing is acknowledged from the cut on (within
    the writer's 1 s timeout), nothing acknowledged is lost, and the group takes it back once the cut ends (8 s: before
    the expulsion, about 21 s with member_expel_timeout = 5). How soon is TCP's: the members' connections retransmit
    with a doubling timeout through the cut, so the first commit after it came 0.5-9 s later here, and once more than 19 s
    later on a loaded machine (the run leaves 34 s after the cut for it)."""
    plan = FaultPlan("isolation", "write_node", at_s=3.0, duration_s=8.0, promote=False, detect_s=0.5,
                     write_rate=50.0, timeout_s=1.0, heal_timeout_s=180.0, steps=steps_of("isolation", "", 8.0))
    writer = RunWriter(tmp_path, "gri", {"workload": OPTS.workload}, secrets=list(group.creds.passwords.values()))
    run = read_run(execute_fault_run(group, "gr", dataclasses.replace(OPTS, time_s=45), writer, plan))
    m, ledger = run.manifest, run.frames["ledger"]
    assert m.status == "ok", m.reason
    cut, back = m.axis("fault").steps_done[0]["done_s"], m.axis("fault").steps_done[1]["done_s"]
    acked = ledger[ledger.outcome == "acked"]
    # no commit without the majority: nothing acknowledged from the cut (and the writer's timeout) to its end; a write
    # sent within the timeout before the release can be acknowledged just after it (seen 0.16 s after)
    during = acked[(acked.t_done_s > cut + plan.timeout_s) & (acked.t_done_s < back)]
    assert during.empty, during
    # every write sent during the cut and done before its release went unacknowledged; one still in flight at the
    # release may be acknowledged after it (a write whose connection was made again first: sent 1.5 s before the
    # release by the ledger's clock, which counts the reconnection, acknowledged 0.85 s after it, on a loaded VM)
    cut_writes = ledger[(ledger.t_sent_s > cut + 0.2) & (ledger.t_done_s < back)]
    assert len(cut_writes) and cut_writes.outcome.isin(["unknown", "failed"]).all(), cut_writes
    assert (ledger[ledger.t_sent_s > cut].node == "gr-1").all()  # the client stayed beside it
    after = acked[acked.t_sent_s > back]
    assert after.shape[0] > 25, (back, after.t_sent_s.min(), m.axis("fault").ledger)  # acknowledged again once the cut ended
    assert m.axis("fault").ledger["lost"] == 0 and not group.health.broken()


@needs_root
def test_a_lost_group_primary_sends_nothing_after_its_loss_and_the_group_elects_within_its_bound(group, tmp_path):
    """Killed while cut off, a lost host's queued messages must not reach the group once the cut ends (its namespace's
    sockets are closed first): the survivors suspect it from the cut on and elect a new primary about 5 + 1 + 15 s
    later (member_expel_timeout = 5), not a suspicion period after a late "reachable again"."""
    plan = FaultPlan("host_loss", "write_node", at_s=3.0, duration_s=3.0, promote=False, detect_s=0.5,
                     write_rate=50.0, timeout_s=1.0, heal_timeout_s=180.0, steps=steps_of("host_loss", "", 3.0))
    writer = RunWriter(tmp_path, "grl", {"workload": OPTS.workload}, secrets=list(group.creds.passwords.values()))
    run = read_run(execute_fault_run(group, "gr", dataclasses.replace(OPTS, time_s=30), writer, plan))
    m, events, ledger = run.manifest, run.frames["fault_events"], run.frames["ledger"]
    assert m.status == "ok", m.reason
    cut = m.axis("fault").steps_done[0]["done_s"]
    elected = events[events.event == "primary"].t_s
    assert len(elected) and 15 < float(elected.min()) - cut < 26, events  # 5 + 1 + 15 s, give or take the ticks
    assert m.axis("fault").ledger["lost"] == 0 and (ledger[ledger.outcome == "acked"].t_sent_s > cut + 15).any()


@needs_root
def test_survivors_without_the_majoritys_last_writes_are_not_forced_on_the_group(group, tmp_path):
    """gr-3 is cut off; gr-1 and gr-2 (the majority) commit without it; both are then lost. The survivor gr-3 is in a
    minority and lacks those commits: forcing the group to it would drop them, and gr-1 and gr-2 could never join
    again. The heal forms the group again around a member that has them, and gr-3 catches up."""
    from benchlib.lab import sql
    from tests.conftest import kill9

    isolation.isolate(group.layout, "gr-3")
    try:
        with group.connect("gr-1") as conn:
            sql.execute(conn, "CREATE DATABASE IF NOT EXISTS benchlib",
                        "CREATE TABLE IF NOT EXISTS benchlib.majority (id INT PRIMARY KEY)",
                        "REPLACE INTO benchlib.majority VALUES (1)")
        kill9(group, "gr-1", "gr-2")
        for node in ("gr-1", "gr-2"):
            isolation.forget(group.layout, node)  # lost hosts: nothing they queued reaches gr-3 afterwards
    finally:
        isolation.release(group.layout, "gr-3")
    assert sorted(group.health.heal(timeout=180)) == ["gr-1", "gr-2"]
    said = " ".join(group.health.heal_report())
    assert "the group formed again around gr-1" in said, said
    status = {s.name: s.detail for s in group.health.status() if s.cluster == "gr"}
    assert {d["member_state"] for d in status.values()} == {"ONLINE"} and status["gr-1"]["member_role"] == "PRIMARY"
    with group.connect("gr-3") as conn:
        assert sql.scalar(conn, "SELECT COUNT(*) FROM benchlib.majority") == 1
