"""One measured sysbench run on a real lab: frames, catch-up, no secrets saved, watchdog, faults."""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from dataclasses import replace

import pytest

from benchlib.axes.probe.plan import ProbeVariant
from benchlib.axes.read_split.plan import ReadSplitVariant
from benchlib.campaign.run import execute_run
from benchlib.campaign.setup import prepare_dataset
from benchlib.lab import sql
from benchlib.sysbench.options import RunError, SysbenchOptions
from benchlib.store import RunWriter, read_run
from tests.conftest import example_spec, lab_of, paused_at

LONG_S = 60  # about how long this module's light tests take: phase 2 starts the longest first

OPTS = SysbenchOptions(workload="oltp_read_write", tables=2, table_size=2000, threads=4, time_s=4)


lab = lab_of("async-1p2r.toml", "t-run")


def writer(lab, tmp_path, run_id):
    return RunWriter(tmp_path, run_id, {"workload": OPTS.workload}, secrets=list(lab.creds.passwords.values()))


def test_a_run_end_to_end(lab, tmp_path):
    seen = []
    run = read_run(execute_run(lab, "async", OPTS, writer(lab, tmp_path, "r1"), on_interval=seen.append))
    m = run.manifest
    # bracketed; the single-threaded appliers of a busy 2-core host trail the 4 writers by seconds (3.6 s in CI,
    # the disk stalled 40% of the time): bounded by the load's own length, not by a figure of a quiet machine
    assert m.status == "ok" and 0 <= m.catch_up_low_s <= m.catch_up_s < 2 * OPTS.time_s
    # parsed live; sysbench sometimes leaves out its last report when the host is busy (measured as the unreported
    # tail in the analysis)
    assert len(seen) in (3, 4) and [iv.t_s for iv in seen] == [1.0, 2.0, 3.0, 4.0][:len(seen)]
    assert len(run.frames["intervals"]) == len(seen) and run.frames["histogram"]["count"].sum() == m.summary["events"]
    lag = run.frames["lag"]
    assert set(lag.node) == {"async-2", "async-3"} and lag.lag_ms.notna().mean() > 0.9
    assert {"trx_behind", "cpu_s", "rss_mib", "gtid_seq"} <= set(run.frames["cluster"].metric)
    assert m.server_variables["async-1"]["sync_binlog"] == "1"
    assert m.sysbench["threads"] == 4 and m.lab.topology == "async"
    # no password anywhere in the run folder, nor on sysbench's command line
    blob = b"".join(p.read_bytes() for p in run.path.rglob("*") if p.is_file())
    assert not any(pw.encode() in blob for pw in lab.creds.passwords.values())
    # audited after the catch-up: every node holds the write node's data and GTID position
    audit = m.audit
    assert audit["mismatches"] == [] and set(audit["checksums"]) == {"async-1", "async-2", "async-3"}
    assert set(audit["tables"]) == {"sbtest.sbtest1", "sbtest.sbtest2", "benchlib.heartbeat"}
    assert len({audit["positions"][n] for n in audit["nodes"]}) == 1 and audit["wait_s"] + audit["check_s"] < 1.0


def test_a_row_changed_on_a_replica_behind_replication_s_back_is_found_by_the_audit(lab, tmp_path):
    """A row changed on async-3 with its binary log off (nothing replicated, nothing in the GTID position): the
    audit after the run names the node and the table, and the run is invalid."""
    read_only = replace(OPTS, workload="oltp_read_only")
    change = "UPDATE sbtest.sbtest2 SET k = k {} 1 WHERE id = 7"
    with lab.connect("async-3") as conn:
        sql.execute(conn, "SET SESSION sql_log_bin = 0", change.format("+"))
    try:
        run = read_run(execute_run(lab, "async", read_only, writer(lab, tmp_path, "diverged")))
    finally:
        with lab.connect("async-3") as conn:
            sql.execute(conn, "SET SESSION sql_log_bin = 0", change.format("-"))
    m = run.manifest
    assert m.status == "invalid", m.reason
    assert m.reason.startswith("INVALID: async-3 differs from async-1 in sbtest.sbtest2 (CHECKSUM TABLE "), m.reason
    assert m.audit["mismatches"] == [m.reason.removeprefix("INVALID: ")]  # the position agrees: nothing else


