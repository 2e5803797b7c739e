"""Each system's settings: parsed alike for local and remote clusters, the statements they apply by role and
server version, and what cannot be swept (restart-only settings, Aurora)."""

from __future__ import annotations

import pytest

from benchlib.systems import base as systems
from benchlib.errors import SettingError
from benchlib.systems.settings import SettingRules


def stmts(system: str, key: str, value, role: str, variables: dict | None = None) -> list[str]:
    return systems.get(system).settings[key].statements(value, role, variables or {})


def test_durability_sets_both_variables_on_every_node_and_reads_them_back():
    s = systems.get("mysql").settings["durability"]
    assert s.statements("relaxed", "replica", {}) == ["SET GLOBAL sync_binlog = 0",
                                                      "SET GLOBAL innodb_flush_log_at_trx_commit = 2"]
    assert s.read_back("durable", {}) == {"sync_binlog": 1, "innodb_flush_log_at_trx_commit": 1}


def test_apply_threads_follow_the_system_and_the_server_version():
    assert stmts("mariadb", "parallel_threads", 4, "replica") == [
        "STOP SLAVE", "SET GLOBAL slave_parallel_threads = 4", "START SLAVE"]
    assert stmts("mysql", "parallel_threads", 8, "replica", {"replica_parallel_workers": "4"}) == [
        "STOP REPLICA SQL_THREAD", "SET GLOBAL replica_parallel_workers = 8", "START REPLICA SQL_THREAD"]
    assert stmts("mysql", "parallel_threads", 8, "replica", {"slave_parallel_workers": "0"}) == [  # 5.7
        "STOP SLAVE SQL_THREAD", "SET GLOBAL slave_parallel_workers = 8", "START SLAVE SQL_THREAD"]
    assert stmts("mysql", "parallel_threads", 8, "primary") == []  # not for a source
    assert systems.get("mysql").settings["parallel_threads"].read_back(8, {"replica_parallel_workers": "4"}) == {
        "replica_parallel_workers": 8}
    assert stmts("pxc", "applier_threads", 8, "replica", {"wsrep_applier_threads": "2"}) == [
        "SET GLOBAL wsrep_applier_threads = 8"]
    assert stmts("galera", "applier_threads", 8, "replica", {"wsrep_slave_threads": "2"}) == [
        "SET GLOBAL wsrep_slave_threads = 8"]


def test_galera_flow_control_reads_back_from_the_provider_options():
    s = systems.get("galera").settings["fc_limit"]
    assert stmts("galera", "fc_limit", 4096, "primary") == ["SET GLOBAL wsrep_provider_options = 'gcs.fc_limit=4096'"]
    assert s.matches("base_port = 4567; gcs.fc_limit = 4K; gcs.fc_factor = 1.0", 4096)
    assert not s.matches("gcs.fc_limit = 16", 4096)


def test_group_replication_flow_control_and_semi_sync_wait_point():
    assert stmts("group_replication", "gr_flow_control_mode", "DISABLED", "replica") == [
        "SET GLOBAL group_replication_flow_control_mode = 'DISABLED'"]
    assert stmts("mariadb", "semisync_wait_point", "AFTER_COMMIT", "primary") == [
        "SET GLOBAL rpl_semi_sync_master_wait_point = 'AFTER_COMMIT'"]
    assert stmts("mariadb", "semisync_wait_point", "AFTER_COMMIT", "replica") == []


def test_rules_leave_out_what_a_cluster_cannot_have():
    single = systems.rules("mariadb", label="single", replicas=False)
    assert "parallel_threads" not in single and "durability" in single
    local = systems.rules("mysql")
    assert "performance_schema" not in local  # a local lab rebuilds instead
    remote = systems.rules("mysql", remote=True)
    with pytest.raises(SettingError, match="only when the server restarts"):
        remote.parse("performance_schema", "on")
    assert systems.rules("mysql", remote=True, allow_restart=True).parse("performance_schema", "off") is False
    with pytest.raises(SettingError, match="MariaDB has no RESTART"):
        systems.rules("mariadb", remote=True, allow_restart=True).parse("performance_schema", "off")
    with pytest.raises(SettingError, match="not a setting benchlib can sweep on aurora") as err:
        systems.rules("aurora", remote=True).parse("durability", "relaxed")
    assert "parameter group" in err.value.hint


