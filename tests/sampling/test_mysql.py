"""The sampler probes of systems that cannot run here (MySQL 8, Group Replication, PXC, Aurora), fed the
result rows the manuals document, statement by statement. This replays answers; it is not a database:
what it checks is which statement each probe sends and what it makes of the documented answer."""

from __future__ import annotations

import pytest

from benchlib.systems.group_replication import system as gr
from benchlib.sampling.clock import Offset
from benchlib.sampling.mysql import AuroraProbe, GroupReplicationProbe, MySQLReplicationProbe
from benchlib.sampling.status import GaleraProbe
from benchlib.sampling.status import StatusLog


class Replay:
    """A connection whose cursor answers each statement (matched by a fragment) with recorded rows."""

    def __init__(self, answers: dict[str, list[dict]]):
        self.answers, self.sent, self.args = answers, [], []

    def cursor(self):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def execute(self, statement, args=None):
        self.sent.append(statement)
        self.args.append(args)
        key = next((k for k in self.answers if k in statement), None)
        assert key is not None, f"a statement the documented shapes do not cover: {statement[:80]}"
        self.rows = list(self.answers[key])

    def fetchall(self):
        return self.rows

    def fetchone(self):
        return self.rows[0] if self.rows else None

    def close(self):
        pass


class Clocks:
    def __init__(self, offsets):
        self._offsets = offsets

    def offsets(self):
        return self._offsets


def metrics(log: StatusLog) -> dict[tuple[str, str], float]:
    f = log.frame()
    return {(r.node, r.metric): r.value for r in f.itertuples()}


def _worker(applying, now=1000.5):
    return {"WORKER_ID": 1, "SERVICE_STATE": "ON", "IO_STATE": "ON", "NOW_TS": now, "APPLYING_ICT": applying,
            "APPLIED_ICT": 999.0, "APPLIED_END": 999.1, "LAST_QUEUED": "u:1-10", "QUEUED_END": 1000.4}


def test_mysql8_replica_lag_is_corrected_with_both_clock_offsets_and_never_clamped():
    version = {"version": "8.4.3", "version_comment": "MySQL Community Server - GPL"}
    source = Replay({"@@version": [version], "Rpl_semi_sync": [
        {"Variable_name": "Rpl_semi_sync_source_status", "Value": "ON"},
        {"Variable_name": "Rpl_semi_sync_source_yes_tx", "Value": "42"}]})
    replica = Replay({"@@version": [version], "replication_applier_status_by_worker": [_worker(1000.2)],
                      "GTID_SUBTRACT": [{"BACKLOG": "3e11fa47-71ca-11e1-9e33-c80aa9429562:11-15"}],
                      "SHOW REPLICA STATUS": [{"Replica_IO_Running": "Yes", "Replica_SQL_Running": "Yes",
                                               "Seconds_Behind_Source": 0}]})
    conns = {"m1": source, "m2": replica}
    log = StatusLog()
    # the replica's clock runs 0.25 s ahead of the source's: its "now" minus the source's commit time is 0.25 s
    # too long; corrected 0.3 - 0.25 = 0.05 s
    clocks = Clocks({"m1": Offset(0.0, 0.001, 0.002, 5), "m2": Offset(0.25, 0.001, 0.002, 5)})
    probe = MySQLReplicationProbe(conns.__getitem__, "m1", ["m2"], log, lambda: 1.0, clocks)
    probe.setup()
    probe.sample(0.0)
    got = metrics(log)
    assert got[("m2", "apply_lag_ms")] == pytest.approx(50.0)
    assert got[("m2", "trx_behind")] == 5 and got[("m2", "io_running")] == 1.0
    assert got[("m2", "seconds_behind_master")] == 0
    assert got[("m1", "semisync_status")] == 1.0 and got[("m1", "semisync_yes_tx")] == 42
    assert any("SHOW REPLICA STATUS" in s for s in replica.sent)  # 8.4: no SHOW SLAVE STATUS
    # a replica clock far ahead makes the corrected lag negative: kept, a skew signal
    log2 = StatusLog()
    clocks2 = Clocks({"m1": Offset(0.0, 0.001, 0.002, 5), "m2": Offset(0.5, 0.001, 0.002, 5)})
    probe2 = MySQLReplicationProbe(conns.__getitem__, "m1", ["m2"], log2, lambda: 1.0, clocks2)
    probe2.setup()
    probe2.sample(0.0)
    assert metrics(log2)[("m2", "apply_lag_ms")] == pytest.approx(-200.0)


