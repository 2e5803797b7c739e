"""Async and semi-sync MariaDB labs: real servers, real replication."""

from __future__ import annotations

import time

import pytest

from benchlib.errors import SettingError
from benchlib.lab import sql
from tests.conftest import example_spec, lab_of, kill9


def write_rows(lab, node, table: str, values: list[int]) -> None:
    with lab.connect(node) as conn:
        sql.execute(conn, "CREATE DATABASE IF NOT EXISTS sbtest",
                    f"CREATE TABLE IF NOT EXISTS sbtest.{table} (id INT PRIMARY KEY)")
        with conn.cursor() as cur:
            cur.executemany(f"INSERT INTO sbtest.{table} VALUES (%s)", [(v,) for v in values])


def rows_on(lab, node, table: str) -> list[int]:
    with lab.connect(node) as conn:
        return [r["id"] for r in sql.query(conn, f"SELECT id FROM sbtest.{table} ORDER BY id")]


def wait_caught_up(lab, primary, replicas, timeout=30) -> None:
    with lab.connect(primary) as conn:
        pos = sql.scalar(conn, "SELECT @@GLOBAL.gtid_binlog_pos")
    for r in replicas:
        with lab.connect(r) as conn:
            assert sql.scalar(conn, "SELECT MASTER_GTID_WAIT(%s, %s)", (pos, timeout)) == 0, f"{r} not caught up"


async_lab = lab_of("async-1p2r.toml", "t-async")


def test_status_shows_roles_and_threads(async_lab):
    status = {s.name: s for s in async_lab.health.status()}
    assert status["async-1"].role == "primary" and status["async-1"].up
    for r in ("async-2", "async-3"):
        assert status[r].role == "replica"
        assert status[r].detail["io_running"] == "Yes" and status[r].detail["sql_running"] == "Yes"
        assert status[r].pid and status[r].port


def test_write_on_primary_reads_back_on_every_replica(async_lab):
    write_rows(async_lab, "async-1", "t1", [1, 2, 3])
    wait_caught_up(async_lab, "async-1", ["async-2", "async-3"])
    for r in ("async-2", "async-3"):
        assert rows_on(async_lab, r, "t1") == [1, 2, 3]


def test_bench_account_reaches_primary_over_tcp(async_lab):
    with async_lab.connect("async-1", user="bench", tcp=True, database="sbtest") as conn:
        assert sql.scalar(conn, "SELECT CURRENT_USER()").startswith("bench@")


def test_runtime_parallel_apply_and_durability(async_lab):
    applied = async_lab.tuning.set({"parallel_threads": 4, "parallel_mode": "conservative", "durability": "relaxed"})
    assert applied["async"] == {"parallel_threads": 4, "parallel_mode": "conservative", "durability": "relaxed"}
    for r in ("async-2", "async-3"):
        with async_lab.connect(r) as conn:
            v = sql.global_variables(conn, ["slave_parallel_threads", "slave_parallel_mode", "sync_binlog",
                                            "innodb_flush_log_at_trx_commit"])
            assert v == {"slave_parallel_threads": "4", "slave_parallel_mode": "conservative", "sync_binlog": "0",
                         "innodb_flush_log_at_trx_commit": "2"}
        assert {s.name: s for s in async_lab.health.status()}[r].detail["sql_running"] == "Yes"
    write_rows(async_lab, "async-1", "t2", list(range(50)))
    wait_caught_up(async_lab, "async-1", ["async-2", "async-3"])
    assert rows_on(async_lab, "async-3", "t2") == list(range(50))
    async_lab.tuning.set({"parallel_threads": 0, "durability": "durable"})


def test_semisync_switched_on_and_off_at_runtime(async_lab):
    async_lab.tuning.set({"semisync": "on"})
    with async_lab.connect("async-1") as conn:
        before = int(sql.global_status(conn, "Rpl_semi_sync_master_yes_tx")["rpl_semi_sync_master_yes_tx"])
        st = sql.global_status(conn, "Rpl_semi_sync_master_")
        assert st["rpl_semi_sync_master_status"] == "ON"
        assert int(st["rpl_semi_sync_master_clients"]) == 2
    write_rows(async_lab, "async-1", "t3", [7])
    with async_lab.connect("async-1") as conn:
        after = int(sql.global_status(conn, "Rpl_semi_sync_master_yes_tx")["rpl_semi_sync_master_yes_tx"])
    assert after > before  # the commit waited for a replica's ack
    async_lab.tuning.set({"semisync": "off"})
    with async_lab.connect("async-1") as conn:
        assert sql.global_status(conn, "Rpl_semi_sync_master_status")["rpl_semi_sync_master_status"] == "OFF"


