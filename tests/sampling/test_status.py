"""Cluster-state probes on real labs: replication positions, Galera flow-control counters, processes."""

from __future__ import annotations

import time

import pytest

from benchlib.campaign.sampling import build_sampling
from benchlib.sampling.status import StatusLog, gtid_seq
from benchlib.schema import CLUSTER
from tests.conftest import example_spec
from tests.lab.test_async import write_rows


def test_counters_that_go_down_are_flagged_as_resets():
    log = StatusLog()
    for t, v in enumerate([5, 7, 3, 4]):
        log.add(float(t), "n1", "wsrep_flow_control_sent", v, counter=True)
        log.add(float(t), "n1", "wsrep_local_recv_queue", 10 - v)  # a gauge may go anywhere
    df = CLUSTER.validate(log.frame())
    counter = df[df.metric == "wsrep_flow_control_sent"]
    assert counter.reset.tolist() == [False, False, True, False]
    assert not df[df.metric == "wsrep_local_recv_queue"].reset.any()


@pytest.mark.parametrize("pos, seq", [("0-1-42", 42), ("1-2-7,0-1-42", 42), ("", 0), ("1-2-7", None)])
def test_gtid_seq(pos, seq):
    assert gtid_seq(pos) == seq


@pytest.fixture(scope="module")
def lab(labs):
    return labs.up(example_spec("demo.toml", "t-status"))


def metric(df, node, name):
    return df[(df.node == node) & (df.metric == name)].sort_values("t_s")


def test_replication_backlog_and_galera_flow_control(lab):
    with lab.connect("async-3") as conn:
        conn.cursor().execute("STOP SLAVE SQL_THREAD")
    sampling = build_sampling(lab)
    for hb in sampling.heartbeats.values():
        hb.prepare(timeout=1)  # async-3 is stopped: it cannot receive the heartbeat table
    sampling.sampler.start()
    assert sampling.warnings and sampling.warnings[0].startswith("async-3: the heartbeat table had not replicated")
    try:
        for writer in ("async-1", "galera-1"):
            write_rows(lab, writer, "st", [0])
            with lab.connect(writer) as conn, conn.cursor() as cur:
                for i in range(1, 41):  # 40 transactions (executemany would make one)
                    cur.execute("INSERT INTO sbtest.st VALUES (%s)", (i,))
        time.sleep(0.8)
        with lab.connect("async-3") as conn:
            conn.cursor().execute("START SLAVE SQL_THREAD")
        assert sampling.wait_caught_up(20) is not None
        time.sleep(0.6)
    finally:
        sampling.stop()
    assert not sampling.sampler.errors
    df = CLUSTER.validate(sampling.cluster_frame())
    behind = metric(df, "async-3", "trx_behind").value
    # the backlog built up, then drained (the sampler's heartbeat writes on: one may be on its way at the last poll)
    assert behind.max() >= 40 and behind.iloc[-1] <= 1 and behind.iloc[-5:].min() == 0
    assert metric(df, "async-2", "trx_behind").value.iloc[-5:].min() == 0
    assert metric(df, "async-2", "sql_running").value.iloc[-1] == 1
    for node in ("galera-1", "galera-2", "galera-3"):
        names = set(df[df.node == node].metric)
        assert {"wsrep_flow_control_paused_ns", "wsrep_flow_control_sent", "wsrep_flow_control_recv",
                "wsrep_local_recv_queue", "wsrep_local_send_queue", "wsrep_local_cert_failures",
                "wsrep_local_bf_aborts", "seqno_behind", "cpu_s", "rss_mib"} <= names
        committed = metric(df, node, "wsrep_last_committed").value
        assert committed.iloc[-1] - committed.iloc[0] >= 40
    assert metric(df, "async-1", "rpl_semi_sync_master_status").value.iloc[-1] == 0
    assert (metric(df, "galera-2", "rss_mib").value > 50).all()


def test_server_counters_process_and_host_metrics_every_second(lab):
    """Every node's chosen SHOW GLOBAL STATUS counters, its process's CPU, context switches and I/O, and the host's
    CPU, disks and network, in one run's frame; 40 commits on galera-1 show up in its counters."""
    sampling = build_sampling(lab, ["galera"])
    for hb in sampling.heartbeats.values():
        hb.prepare(timeout=10)
    sampling.sampler.start()
    try:
        time.sleep(1.2)
        write_rows(lab, "galera-1", "ctr", [0])
        with lab.connect("galera-1") as conn, conn.cursor() as cur:
            for i in range(1, 41):
                cur.execute("INSERT INTO sbtest.ctr VALUES (%s)", (i,))
        time.sleep(2.2)
    finally:
        sampling.stop()
    assert not sampling.sampler.errors
    df = CLUSTER.validate(sampling.cluster_frame())
    for node in ("galera-1", "galera-2", "galera-3"):
        names = set(df[df.node == node].metric)
        assert {"Com_insert", "Handler_write", "Innodb_data_fsyncs", "Innodb_os_log_written", "Bytes_received",
                "Threads_running", "cpu_user_s", "cpu_sys_s", "ctx_voluntary", "ctx_involuntary", "io_write_bytes",
                "threads"} <= names
    inserted = metric(df, "galera-1", "Com_insert").value
    assert inserted.iloc[-1] - inserted.iloc[0] >= 40
    applied = metric(df, "galera-2", "Handler_write").value  # applied by replication, not a statement
    assert applied.iloc[-1] - applied.iloc[0] >= 40
    assert not metric(df, "galera-1", "Threads_running").counter.any() and metric(df, "galera-1", "Com_insert").counter.all()
    host = df[df.node.str.startswith("host:")]
    assert {"cpu.all.user_s", "cpu.cpu1.idle_s", "load.1m", "net.lo.tx_bytes"} <= set(host.metric)
    assert host.node.nunique() == 1 and len(metric(host, host.node.iloc[0], "cpu.all.user_s")) >= 3
