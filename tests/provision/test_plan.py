"""A lab spec means the same server settings on provisioned hosts as in the embedded lab: the my.cnf of each node,
rendered both ways, differs only in paths, addresses and the group's name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchlib import servers
from benchlib.lab import flavors
from benchlib.lab.layout import build_layout
from benchlib.lab.mycnf import render
from benchlib.lab.spec import load_spec
from benchlib.provision.hosts import HostsSpec
from benchlib.provision.plan import Plan
from tests.conftest import EXAMPLES

#: options that name where a node is (its files, its address, its peers'), not how it behaves
WHERE = {"datadir", "tmpdir", "socket", "pid_file", "log_error", "port", "bind_address", "report_host", "report_port",
         "basedir", "plugin_dir", "lc_messages_dir", "secure_file_priv", "wsrep_cluster_address", "wsrep_node_address",
         "wsrep_node_incoming_address", "wsrep_sst_receive_address", "loose-group_replication_local_address",
         "loose-group_replication_group_seeds", "loose-group_replication_ip_allowlist",
         "loose-group_replication_group_name"}
#: the settings a benchmark's result depends on, which must be there and equal
MATTER = re.compile(r"sync_binlog|innodb_flush_log_at_trx_commit|innodb_buffer_pool_size|gtid|semi_sync|wsrep_"
                    r"|group_replication_|parallel|binlog_format|log_bin|innodb_redo_log_capacity|innodb_log_file_size")


def _options(cnf: str) -> dict[str, str]:
    return dict(line.split(" = ", 1) for line in cnf.splitlines() if " = " in line)


def _without_addresses(provider: str) -> str:
    return ";".join(o for o in provider.strip('"').split(";") if not o.startswith(("gmcast.listen_addr", "ist.recv_addr")))


@pytest.mark.parametrize("example", ["semisync-1p2r", "galera-3", "gr-3", "mysql-semisync-1p2r"])
def test_a_spec_renders_the_same_settings_provisioned_as_locally(tmp_path, example):
    spec = load_spec(EXAMPLES / f"{example}.toml")
    local = build_layout(spec, Path("/tmp/blp"), 20000, None)  # node socket paths stay short
    hosts = HostsSpec.model_validate({"ssh": {"key_env": "K"}, "hosts": {
        f"h{i}": {"address": f"10.9.0.{i}", "nodes": [name]} for i, name in enumerate(spec.node_names(), start=1)}})
    plan = Plan(spec, hosts, ["10.9.0.100"])
    for name, node in local.nodes.items():
        flavor = flavors.get(node.flavor)
        here = _options(render(local, node, servers.find(flavor.server)))
        there = _options(plan.nodes[name].cnf)
        assert set(here) == set(there), name
        differ = {k for k in here if here[k] != there[k]} - WHERE
        if "wsrep_provider_options" in differ:
            assert _without_addresses(here["wsrep_provider_options"]) == _without_addresses(
                there["wsrep_provider_options"])
            differ.remove("wsrep_provider_options")
        assert differ == set(), name
        assert any(MATTER.search(k) for k in here)
        assert there["bind_address"] == plan.nodes[name].address
    if example == "gr-3":  # the group admits the hosts and benchlib's own address, nothing else
        allow = _options(plan.nodes["gr-2"].cnf)["loose-group_replication_ip_allowlist"]
        assert allow == "127.0.0.1/8,10.9.0.1/32,10.9.0.100/32,10.9.0.2/32,10.9.0.3/32"


def test_each_node_first_start_makes_exactly_the_lab_accounts_off_the_binary_log():
    spec = load_spec(EXAMPLES / "gr-3.toml")
    hosts = HostsSpec.model_validate({"ssh": {"key_env": "K"}, "hosts": {
        "a": {"address": "10.9.0.1", "nodes": ["gr-1", "gr-2", "gr-3"]}}})
    plan = Plan(spec, hosts, ["10.9.0.100"])
    from benchlib.lab.secrets import Credentials

    sql = plan.init_sql(plan.nodes["gr-2"], Credentials({"root": "r00t'pw", "bench": "b", "repl": "r"}))
    lines = sql.splitlines()
    assert lines[0] == "SET SESSION sql_log_bin = 0;"
    assert "ALTER USER 'root'@'localhost' IDENTIFIED BY 'r00t\\'pw';" in lines
    assert "CREATE USER 'bench'@'10.9.0.100' IDENTIFIED BY 'b';" in lines
    assert "GRANT SYSTEM_VARIABLES_ADMIN ON *.* TO 'bench'@'10.9.0.1';" in lines
    assert not any("'%'" in line for line in lines)  # no account from anywhere
    ports = sorted(n.plan.port for n in plan.nodes.values())
    assert ports == [3306, 3316, 3326]  # three nodes on one host: ports apart
