"""Galera labs: formation without state transfer, runtime flow control, kill and IST rejoin."""

from __future__ import annotations

import time

import pytest

from benchlib.lab import sql
from benchlib.systems.galera.system import galera_number, provider_option
from tests.conftest import example_spec, lab_of, frozen_at, kill9
from tests.lab.test_async import rows_on, write_rows


# a long module (its lab comes up once): it runs in phase 2's heavy process, with the other long tests
pytestmark = pytest.mark.heavy

galera_lab = lab_of("galera-3.toml", "t-galera")


def wait_rows(lab, node, table, expected, timeout=10.0):
    deadline = time.monotonic() + timeout
    while True:
        try:
            got = rows_on(lab, node, table)
        except Exception:
            got = None
        if got == expected or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def test_cluster_synced_with_full_size(galera_lab):
    for s in galera_lab.health.status():
        assert s.up and s.role == "galera"
        assert s.detail["wsrep_state"] == "Synced" and s.detail["cluster_status"] == "Primary"
        assert s.detail["cluster_size"] == 3 and s.detail["ready"] == "ON"


def test_formed_without_state_transfer(galera_lab):
    for node in galera_lab.layout.nodes.values():
        log = node.error_log.read_text()
        assert "wsrep_sst_rsync" not in log, f"{node.name} ran a state transfer at formation"


def test_write_on_one_node_reads_back_everywhere(galera_lab):
    write_rows(galera_lab, "galera-1", "g1", [1, 2, 3])
    for n in ("galera-2", "galera-3"):
        assert wait_rows(galera_lab, n, "g1", [1, 2, 3]) == [1, 2, 3]
    write_rows(galera_lab, "galera-3", "g1", [4])  # any node takes writes
    assert wait_rows(galera_lab, "galera-1", "g1", [1, 2, 3, 4]) == [1, 2, 3, 4]


def test_flow_control_and_appliers_change_at_runtime(galera_lab):
    galera_lab.tuning.set({"fc_limit": 256, "fc_factor": 0.8, "applier_threads": 8, "durability": "relaxed"})
    for node in galera_lab.layout.nodes.values():
        with galera_lab.connect(node) as conn:
            opts = sql.scalar(conn, "SELECT @@GLOBAL.wsrep_provider_options")
            assert provider_option(opts, "gcs.fc_limit") == "256"
            assert float(provider_option(opts, "gcs.fc_factor")) == 0.8
            assert sql.scalar(conn, "SELECT @@GLOBAL.wsrep_slave_threads") == 8
            assert sql.scalar(conn, "SELECT @@GLOBAL.innodb_flush_log_at_trx_commit") == 2
    assert galera_lab.tuning.settings("galera") == {"fc_limit": 256, "fc_factor": 0.8, "applier_threads": 8,
                                              "durability": "relaxed"}
    galera_lab.tuning.set({"fc_limit": 4096})  # Galera shows it back as "4K"
    with galera_lab.connect("galera-2") as conn:
        assert galera_number(provider_option(sql.scalar(conn, "SELECT @@GLOBAL.wsrep_provider_options"),
                                             "gcs.fc_limit")) == 4096
    galera_lab.tuning.set({"fc_limit": 256})  # as the next test expects


@pytest.mark.parametrize("text,value", [("16", 16), ("4K", 4096), ("2M", 2 * 1024**2), ("0.5", 0.5)])
def test_galera_numbers(text, value):
    assert galera_number(text) == value


def test_killed_node_shows_down_then_rejoins_by_ist(galera_lab):
    victim = galera_lab.node("galera-2")
    kill9(galera_lab, victim.name)
    assert not {s.name: s for s in galera_lab.health.status()}["galera-2"].up
    write_rows(galera_lab, "galera-1", "g2", list(range(20)))  # missed by the dead node
    assert galera_lab.health.heal() == ["galera-2"]
    assert rows_on(galera_lab, "galera-2", "g2") == list(range(20))
    log = victim.error_log.read_text()
    assert "IST received" in log or "Receiving IST" in log, "rejoined without IST"
    for s in galera_lab.health.status():
        assert s.detail["cluster_size"] == 3 and s.detail["wsrep_state"] == "Synced"
    with galera_lab.connect(victim) as conn:  # runtime settings were restored on the restarted node
        assert provider_option(sql.scalar(conn, "SELECT @@GLOBAL.wsrep_provider_options"), "gcs.fc_limit") == "256"


