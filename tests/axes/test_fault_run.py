"""Fault runs on real labs: a killed Group Replication primary, an async primary killed and a replica promoted, a WAN
site's link cut and restored, and the ledger audit finding an acknowledged write that is gone."""

from __future__ import annotations

import subprocess
import tomllib

import pytest

from benchlib.axes.fault.run import execute_fault_run
from benchlib.axes.fault import FaultPlan
from benchlib.lab import sql
from benchlib.store import RunWriter, read_run
from benchlib.sysbench.options import SysbenchOptions
from tests.conftest import EXAMPLES, example_spec, lab_of, needs_root

LONG_S = 60  # about how long this module's light tests take: phase 2 starts the longest first

OPTS = SysbenchOptions(workload="oltp_write_only", tables=2, table_size=2000, threads=2, time_s=10, rate=100)


def plan(**kw) -> FaultPlan:
    base = dict(kind="kill", target="write_node", at_s=3.0, duration_s=3.0, promote=False, detect_s=0.5,
                write_rate=50.0, timeout_s=1.0, heal_timeout_s=180.0)
    base.update(kw)
    return FaultPlan(**base)


def writer(lab, tmp_path, run_id):
    return RunWriter(tmp_path, run_id, {"workload": OPTS.workload}, secrets=list(lab.creds.passwords.values()))


async_lab = lab_of("async-1p2r.toml", "t-fault")


def test_an_async_primary_killed_with_promotion_hands_the_writer_to_the_new_primary(async_lab, tmp_path):
    run = read_run(execute_fault_run(async_lab, "async", OPTS, writer(async_lab, tmp_path, "p1"), plan(promote=True)))
    m = run.manifest
    assert m.status == "ok", m.reason
    new = m.axis("fault").promotion["primary"]
    assert new in ("async-2", "async-3") and m.axis("fault").survivor == new
    steps = [s for s, _ in m.axis("fault").promotion["steps"]]
    assert steps[:2] == ["receivers stopped", "relay logs applied"] and f"{new} takes writes" in steps
    ledger = run.frames["ledger"]
    after = ledger[ledger.t_sent_s > m.axis("fault").happened_s + 0.1]
    assert (after[after.outcome == "acked"].node == new).sum() > 50  # the writer followed the promotion
    # async acknowledges before a replica has the write: what it loses (none, mostly; on a loaded host a write or two)
    # is only what was acknowledged in the moment before the kill, and the ledger counts each of them
    acked = ledger[ledger.outcome == "acked"]
    lost = acked[~acked.present.astype(bool)]
    assert m.axis("fault").ledger["lost"] == len(lost) <= 3, lost
    assert (lost.t_done_s > m.axis("fault").happened_s - 1.0).all(), lost
    events = run.frames["fault_events"]
    assert {"fault", "primary", "writer_moved", "load_restarted", "heal"} <= set(events.event)
    # healed: the original write node is the primary again, the promoted node its replica, the data identical
    assert "async-1 rebuilt from a copy of" in m.axis("fault").heal["how"][0] and not async_lab.health.broken()
    assert not m.audit["mismatches"]
    with async_lab.connect("async-2") as conn:
        row = sql.query(conn, "SHOW SLAVE STATUS")[0]
    assert row["Master_Port"] == async_lab.node("async-1").port and row["Slave_SQL_Running"] == "Yes"