def test_bad_runtime_settings_are_refused(async_lab):
    with pytest.raises(SettingError, match="expects an integer from 0 to 16383"):
        async_lab.tuning.set({"parallel_threads": "many"})
    with pytest.raises(SettingError, match="is not a runtime setting"):
        async_lab.tuning.set({"fc_limit": 10})  # a Galera setting on an async lab
    with pytest.raises(SettingError, match="cannot change on a running lab"):
        async_lab.tuning.set({"replicas": 3})


def test_killed_replica_and_primary_heal_and_resume_from_gtid(async_lab):
    write_rows(async_lab, "async-1", "t4", [1])
    wait_caught_up(async_lab, "async-1", ["async-2", "async-3"])
    kill9(async_lab, "async-3")
    write_rows(async_lab, "async-1", "t4", [2, 3])  # written while the replica is down
    kill9(async_lab, "async-1")
    status = {s.name: s for s in async_lab.health.status()}
    assert not status["async-1"].up and not status["async-3"].up
    assert status["async-2"].up
    restarted = async_lab.health.heal()
    assert sorted(restarted) == ["async-1", "async-3"]
    write_rows(async_lab, "async-1", "t4", [4])
    wait_caught_up(async_lab, "async-1", ["async-2", "async-3"])
    assert rows_on(async_lab, "async-3", "t4") == [1, 2, 3, 4]
    with async_lab.connect("async-3") as conn:
        st = sql.slave_status(conn)
        assert st["Using_Gtid"] == "Slave_Pos" and st["Slave_SQL_Running"] == "Yes"


def test_heal_restores_runtime_settings(async_lab):
    async_lab.tuning.set({"parallel_threads": 2})
    kill9(async_lab, "async-2")
    async_lab.health.heal()
    with async_lab.connect("async-2") as conn:
        assert sql.scalar(conn, "SELECT @@GLOBAL.slave_parallel_threads") == 2
    async_lab.tuning.set({"parallel_threads": 0})


def test_up_on_existing_lab_heals_it(async_lab):
    from benchlib.lab.lab import LocalLab

    kill9(async_lab, "async-2")
    again = LocalLab.up(async_lab.spec)
    assert all(s.up for s in again.health.status())
    async_lab.tuning.refresh()


semisync_lab = lab_of("semisync-1p2r.toml", "t-semi")


def test_semisync_lab_is_ready_with_all_clients(semisync_lab):
    with semisync_lab.connect("semi-1") as conn:
        st = sql.global_status(conn, "Rpl_semi_sync_master_")
        v = sql.global_variables(conn, ["rpl_semi_sync_master_wait_point", "rpl_semi_sync_master_timeout"])
    assert st["rpl_semi_sync_master_status"] == "ON"
    assert int(st["rpl_semi_sync_master_clients"]) == 2
    assert v == {"rpl_semi_sync_master_wait_point": "AFTER_SYNC", "rpl_semi_sync_master_timeout": "10000"}
    t0 = time.monotonic()
    write_rows(semisync_lab, "semi-1", "s1", [1])
    assert time.monotonic() - t0 < 5  # no blocking for the timeout: replicas were attached first
    with semisync_lab.connect("semi-1") as conn:
        assert int(sql.global_status(conn, "Rpl_semi_sync_master_no_tx")["rpl_semi_sync_master_no_tx"]) == 0


def test_semisync_primary_heals_with_semisync_back_on(semisync_lab):
    kill9(semisync_lab, "semi-1")
    semisync_lab.health.heal()
    with semisync_lab.connect("semi-1") as conn:
        st = sql.global_status(conn, "Rpl_semi_sync_master_")
    assert st["rpl_semi_sync_master_status"] == "ON" and int(st["rpl_semi_sync_master_clients"]) == 2


def test_single_lab(labs):
    lab = labs.up(example_spec("single.toml", "t-single"))
    write_rows(lab, "solo-1", "x", [1, 2])
    assert rows_on(lab, "solo-1", "x") == [1, 2]
    [status] = lab.health.status()
    assert status.role == "single" and status.detail["gtid_binlog_pos"]