def test_dataset_is_prepared_once_per_shape(lab):
    assert prepare_dataset(lab, "async-1", OPTS) is False  # prepared by the first run
    with lab.connect("async-1") as conn, conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) AS n FROM sbtest.sbtest2")
        assert cur.fetchone()["n"] == 2000


def test_a_hung_cluster_is_killed_by_the_watchdog(lab, tmp_path):
    """A global read lock on the primary once the load runs: commits stop, sysbench keeps printing 0 TPS."""
    conn = lab.connect("async-1")
    timers = []

    def lock() -> None:
        with conn.cursor() as cur:
            cur.execute("FLUSH TABLES WITH READ LOCK")
        time.sleep(5.0)
        conn.close()  # the lock goes with its session

    def lock_at_one_second(iv):
        if iv.t_s == 1.0:
            # in a thread of its own: FLUSH TABLES WITH READ LOCK waits for the statements in flight, and on a busy
            # host that took over 2 s; run here, it held up the reader of sysbench's lines (a silence, not a hang)
            timers.append(threading.Thread(target=lock, daemon=True))
            timers[0].start()

    t0 = time.monotonic()
    try:
        run = read_run(execute_run(lab, "async", SysbenchOptions(**{**OPTS.__dict__, "time_s": 30}),
                                   writer(lab, tmp_path, "hung"), stall_s=2, on_interval=lock_at_one_second))
    finally:
        for t in timers:
            t.join()
    assert run.manifest.status == "failed"
    assert run.manifest.reason.startswith("HUNG: no transaction completed for 2 s"), run.manifest.reason
    assert time.monotonic() - t0 < 20
    assert (run.path / "raw" / "sysbench.txt").exists()
    # the stalled seconds are in the partial frame (how many depends on where in a second the lock fell:
    # the watchdog counts 2 s without a commit, not 2 whole reporting intervals)
    tps = run.frames["intervals"].tps
    assert (tps == 0).sum() >= 1 and tps.iloc[-1] == 0


def test_sysbench_dying_mid_run_marks_the_run_failed(lab, tmp_path):
    def kill_soon(iv):
        if iv.t_s == 2.0:
            for pid_file in (lab.dir / "loads").glob("*.pid"):  # the load driver records its sysbench
                os.kill(int(pid_file.read_text().split()[0]), signal.SIGKILL)

    run = read_run(execute_run(lab, "async", SysbenchOptions(**{**OPTS.__dict__, "time_s": 20}),
                               writer(lab, tmp_path, "died"), on_interval=kill_soon))
    assert run.manifest.status == "failed" and "sysbench exited with -9" in run.manifest.reason
    assert "cluster" in run.frames  # what was sampled is kept
    assert len(run.frames["intervals"]) >= 2  # and the seconds sysbench reported before it died


def test_bad_options():
    with pytest.raises(RunError, match="unknown workload 'oltp_magic'"):
        SysbenchOptions(workload="oltp_magic")
    with pytest.raises(RunError, match="threads must be at least 1"):
        SysbenchOptions(threads=0)


@pytest.mark.parametrize("workload,rows", [("insert_single", 1), ("insert_batch", 7)])
def test_bundled_insert_workloads_commit_whole_batches_into_wide_tables(lab, tmp_path, workload, rows):
    opts = SysbenchOptions(workload=workload, tables=2, threads=2, time_s=2, rows_per_trx=rows)

    def count(node):
        with lab.connect(node) as conn, conn.cursor() as cur:
            cur.execute("SELECT (SELECT COUNT(*) FROM sbtest.benchlib_wide1) + "
                        "(SELECT COUNT(*) FROM sbtest.benchlib_wide2) AS n")
            return cur.fetchone()["n"]

    prepare_dataset(lab, "async-1", opts)
    before = count("async-1")
    run = read_run(execute_run(lab, "async", opts, writer(lab, tmp_path, workload)))
    assert run.manifest.status == "ok", run.manifest.reason
    trx = run.manifest.summary["transactions"]
    assert trx > 0 and count("async-1") - before == trx * rows  # every transaction inserted whole batches
    assert count("async-3") == count("async-1")  # caught up, as the run said
    assert run.frames["intervals"]["writes_per_s"].sum() > 0