def test_a_tpcc_like_load_follows_a_promotion_and_the_servers_new_orders_show_the_dip(async_lab, tmp_path):
    """The TPC-C-like mix under a kill of the write node with a promotion: its lines from both segments of the load,
    the districts read where the writes went, conditions 1-4 on every node after the heal, and the dip of the
    server's new orders: how low, when back at 95%, what it cost."""
    from types import SimpleNamespace

    from benchlib.axes.tpcc import TpccPlan
    from benchlib.axes.tpcc.analysis import dips
    from benchlib.campaign.run import RunEngine
    from benchlib.store import load_campaign

    opts = SysbenchOptions(workload="tpcc_like", warehouses=2, scale=0.1, threads=4, time_s=16)
    fault = plan(promote=True, at_s=6.0)
    w = RunWriter(tmp_path, "t1", {"cluster": "async", "workload": "tpcc_like", "threads": 4, **fault.params()},
                  secrets=list(async_lab.creds.passwords.values()))
    run = read_run(RunEngine(async_lab, "async", opts, w, axes={"fault": fault, "tpcc": TpccPlan()}).execute())
    m = run.manifest
    assert m.status == "ok", m.reason
    new, rec = m.axis("fault").promotion["primary"], m.axis("tpcc")
    assert rec["violations"] == [] and rec["checked_on"] == ["async-1", "async-2", "async-3"], rec
    happened = m.axis("fault").happened_s
    types = run.frames["tpcc_types"]
    assert types[types.t_s > happened + 1].committed.sum() > 0  # the segment on the new primary counted
    orders = run.frames["tpcc_orders"]
    assert set(orders.node) == {"async-1", new}, orders.node.unique()
    c = load_campaign(tmp_path)
    d = dips(SimpleNamespace(runs=c["runs"], frames=c)).iloc[0]
    assert d.nopm_before > 0 and d.nopm_lowest < 0.5 * d.nopm_before and d.dip_s > 0.5, d.to_dict()
    assert d.new_orders_lost == pytest.approx(d.dip_s * d.nopm_before / 60)
    assert not async_lab.health.broken()


def test_a_planned_switchover_moves_the_writes_and_loses_nothing_even_with_an_idle_transaction_open(async_lab, tmp_path):
    """kind = "switchover" with a transaction left open on the primary: the lab's controlled switch (read-only, the
    replicas caught up, async-2 promoted, the others following) moves the ledger writer, which writes as an
    application does (read_only refuses it on the old primary); nothing acknowledged is lost, the old primary holds
    nothing the new one lacks, and MariaDB's read_only does not wait for an idle transaction."""
    from benchlib.axes.fault.sequences import steps_of

    run = read_run(execute_fault_run(async_lab, "async", OPTS, writer(async_lab, tmp_path, "sw"), plan(
        kind="switchover", steps=steps_of("switchover", "write_node", 3.0), open_transaction=True,
        switchover_wait_s=3.0)))
    m = run.manifest
    assert m.status == "ok", m.reason
    f = m.axis("fault")
    assert f.switchover["primary"] == "async-2" and f.promotion["primary"] == "async-2", f.switchover
    steps = [s for s, _ in f.switchover["steps"]]
    assert steps[0].startswith("async-1 read-only") and steps[1:3] == ["replicas caught up", "async-2 takes writes"]
    # read_only waits for the transactions that wrote and have not committed; a writer's next statement waits for
    # read_only: on a slow disk the two meet (seen in a loaded suite run: the writers' 5 connections disconnected
    # after the 3 s wait, as the switch does); without that meeting, the switch is quick and the idle one stays open
    if steps[0] == "async-1 read-only":
        assert f.switchover["s"] < 2.0 and "still open" in f.switchover["open_transaction"], f.switchover
    else:
        assert "disconnected after 3 s" in steps[0] and f.switchover["s"] < 5.0, f.switchover
    assert f.ledger["lost"] == 0 and f.errant["count"] == 0, (f.ledger, f.errant)
    ledger = run.frames["ledger"]
    assert (ledger[(ledger.outcome == "acked") & (ledger.t_sent_s > f.happened_s + 0.5)].node == "async-2").all()
    assert "async-1 rebuilt from a copy of" in f.heal["how"][0] and not async_lab.health.broken()


def test_the_ledger_audit_reports_a_write_deleted_behind_the_labs_back_as_lost(async_lab, tmp_path):
    gone = []

    def tamper(lab, survivor):
        with lab.connect(survivor) as conn:  # not replicated: only the surviving primary loses it
            seq = sql.scalar(conn, "SELECT MAX(seq) FROM benchlib.ledger WHERE run = 'p2'")
            sql.execute(conn, "SET SESSION sql_log_bin = 0")
            with conn.cursor() as cur:
                cur.execute("DELETE FROM benchlib.ledger WHERE run = 'p2' AND seq = %s", (seq,))
        gone.append(int(seq))

    run = read_run(execute_fault_run(async_lab, "async", OPTS, writer(async_lab, tmp_path, "p2"),
                                     plan(target="replica"), before_audit=tamper))
    m = run.manifest
    assert m.status == "ok" and m.axis("fault").ledger["lost"] == 1 and m.axis("fault").ledger["lost_seqs"] == gone
    ledger = run.frames["ledger"]
    assert not ledger.loc[ledger.seq == gone[0], "present"].item()
    assert m.audit["mismatches"]  # the nodes differ in the ledger table: divergence, named