def test_whole_cluster_killed_recovers_its_primary_component(galera_lab):
    write_rows(galera_lab, "galera-1", "g3", [1])
    kill9(galera_lab, *galera_lab.layout.nodes)
    assert not any(s.up for s in galera_lab.health.status())
    galera_lab.health.heal()
    for n in ("galera-1", "galera-2", "galera-3"):
        assert rows_on(galera_lab, n, "g3") == [1]
    status = galera_lab.health.status()
    assert all(s.detail["cluster_size"] == 3 for s in status)
    # positions were recovered from InnoDB (not restarted as undefined, which resets the seqno to 0)
    assert len({s.detail["last_committed"] for s in status}) == 1 and status[0].detail["last_committed"] > 0


def test_binlog_on_galera(labs):
    lab = labs.up(example_spec("galera-3.toml", "t-galbin", clusters={"g": {"topology": "galera", "binlog": True}}))
    with lab.connect("g-2") as conn:
        assert sql.scalar(conn, "SELECT @@GLOBAL.log_bin") == 1
        assert sql.scalar(conn, "SELECT @@GLOBAL.log_slave_updates") == 1
    write_rows(lab, "g-1", "b", [5])
    assert wait_rows(lab, "g-3", "b", [5]) == [5]


def test_a_run_during_which_a_node_leaves_the_primary_component_is_invalid(galera_lab, tmp_path):
    """galera-3 freezes for 7 s in the middle of a run (as a host that stalls, or a cut network, would): the others
    suspect it and carry on as a Primary component of 2, and galera-3, thawed, is out of it until it rejoins. The run
    is invalid, naming galera-3 and what the others saw; the node rejoins by IST."""
    from benchlib.campaign.run import execute_run
    from benchlib.store import RunWriter, read_run
    from benchlib.sysbench.options import SysbenchOptions

    opts = SysbenchOptions(workload="oltp_write_only", tables=1, table_size=1000, threads=2, time_s=14)
    with frozen_at(galera_lab.pid("galera-3"), 2, 7.0) as freeze:
        folder = execute_run(galera_lab, "galera", opts, RunWriter(tmp_path, "isolated", {},
                                                                   secrets=galera_lab.hooks.secrets()),
                             on_interval=freeze, stall_s=15, catch_up_timeout=30)
    m = read_run(folder).manifest
    assert m.status == "invalid", m.reason
    whats = {(b["node"], b["what"]) for b in m.breaches}
    assert ("galera-1", "saw the cluster at 2 of 3 nodes") in whats, m.breaches
    assert ("galera-3", "did not answer the sampler") in whats, m.breaches
    deadline = time.monotonic() + 60
    while not galera_lab.health.check().ok and time.monotonic() < deadline:
        time.sleep(0.5)
    assert galera_lab.health.check().ok, galera_lab.health.check().problems


def test_where_the_writes_landed_is_not_counted_on_a_node_without_a_binary_log(galera_lab, tmp_path):
    from tests.axes.test_hot_rows import measured_where_the_writes_landed

    records, said = measured_where_the_writes_landed(galera_lab, tmp_path, "galera-3.toml", "galera", ["uniform"],
                                                     time_s=3)
    assert records["uniform"]["why_not"] == "galera-1 keeps no binary log" and records["uniform"]["measured"] is None
    assert said["hot_rows"] == ["galera, keys uniform, every row alike: where the writes landed was not counted "
                                "(galera-1 keeps no binary log)"]