def test_a_primary_killed_mid_run_is_named_as_the_cause(lab, tmp_path):
    """sysbench prints FATAL lines and '(last message repeated N times)' when its server dies: they parse, and
    the reason names the node that went down, not a parser complaint."""
    def kill_primary(iv):
        if iv.t_s == 2.0:
            os.kill(lab.pid("async-1"), signal.SIGKILL)

    try:
        run = read_run(execute_run(lab, "async", replace(OPTS, time_s=15), writer(lab, tmp_path, "primary"),
                                   on_interval=kill_primary))
    finally:
        lab.health.heal()
    reason = run.manifest.reason
    assert run.manifest.status == "failed" and reason.startswith("FAILED: async-1 went down during the run"), reason
    assert "unexpected line" not in reason
    assert len(run.frames["intervals"]) >= 2  # the seconds before the kill are kept


def test_a_frozen_node_is_named_within_seconds(fresh_labs, tmp_path):
    """A node that stops answering (SIGSTOP) fails the run naming it after stall_s, not after the catch-up
    timeout with 'replicas did not catch up'."""
    lab = fresh_labs.up(example_spec("galera-3.toml", "t-freeze"))
    pid = lab.pid("galera-2")
    frozen: list[float] = []

    def freeze(iv):
        if iv.t_s == 2.0 and not frozen:
            os.kill(pid, signal.SIGSTOP)
            frozen.append(time.monotonic())

    w = RunWriter(tmp_path, "frozen", {"workload": OPTS.workload}, secrets=lab.hooks.secrets())
    try:
        run = read_run(execute_run(lab, "galera", replace(OPTS, time_s=30), w, stall_s=4, catch_up_timeout=120,
                                   on_interval=freeze))
        took = time.monotonic() - frozen[0]
    finally:
        os.kill(pid, signal.SIGCONT)
    reason = run.manifest.reason
    assert run.manifest.status == "failed" and "galera-2 stopped answering" in reason, reason
    assert took < 20, f"the frozen node was named {took:.0f} s after it froze"


def test_a_node_that_refuses_queries_is_named_before_the_load(labs, tmp_path):
    """A Galera node outside a primary component refuses queries (error 1047); the run waits for it, then fails
    naming it, instead of an anonymous OperationalError from the dataset check."""
    from benchlib.systems import sql

    lab = labs.up(example_spec("galera-3.toml", "t-refuse"))
    with lab.connect("galera-3") as conn:
        sql.execute(conn, "SET GLOBAL wsrep_reject_queries = ALL")
    w = RunWriter(tmp_path, "refused", {"workload": OPTS.workload}, secrets=lab.hooks.secrets())
    try:
        t0 = time.monotonic()
        run = read_run(execute_run(lab, "galera", OPTS, w, sync_timeout=2))
        took = time.monotonic() - t0
    finally:
        with lab.connect("galera-3") as conn:
            sql.execute(conn, "SET GLOBAL wsrep_reject_queries = NONE")
    assert run.manifest.status == "failed" and took < 10
    assert run.manifest.reason == ("FAILED: galera-3 refused queries for 2 s before the load: WSREP has not yet "
                                      "prepared node for application use (error 1047)")