@pytest.mark.heavy  # a lab of its own and about a minute: the heavy lane balances the phase
def test_a_killed_group_replication_primary_records_the_elected_member_and_the_unavailability(labs, tmp_path):
    """... directly and through HAProxy, steered to the group's primary by benchlib's agent check. At a test size:
    the group expels the killed primary as soon as it suspects it (member_expel_timeout = 0: about 6 s after the
    kill, where the lab's 5 s gives about 21 s; data/campaigns/failover measures that), so a 25 s run holds it."""
    gr = tomllib.loads((EXAMPLES / "gr-3.toml").read_text())["clusters"]["gr"]
    gr["server"] = {"loose-group_replication_member_expel_timeout": 0}
    lab = labs.up(example_spec("gr-3.toml", "t-fgr", clusters={"gr": gr}))
    opts = SysbenchOptions(workload="oltp_write_only", tables=2, table_size=2000, threads=2, time_s=25, rate=100)
    run = read_run(execute_fault_run(lab, "gr", opts, writer(lab, tmp_path, "g1"), plan(proxy="haproxy")))
    m = run.manifest
    assert m.status == "ok", m.reason
    events = run.frames["fault_events"]
    elected = events[events.event == "primary"]
    assert len(elected) == 1 and elected.node.item() in ("gr-2", "gr-3") and m.axis("fault").survivor == elected.node.item()
    from benchlib.axes.fault.measures import measures
    from benchlib.store import load_campaign

    c = load_campaign(tmp_path)
    row = measures(c["runs"], c).iloc[0]
    assert 1 < row.unavailability_s < 20 and row.new_primary_node == elected.node.item()
    assert row.lost == 0 and "gr-1 by incremental recovery" in m.axis("fault").heal["how"][0]
    # behind the proxy: writes resumed once its agent named the new primary, none lost, nothing left running
    assert row.unavailability_s - 1 < row.haproxy_unavailability_s < 20 and row.haproxy_lost == 0
    assert m.axis("fault").ledger["via"]["haproxy"]["acked"] > 100 and m.axis("fault").proxy["kind"] == "haproxy"
    assert subprocess.run(["pgrep", "-f", "haproxy-gr.cfg"], capture_output=True).returncode == 1


@needs_root
def test_a_site_link_cut_and_restored(labs, tmp_path):
    lab = labs.up(example_spec("wan-semisync.toml", "t-fcut", sites={"far": {"nodes": ["semi-2"], "rtt_ms": 10}}))
    run = read_run(execute_fault_run(lab, "semi", OPTS, writer(lab, tmp_path, "c1"),
                                     plan(kind="cut", target="site:far", duration_s=2.0)))
    m = run.manifest
    assert m.status == "ok", m.reason
    ev = run.frames["fault_events"].set_index("event")
    assert ev.loc["fault", "detail"].startswith("cut the network link of site far")
    assert 1.8 < ev.loc["released", "t_s"] - ev.loc["fault", "t_s"] < 3.0
    site = lab.layout.sites["far"]
    link = subprocess.run(["ip", "-n", site.netns, "-o", "link", "show", site.tun], capture_output=True, text=True)
    assert "UP" in link.stdout.partition("<")[2].partition(">")[0].split(",")
    assert m.axis("fault").ledger["lost"] == 0 and not m.audit["mismatches"]  # the replica caught up once the link was back


def test_a_frozen_galera_node_stalls_the_cluster_until_released_and_is_back_after(labs, tmp_path):
    lab = labs.up(example_spec("galera-3.toml", "t-ffz"))
    run = read_run(execute_fault_run(lab, "galera", OPTS, writer(lab, tmp_path, "z1"),
                                     plan(kind="freeze", target="replica", duration_s=2.0)))
    m = run.manifest
    assert m.status == "ok", m.reason
    ev = run.frames["fault_events"].set_index("event")
    assert ev.loc["fault", "detail"] == "froze galera-3 (SIGSTOP)" and ev.loc["released", "detail"] == "SIGCONT"
    from benchlib.axes.fault.measures import measures
    from benchlib.store import load_campaign

    c = load_campaign(tmp_path)
    row = measures(c["runs"], c).iloc[0]
    # a silent member holds every commit until it answers again (or is evicted): about the freeze
    assert 1.0 < row.unavailability_s < 6 and row.lost == 0
    assert not lab.health.broken() and not [p for p in lab.health.check().problems if "galera" in p]