def test_mysql57_replica_uses_show_slave_status_and_no_performance_schema_timestamps():
    version = {"version": "5.7.44-48", "version_comment": "Percona Server (GPL), Release 48"}
    replica = Replay({"@@version": [version], "GTID_SUBTRACT": [{"BACKLOG": ""}],
                      "SHOW SLAVE STATUS": [{"Slave_IO_Running": "Yes", "Slave_SQL_Running": "No",
                                             "Seconds_Behind_Master": None}]})
    source = Replay({"@@version": [version], "Rpl_semi_sync": []})
    log = StatusLog()
    probe = MySQLReplicationProbe({"a": source, "b": replica}.__getitem__, "a", ["b"], log, lambda: 1.0, Clocks({}))
    probe.setup()
    probe.sample(0.0)
    got = metrics(log)
    assert got[("b", "sql_running")] == 0.0 and got[("b", "trx_behind")] == 0
    assert ("b", "apply_lag_ms") not in got and ("b", "seconds_behind_master") not in got  # NULL: not a zero
    assert not any("replication_applier_status_by_worker" in s for s in replica.sent)


def test_group_replication_members_report_their_own_queues():
    def member(queue, applier):
        return Replay({"Gr\\_flow\\_control\\_throttle": [],  # the stats component not installed: no throttle rows
                       "replication_group_member_stats": [{
            "MEMBER_HOST": "gr", "MEMBER_PORT": 3306, "MEMBER_STATE": "ONLINE", "MEMBER_ROLE": "SECONDARY",
            "COUNT_TRANSACTIONS_IN_QUEUE": queue, "COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE": applier,
            "COUNT_TRANSACTIONS_CHECKED": 100, "COUNT_TRANSACTIONS_REMOTE_APPLIED": 90,
            "COUNT_TRANSACTIONS_LOCAL_PROPOSED": 0, "COUNT_CONFLICTS_DETECTED": 1}],
            "replication_applier_status_by_worker": [_worker(0.0)]})
    conns = {"gr1": member(0, 0), "gr2": member(3, 250)}
    log = StatusLog()
    probe = GroupReplicationProbe(conns.__getitem__, ["gr1", "gr2"], log, lambda: 1.0, Clocks({}))
    probe.setup()
    probe.sample(0.0)
    got = metrics(log)
    assert got[("gr2", "gr_backlog")] == 253 and got[("gr2", "gr_applier_queue")] == 250
    assert got[("gr1", "gr_backlog")] == 0 and got[("gr2", "gr_conflicts")] == 1
    assert all((gr.GROUP_REPLICATION_CHANNEL,) in c.args for c in conns.values())  # the applier channel's lag


def test_pxc_nodes_report_galera_numbers_and_seqno_behind():
    def node(committed, paused):
        return Replay({"SHOW GLOBAL STATUS LIKE 'wsrep%'": [
            {"Variable_name": "wsrep_last_committed", "Value": str(committed)},
            {"Variable_name": "wsrep_flow_control_paused_ns", "Value": str(paused)},
            {"Variable_name": "wsrep_local_recv_queue", "Value": "7"},
            {"Variable_name": "wsrep_flow_control_status", "Value": "OFF"},
            {"Variable_name": "wsrep_local_state_comment", "Value": "Synced"}]})
    log = StatusLog()
    probe = GaleraProbe({"p1": node(1000, 5), "p2": node(990, 9)}.__getitem__, ["p1", "p2"], log, lambda: 1.0,
                        show_status=True)
    probe.setup()
    probe.sample(0.0)
    got = metrics(log)
    assert got[("p2", "seqno_behind")] == 10 and got[("p1", "seqno_behind")] == 0
    assert got[("p2", "wsrep_local_recv_queue")] == 7
    assert ("p1", "wsrep_flow_control_status") not in got  # text, not a number


def test_aurora_readers_come_from_the_writer_without_stale_rows():
    writer = Replay({"replica_host_status": [
        {"SERVER_ID": "writer-1", "SESSION_ID": "MASTER_SESSION_ID", "REPLICA_LAG_IN_MILLISECONDS": 0,
         "LAST_UPDATE_TIMESTAMP": "2026-11-22 10:00:00", "CPU": 40.0},
        {"SERVER_ID": "reader-1", "SESSION_ID": "b1c2", "REPLICA_LAG_IN_MILLISECONDS": 18.5,
         "LAST_UPDATE_TIMESTAMP": "2026-11-22 10:00:00", "CPU": 12.5}]})
    log = StatusLog()
    probe = AuroraProbe({"w": writer}.__getitem__, "w", log, lambda: 1.0)
    probe.setup()
    probe.sample(0.0)
    got = metrics(log)
    assert got == {("reader-1", "aurora_lag_ms"): 18.5, ("reader-1", "aurora_cpu_pct"): 12.5}
    assert "LAST_UPDATE_TIMESTAMP > NOW() - INTERVAL 60 SECOND" in writer.sent[0]  # stale instances filtered