@pytest.mark.parametrize("setting", ["eventual", "causal"])
def test_a_replica_whose_sql_thread_stops_for_2_s_serves_stale_reads_unless_reads_are_causal(lab, tmp_path, setting):
    """async-3 applies nothing for 2 s in the middle of a run. Eventual reads: the stale-read probe finds stale reads
    there, about 2 s stale at worst, and at most a few milliseconds' worth on async-2. Causal reads
    (MASTER_GTID_WAIT for the writer's last GTID): no stale read anywhere, and async-3's reads show the wait."""
    from benchlib.sampling.stale_reads import ProbeOptions

    opts = replace(OPTS, workload="oltp_read_only", threads=2, time_s=6)
    with paused_at(2, 2.0, lambda: _sql_thread(lab, "STOP"), lambda: _sql_thread(lab, "START")) as pause:
        folder = execute_run(lab, "async", opts, writer(lab, tmp_path, f"stale-{setting}"), on_interval=pause,
                             axes={"probe": ProbeVariant(ProbeOptions(read_rate=20, consistency=setting))})
    run = read_run(folder)
    assert run.manifest.axis("probe")["consistency"] == setting
    assert run.manifest.status == "invalid" and "async-3" in run.manifest.reason  # its SQL thread stopped
    writes, reads = run.frames["probe_writes"], run.frames["probe_reads"]
    assert len(writes) >= 50 and (writes.error == "").all()  # 10 commits a second
    assert set(reads.node) == {"async-2", "async-3"} and (reads.error == "").all()
    by = reads.groupby("node")
    assert by.size()["async-2"] >= 100  # 20 reads a second on each replica (async-3's causal reads block 2 s)
    assert by.size()["async-3"] >= (100 if setting == "eventual" else 60)
    worst = by.staleness_ms.max()
    if setting == "eventual":
        assert 1500 < worst["async-3"] < 2600, worst
        assert by.stale.sum()["async-3"] >= 20
        # in sync: stale only for the moment it takes to apply a commit (138 ms once, on a host both cores of which
        # the demo test beside it kept busy), far from the stopped replica's 2 s
        assert worst["async-2"] < 500, worst
    else:
        # never older than the writer's last acknowledged commit when the read was sent (what the wait promises);
        # stale, by Jepsen's real-time definition, only against a commit another replica's read returned before the
        # writer's commit did (a few reads in a run under the suite's load, a few milliseconds stale)
        assert (reads.value >= reads.acked_seq).all(), reads[reads.value < reads.acked_seq]
        assert reads.staleness_ms.max() < 250 and reads.stale.mean() < 0.05, reads[reads.stale]
        assert 1500 < by.wait_ms.max()["async-3"] < 2600  # the reads waited out the pause instead
        assert by.wait_ms.median()["async-2"] < 50


def _sql_thread(lab, verb: str) -> None:
    with lab.connect("async-3") as conn:
        sql.execute(conn, f"{verb} SLAVE SQL_THREAD")


def test_a_read_split_reads_on_every_replica_beside_the_writers(lab, tmp_path):
    opts = replace(OPTS, workload="oltp_write_only", threads=2)
    run = read_run(execute_run(lab, "async", opts, writer(lab, tmp_path, "split"),
                               axes={"read_split": ReadSplitVariant(2)}))
    m = run.manifest
    assert m.status == "ok", m.reason
    reads = run.frames["read_intervals"]
    assert set(reads.node) == {"async-2", "async-3"} and (reads.groupby("node").size() >= 3).all()
    assert (reads[reads.t_s > 1].tps > 0).all() and (reads.writes_per_s == 0).all() and reads.threads.max() == 2
    assert (run.frames["intervals"].writes_per_s > 0).all()  # the writers wrote on the primary meanwhile
    split = m.axis("read_split")
    assert split["consistency"] == "eventual" and split["statements"] == [] and split["nodes"] == ["async-2", "async-3"]
    assert set(split["summary"]) == {"async-2", "async-3"} and split["summary"]["async-2"]["events"] > 0
    assert {"reads-async-2.txt", "reads-async-3.txt"} <= {p.name for p in (run.path / "raw").iterdir()}
    blob = b"".join(p.read_bytes() for p in run.path.rglob("*") if p.is_file())
    assert not any(pw.encode() in blob for pw in lab.creds.passwords.values())


def test_a_reader_that_fails_fails_the_run_at_once_naming_its_node(lab, tmp_path, monkeypatch):
    """The readers' sessions run the read consistency's statements first: one the server refuses stops the run
    within seconds, the reason naming the node and the server's error."""
    from benchlib.systems import consistency
    from benchlib.systems.consistency import ReadSetting

    refused = ReadSetting("bogus", "a statement the server refuses", reader=("SET SESSION no_such_variable = 1",),
                          waits=False)
    monkeypatch.setattr(consistency, "for_system", lambda system, name: refused)
    started = time.monotonic()
    folder = execute_run(lab, "async", replace(OPTS, workload="oltp_write_only", time_s=30),
                         writer(lab, tmp_path, "refused"), axes={"read_split": ReadSplitVariant(1)})
    run = read_run(folder)
    assert run.manifest.status == "failed" and time.monotonic() - started < 20
    assert re.search(r"^FAILED: the reads on async-[23] ended: .*no_such_variable", run.manifest.reason), \
        run.manifest.reason
