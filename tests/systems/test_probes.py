"""The SQL and parsers of each system's probes (``benchlib.systems``: dialect, mysql, group_replication, semisync,
aurora, privileges), for systems that cannot run here, on result rows in the shapes the manuals document
(MySQL 8.0/8.4 reference manual, Galera and PXC docs, Aurora user guide); MariaDB's on a live lab elsewhere."""

from __future__ import annotations

import pytest

from benchlib.systems import dialect, privileges, semisync
from benchlib.systems.aurora import system as aurora
from benchlib.systems.mysql import system as mysql
from benchlib.systems.group_replication import system as gr
from benchlib.systems.dialect import ServerKind
from benchlib.systems.mysql.system import ApplierState


@pytest.mark.parametrize("variables,system,version", [
    ({"version": "10.11.19-MariaDB-0+deb12u1-log", "version_comment": "Debian 12"}, "mariadb", (10, 11, 19)),
    ({"version": "10.11.19-MariaDB", "version_comment": "Debian 12", "wsrep_on": "ON"}, "mariadb_galera", (10, 11, 19)),
    ({"version": "8.0.36", "version_comment": "MySQL Community Server - GPL"}, "mysql", (8, 0, 36)),
    ({"version": "8.4.3", "version_comment": "MySQL Community Server - GPL",
      "group_replication_group_name": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"}, "mysql", (8, 4, 3)),
    ({"version": "8.0.35-27.1", "version_comment": "Percona XtraDB Cluster (GPL), Release rel27, Revision 2f8eed2",
      "wsrep_on": "ON"}, "pxc", (8, 0, 35)),
    ({"version": "5.7.44-48", "version_comment": "Percona Server (GPL), Release 48"}, "percona", (5, 7, 44)),
    ({"version": "8.0.32", "version_comment": "Source distribution", "aurora_version": "3.05.2"}, "aurora", (8, 0, 32)),
])
def test_version_detection_picks_the_system(variables, system, version):
    k = dialect.detect(variables)
    assert (k.system, k.version) == (system, version)
    assert k.group_replication == bool(variables.get("group_replication_group_name"))


def test_statements_follow_the_version():
    old, new, maria = ServerKind("mysql", (5, 7, 44)), ServerKind("mysql", (8, 4, 3)), ServerKind("mariadb", (10, 11, 19))
    assert dialect.replica_status_sql(old) == "SHOW SLAVE STATUS" and dialect.seconds_behind_column(old) == "Seconds_Behind_Master"
    assert dialect.replica_status_sql(new) == "SHOW REPLICA STATUS" and dialect.seconds_behind_column(new) == "Seconds_Behind_Source"
    assert dialect.binary_log_status_sql(new) == "SHOW BINARY LOG STATUS"
    assert dialect.binary_log_status_sql(ServerKind("mysql", (8, 0, 36))) == "SHOW MASTER STATUS"
    assert dialect.replica_status_sql(maria) == "SHOW REPLICA STATUS" and dialect.seconds_behind_column(maria) == "Seconds_Behind_Master"
    with pytest.raises(dialect.ProbeError, match="cannot read a server version"):
        dialect.detect({"version": "banana"})


def _worker(wid, state="ON", io="ON", now=1000.5, applying=0.0, applied=0.0, end=0.0, queued="u:10", queued_end=1000.4):
    return {"WORKER_ID": wid, "SERVICE_STATE": state, "IO_STATE": io, "NOW_TS": now, "APPLYING_ICT": applying,
            "APPLIED_ICT": applied, "APPLIED_END": end, "LAST_QUEUED": queued, "QUEUED_END": queued_end}


def test_mysql8_lag_from_performance_schema_follows_the_four_cases():
    state = ApplierState()
    # a worker applying: now - the oldest applying commit timestamp
    rows = [_worker(1, applying=1000.2, applied=999.9, end=1000.1), _worker(2, applying=1000.3)]
    assert mysql.mysql8_lag_us(rows, state) == pytest.approx(300_000)
    # nothing applying, new transactions queued since the last poll: end of apply - commit of the last applied
    rows = [_worker(1, applied=1000.35, end=1000.45, queued="u:11"), _worker(2, applied=1000.30, end=1000.40,
                                                                              queued="u:11")]
    assert mysql.mysql8_lag_us(rows, state) == pytest.approx(100_000)
    # idle, nothing new: 0
    assert mysql.mysql8_lag_us(rows, state) == 0.0
    # the SQL thread stopped: lag grows as now - the last end of apply
    stopped = [_worker(1, state="OFF", now=1010.45, applied=1000.35, end=1000.45, queued="u:11")]
    assert mysql.mysql8_lag_us(stopped, state) == pytest.approx(10_000_000)
    assert mysql.mysql8_lag_us([], state) is None


@pytest.mark.parametrize("text,count", [
    ("", 0), (None, 0), ("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", 5),
    ("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7:9-10,\n8a94f357-aab4-11df-86ab-c80aa9429562:3", 9),
    ("3e11fa47-71ca-11e1-9e33-c80aa9429562:bench:1-100", 100),
])
def test_gtid_subtract_backlogs_are_counted(text, count):
    assert mysql.gtid_count(text) == count


def test_group_replication_member_stats():
    row = {"MEMBER_HOST": "gr2", "MEMBER_PORT": 3306, "MEMBER_STATE": "ONLINE", "MEMBER_ROLE": "SECONDARY",
           "COUNT_TRANSACTIONS_IN_QUEUE": 12, "COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE": 1351,
           "COUNT_TRANSACTIONS_CHECKED": 80211, "COUNT_TRANSACTIONS_REMOTE_APPLIED": 78800,
           "COUNT_TRANSACTIONS_LOCAL_PROPOSED": 0, "COUNT_CONFLICTS_DETECTED": 3}
    s = gr.group_member_stats(row)
    assert s["backlog"] == 1363 and s["conflicts"] == 3


def test_galera_provider_options_read_back():
    from benchlib.systems.galera.system import galera_number, provider_option

    text = "base_port = 4567; gcs.fc_limit = 4K; gcs.fc_factor = 1.0; gcs.fc_single_primary = NO"
    assert provider_option(text, "gcs.fc_limit") == "4K" and galera_number("4K") == 4096
    assert provider_option(text, "gcs.fc_single_primary") == "NO" and provider_option(text, "gcs.nope") is None


@pytest.mark.parametrize("prefix", ["Rpl_semi_sync_source_", "Rpl_semi_sync_master_"])
def test_semisync_status_under_both_names(prefix):
    s = semisync.status_of({f"{prefix}status": "ON", f"{prefix}clients": "1", f"{prefix}yes_tx": "4410",
                         f"{prefix}no_tx": "2", f"{prefix}tx_avg_wait_time": "101233", f"{prefix}wait_sessions": "31"})
    assert s == {"status": 1.0, "clients": 1.0, "yes_tx": 4410.0, "no_tx": 2.0, "avg_wait_us": 101233.0,
                 "wait_sessions": 31.0}
    assert semisync.status_of({"Uptime": "5"}) == {}


def test_aurora_replica_lag_leaves_the_writer_out():
    rows = [{"SERVER_ID": "writer-1", "SESSION_ID": "MASTER_SESSION_ID", "REPLICA_LAG_IN_MILLISECONDS": 0,
             "LAST_UPDATE_TIMESTAMP": "2016-03-13 10:00:00", "CPU": 61.0},
            {"SERVER_ID": "reader-1", "SESSION_ID": "b3c1e2f4-0000-4b8e-9f1a-1c2d3e4f5a6b",
             "REPLICA_LAG_IN_MILLISECONDS": 21.7, "LAST_UPDATE_TIMESTAMP": "2016-03-13 10:00:00", "CPU": 2.7}]
    assert aurora.aurora_replicas(rows) == {"reader-1": {"lag_ms": 21.7, "cpu_pct": 2.7}}


def test_a_missing_privilege_names_the_grant_and_a_refused_login_the_password():
    msg = privileges.privilege_message(1142, "SELECT command denied to user 'bench'@'10.0.0.9' for table "
                                   "'replication_applier_status_by_worker'", node="db2", probe="performance_schema",
                                   user="bench", table="replication_applier_status_by_worker")
    assert "GRANT SELECT ON performance_schema.replication_applier_status_by_worker TO bench" in msg
    msg = privileges.privilege_message(1227, "Access denied; you need (at least one of) the REPLICATION CLIENT "
                                   "privilege(s)", node="db2", probe="replica_status", user="bench")
    assert "GRANT REPLICATION CLIENT ON *.* TO bench" in msg and "SLAVE MONITOR" in msg
    assert "password" in privileges.privilege_message(1045, "Access denied for user", node="db1", probe="replica_status",
                                                  user="bench")