def test_a_heal_that_fails_marks_the_lab_broken_and_stops_the_fault_run(async_lab, tmp_path):
    from benchlib.campaign.folder import CampaignError

    cnf = async_lab.node("async-3").cnf
    good = cnf.read_text()
    cnf.write_text(good + "no_such_option_for_a_test = 1\n")  # async-3 cannot start again
    try:
        with pytest.raises(CampaignError, match="could not be healed after fault run b1"):
            execute_fault_run(async_lab, "async", OPTS, writer(async_lab, tmp_path, "b1"), plan(target="replica"))
        assert not (tmp_path / "b1").exists()  # no half-written run
        assert any(p.startswith("the last heal failed: ") and "async-3" in p for p in async_lab.health.broken())
    finally:
        cnf.write_text(good)
    async_lab.health.heal()
    assert async_lab.health.broken() == [] and async_lab.health.is_up("async-3")


def test_a_promotion_that_discards_relay_logs_loses_what_semi_sync_acknowledged_and_one_that_applies_them_none(
        labs, tmp_path):
    """Semi-sync AFTER_SYNC with one replica whose applier stops 2 s into the load (an applier error, say): its
    receiver goes on acknowledging the primary's writes once they are in its relay log. The primary is killed at 3 s
    and the lab promotes the replica. Thrown away with its relay log (what a hasty failover tool does), every write
    acknowledged since the applier stopped is lost; applied first (the applier started again), none is. Before the heal
    the old primary is started again and counted: discarded, everything the replica had not applied (sysbench's
    writes too) is errant there; applied, at most the few commits in flight at the kill."""
    semi = {"topology": "semisync", "replicas": 1, "wait_point": "AFTER_SYNC", "timeout_ms": 10000}
    lab = labs.up(example_spec("semisync-1p2r.toml", "t-frelay", clusters={"semi": semi}))

    stopped: list[str] = []

    def stop_the_applier(iv, lag):  # once: the load starts again on the promoted node, its seconds from 1 again
        if iv.t_s == 2 and not stopped:
            stopped.append(mode)
            with lab.connect("semi-2") as conn:
                sql.execute(conn, "STOP SLAVE SQL_THREAD")

    out, errant = {}, {}
    for mode in ("discard", "apply"):
        stopped.clear()
        run = read_run(execute_fault_run(lab, "semi", OPTS, writer(lab, tmp_path, mode),
                                         plan(promote=True, relay_logs=mode), on_second=stop_the_applier))
        m = run.manifest
        assert m.status == "ok", m.reason
        f = m.axis("fault")
        assert f.promotion["primary"] == "semi-2" and f.get("relay_logs") == (None if mode == "apply" else mode)
        out[mode] = (f.ledger["lost"], f.ledger["acked"], [s for s, _ in f.promotion["steps"]])
        errant[mode] = f.errant
        assert f.errant["node"] == "semi-1" and f.errant["against"] == "semi-2" and f.errant["restarted"], f.errant
        assert "errant" in set(run.frames["fault_events"].event)
    lost, acked, steps = out["discard"]
    assert errant["discard"]["count"] > lost and errant["discard"]["gtids"].startswith("0-"), errant
    assert errant["apply"]["count"] <= 5, errant  # AFTER_SYNC: the replica received all but what was in flight
    # about a second of acknowledged writes at 50/s; a writer on a loaded host falls behind (19 in a clean clone)
    assert 10 <= lost < acked, out
    assert steps[:2] == ["receivers stopped", "semi-2's relay log discarded with events it had not applied"], steps
    lost, acked, steps = out["apply"]
    assert lost == 0 and acked > 100 and steps[:2] == ["receivers stopped", "relay logs applied"], out
    assert not lab.health.broken()