def test_writes_on_three_nodes_conflict_on_shared_rows_and_not_on_their_own(galera_lab, tmp_path):
    """One writer node: no conflict; three each on its own rows: none; three on the same 10 rows: conflicts on every
    node, and on every node a server counter equal to the errors its clients saw (tests/axes/test_writers.py)."""
    from tests.axes.test_writers import measured_writers

    result, a, records = measured_writers(galera_lab, tmp_path, "galera-3.toml", "galera")
    one, shared, own = records[(1, "shared")], records[(3, "shared")], records[(3, "disjoint")]
    assert one["client"]["galera-1"]["errors"] == 0 and one["server"]["galera-1"]["wsrep_local_cert_failures"] == 0
    assert sum(c["errors"] for c in own["client"].values()) == 0, own
    assert sum(s["wsrep_local_cert_failures"] for s in own["server"].values()) == 0, own
    for node in ("galera-1", "galera-2", "galera-3"):
        assert shared["client"][node]["committed"] > 0 and shared["client"][node]["errors"] > 0, shared
        assert shared["client"][node]["e1213"] == shared["client"][node]["errors"], shared  # Galera's conflicts: 1213
        # the node's Handler_rollback equals what its clients saw; its certification failures and brute-force
        # aborts overlap (their sum exceeds it): neither alone nor both count the clients' errors
        assert "Handler_rollback" in shared["reconciled"][node], shared
        server = shared["server"][node]
        assert server["wsrep_local_cert_failures"] + server["wsrep_local_bf_aborts"] > server["Handler_rollback"]
    said = a.axis("writers").findings
    assert any(s.startswith("galera, 3 writer nodes on shared keys") and "conflicts per 1,000 commits" in s
               for s in said), said
    q = a.axis("writers").queues  # per writer node: the share of the load flow control paused it, its receive queue
    three = q[(q.writer_nodes == 3) & (q.writer_keys == "shared")]
    assert sorted(three.node) == ["galera-1", "galera-2", "galera-3"] and three.paused.between(0, 1).all(), q
    assert any("flow control paused them" in s for s in said), said
    assert any(s.startswith("galera, 3 writer nodes each on its own keys") and "no conflict" in s for s in said), said


def test_retried_conflicts_complete_the_work_of_one_writer_node_and_given_up_ones_are_the_work_lost(galera_lab,
                                                                                                  tmp_path):
    """An open loop of 300 transactions a second on the same 10 rows (the same logical work, whoever writes it): on
    one writer node, and on three retrying every transaction the servers roll back, the same work commits (the rate,
    within an arrival's noise) and every transaction sysbench started committed; with no retry, what the three
    nodes' conflicts cost is the transactions given up: committed + given up = sysbench's events, and it is less."""
    from tests.axes.test_writers import measured_writers

    def counted(rec):
        c = rec["client"].values()
        return (sum(x["committed"] for x in c), sum(x["given_up"] for x in c), sum(x["errors"] for x in c),
                int(rec["summary"]["events"]))

    _, _, kept = measured_writers(galera_lab, tmp_path / "kept", "galera-3.toml", "galera",
                                  writers='nodes = [1, 3]\nkeys = ["shared"]', rates="[300]")
    _, _, lost = measured_writers(galera_lab, tmp_path / "lost", "galera-3.toml", "galera",
                                  writers='nodes = [3]\nretry = 0', rates="[300]")
    (one, none1, _, events1), (three, none3, errors3, events3) = counted(kept[(1, "shared")]), counted(
        kept[(3, "shared")])
    assert none1 == none3 == 0 and one == events1 and three == events3 and errors3 > 0, kept
    # each within a fifth of the work offered (300 a second for 4 s). At 600 a second the 6 threads' open loop fell
    # behind on a loaded 2-core host (a commit over 10 ms: 1,796 and 1,970 of 2,400 on one writer node in two clean
    # clones): the rate is half that, so the threads keep up and the comparison is of work, not of the host
    assert all(0.8 * 300 * 4 < x < 1.2 * 300 * 4 for x in (one, three)), (one, three)
    committed, given_up, errors, events = counted(lost[(3, "shared")])
    assert given_up == errors > 0 and committed + given_up == events, lost


def test_the_tpcc_like_mix_on_three_writer_nodes_is_counted_by_node(galera_lab, tmp_path):
    """The TPC-C-like mix on three writer nodes, each on its own home warehouse: every node's commits and errors
    counted by the clients (the New-Orders rolled back on purpose are no commits), and the same as the mix's own
    count of what committed."""
    from benchlib.store import load_campaign
    from tests.axes.test_writers import measured_writers

    result, _, records = measured_writers(
        galera_lab, tmp_path, "galera-3.toml", "galera", time_s=3, writers='nodes = [3]\nkeys = ["disjoint"]',
        load='workloads = ["tpcc_like"]\nthreads = [3]\nwarehouses = 3\nwarehouse_scale = 0.02')
    rec = records[(3, "disjoint")]
    assert sorted(rec["client"]) == ["galera-1", "galera-2", "galera-3"], rec
    assert all(c["committed"] > 0 for c in rec["client"].values()), rec
    mix = load_campaign(result.path)["tpcc_types"]
    assert sum(c["committed"] for c in rec["client"].values()) == int(mix.committed.sum()), (rec, mix)