def test_values_are_parsed_with_the_setting_named_in_the_message():
    rules: SettingRules = systems.rules("galera", label="galera")
    assert rules.parse("fc_factor", "0.5") == 0.5
    with pytest.raises(SettingError, match=r"fc_limit='many': expects an integer from 1 to 2147483647") as err:
        rules.parse("fc_limit", "many")
    assert err.value.hint.startswith("fc_limit: gcs.fc_limit")
    with pytest.raises(SettingError, match="is not a runtime setting of a galera cluster"):
        rules.parse("parallel_threads", 4)


def test_an_unknown_system_names_the_known_ones():
    with pytest.raises(Exception, match="unknown system 'oracle'") as err:
        systems.get("oracle")
    assert "group_replication" in err.value.hint


def test_both_labs_plan_settings_by_the_same_rules():
    """``plan_settings`` is what LocalLab.set and RemoteLab.set both run: a setting goes to every cluster that has
    it; one that no cluster has, a spec field, or a bad value is refused before anything is applied."""
    from benchlib.lab.spec import FIXED
    from benchlib.systems.settings import plan_settings

    remote = {"db": systems.rules("mariadb", label="async"), "g": systems.rules("galera")}
    assert plan_settings({"fc_limit": "64", "durability": "relaxed"}, remote, None, "r") == [
        ("g", "fc_limit", 64), ("db", "durability", "relaxed"), ("g", "durability", "relaxed")]
    with pytest.raises(SettingError, match="'foo' is not a runtime setting of db or g") as err:
        plan_settings({"foo": 1}, remote, None, "r")  # a remote `lab set foo=1` no longer succeeds doing nothing
    assert "runtime settings here: applier_threads, durability" in err.value.render()
    with pytest.raises(SettingError, match="no cluster 'x' in lab r"):
        plan_settings({"durability": "relaxed"}, remote, "x", "r")
    with pytest.raises(SettingError, match="'fc_limit' is not a runtime setting of a async cluster"):
        plan_settings({"fc_limit": 1}, remote, "db", "r")
    local = {c: SettingRules(r.system, r.label, r.settings, fixed=FIXED) for c, r in remote.items()}
    with pytest.raises(SettingError, match="'binlog' cannot change on a running lab") as err:
        plan_settings({"binlog": True}, local, None, "l")
    assert "benchlib lab down" in err.value.render()
    with pytest.raises(SettingError, match="use the runtime setting semisync_wait_point"):
        plan_settings({"wait_point": "AFTER_COMMIT"}, local, None, "l")
    with pytest.raises(SettingError, match="fc_limit=0"):
        plan_settings({"fc_limit": 0}, local, None, "l")


@pytest.mark.parametrize("row, problem", [
    ({"Slave_IO_Running": "Yes", "Slave_SQL_Running": "Yes"}, None),
    ({"Replica_IO_Running": "No", "Replica_SQL_Running": "No"},
     "r2: replication is stopped (IO thread: No, SQL thread: No): run START REPLICA on r2"),
    ({"Replica_IO_Running": "Connecting", "Replica_SQL_Running": "Yes", "Last_IO_Error": "error connecting"},
     "r2: replication is stopped (IO thread: Connecting, SQL thread: Yes; last error: error connecting): run "
     "START REPLICA on r2 after fixing the error"),
    (None, "r2: not configured as a replica"),
])
def test_a_replica_is_ready_when_both_threads_run(row, problem):
    from benchlib.systems.dialect import ServerKind
    from benchlib.systems.replication import replica_problems

    found = replica_problems(row, "r2", ServerKind("mysql", (9, 7, 4)))
    assert (found == []) if problem is None else found[0].startswith(problem)
    if row and problem:  # MySQL 5.7 knows START SLAVE only
        assert "run START SLAVE on r2" in replica_problems(row, "r2", ServerKind("mysql", (5, 7, 44)))[0]