def test_recorded_settings_keep_the_order_they_were_made(async_lab):
    async_lab.tuning.set({"sync_binlog": 5})
    async_lab.tuning.set({"durability": "relaxed"})
    async_lab.tuning.set({"sync_binlog": 7})  # made last: must win when heal re-applies everything
    kill9(async_lab, "async-1")
    async_lab.health.heal()
    with async_lab.connect("async-1") as conn:
        assert sql.scalar(conn, "SELECT @@GLOBAL.sync_binlog") == 7
        assert sql.scalar(conn, "SELECT @@GLOBAL.innodb_flush_log_at_trx_commit") == 2
    async_lab.tuning.set({"durability": "durable"})


def test_heal_right_after_sigkill(async_lab):
    """No pause between kill and heal, as in a script: the dying node is seen as down and restarted."""
    import os
    import signal

    for _ in range(3):
        os.kill(async_lab.pid("async-2"), signal.SIGKILL)
        assert async_lab.health.heal() == ["async-2"]
        assert all(s.up for s in async_lab.health.status())


def test_a_campaign_that_chooses_its_keys_counts_where_the_writes_landed(async_lab, tmp_path):
    """Uniform keys put about 1% of the row writes on the hottest 1% of rows, sysbench's special about 76%: each
    share counted in async-1's binary log within 20% of what its distribution puts there, and said by the report."""
    from tests.axes.test_hot_rows import measured_where_the_writes_landed

    # 15 s runs: about 22,000 keys drawn at 4 threads, so that the hottest 1% under uniform keys gets about 225 of
    # them and 20% is about 3 standard deviations (6 s runs drew about 9,000: one clean clone of five measured 0.70%)
    records, said = measured_where_the_writes_landed(async_lab, tmp_path, "async-1p2r.toml", "async",
                                                     ["uniform", "special"], time_s=15)
    for keys, expected in (("uniform", 0.01), ("special:1:75", 0.76)):
        got = records[keys]
        assert got["node"] == "async-1" and got["distribution"] == keys and got["rows"] > 8000, got
        assert got["expected"] == pytest.approx(expected, abs=0.005)
        assert got["measured"] == pytest.approx(got["expected"], rel=0.2), got
    assert said["load"] == ["The load: oltp_write_only on 2 tables of 2,000 rows; keys: sysbench special, 75% of "
                            "accesses on 1% of rows (1 run); uniform, every row alike (1 run)."]
    assert any(x.startswith("async, keys uniform, every row alike: ") and "landed on the hottest 1% of rows (the "
               "distribution puts 1.0% there)" in x for x in said["hot_rows"]), said["hot_rows"]



def test_the_tpcc_like_mix_runs_as_specified_and_its_conditions_hold_on_every_node(async_lab, tmp_path):
    """tests/workloads/test_tpcc.py's checks on MariaDB: the mix, the rollbacks, the server's new orders, the
    consistency conditions on every node, and a district broken on a replica named by the audit."""
    from tests.workloads.test_tpcc import ran_tpcc_like

    ran_tpcc_like(async_lab, "async", tmp_path)


def test_a_row_the_tpcc_like_mix_needs_and_the_node_lacks_is_named_in_the_run_s_reason(async_lab, tmp_path):
    """The mix told of 3 warehouses on a dataset of 2: a Payment's customer in warehouse 3 is a row no node has. The
    run fails naming the query and that the dataset lacks the row, not with a script error on an empty result."""
    from benchlib.campaign.run import execute_run
    from benchlib.store import RunWriter, read_run
    from benchlib.sysbench.options import SysbenchOptions

    opts = SysbenchOptions(workload="tpcc_like", warehouses=2, scale=0.1, threads=1, time_s=20,
                           extra=("--warehouses=3",))
    secrets = list(async_lab.creds.passwords.values())
    m = read_run(execute_run(async_lab, "async", opts, RunWriter(tmp_path, "lacks", {}, secrets=secrets))).manifest
    assert m.status == "failed", m.reason
    assert "no row for SELECT" in m.reason and ("c_w_id = 3" in m.reason or "s_w_id = 3" in m.reason), m.reason
    assert "this node's dataset lacks it (prepare it again)" in m.reason and "nil value" not in m.reason, m.reason
