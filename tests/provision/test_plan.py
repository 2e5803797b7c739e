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
from benchlib.errors import SpecError
from benchlib.provision.plan import Plan
from benchlib.provision.wanhost import netem_commands
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


@pytest.mark.parametrize("example", ["semisync-1p2r", "galera-3", "gr-3", "mysql-semisync-1p2r", "wan-galera"])
def test_a_spec_renders_the_same_settings_provisioned_as_locally(tmp_path, example):
    spec = load_spec(EXAMPLES / f"{example}.toml")
    local = build_layout(spec, Path("/tmp/blp"), 20000, 7 if spec.sites else None)  # socket paths stay short
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


WAN = """name = "w"
[clusters.galera]
topology = "galera"
nodes = 3
[sites.far]
nodes = ["galera-3"]
rtt_ms = 40
jitter_ms = 4
[sites.farther]
nodes = ["galera-2"]
rtt_ms = 100
"""


def test_wan_sites_become_each_host_s_delay_toward_the_others(tmp_path):
    (tmp_path / "w.toml").write_text(WAN)
    spec = load_spec(tmp_path / "w.toml")
    hosts = HostsSpec.model_validate({"ssh": {"key_env": "K"}, "hosts": {
        "a": {"address": "10.9.0.1", "nodes": ["galera-1"]}, "b": {"address": "10.9.0.2", "nodes": ["galera-2"]},
        "c": {"address": "10.9.0.3", "nodes": ["galera-3"]}, "load": {"address": "10.9.0.4", "client": True}}})
    plan = Plan(spec, hosts, ["10.9.0.100"])
    delays = {h: {p["address"]: (p["delay_ms"], p["jitter_ms"]) for p in plan.wan_peers(h)} for h in hosts.hosts}
    # half of each end's round trip each way (the round trip adds up to the sites' sum), the whole one toward
    # benchlib's machine (it delays nothing back), nothing between hosts of no site
    assert delays["a"] == {"10.9.0.2": (50.0, 0.0), "10.9.0.3": (20.0, 2.0)}
    assert delays["c"] == {"10.9.0.1": (20.0, 2.0), "10.9.0.2": (70.0, 2.0), "10.9.0.4": (20.0, 2.0),
                           "10.9.0.100": (40.0, 4.0)}
    assert delays["load"] == {"10.9.0.2": (50.0, 0.0), "10.9.0.3": (20.0, 2.0)}
    assert plan.nodes["galera-3"].plan.site == "far"


def test_a_host_holding_nodes_of_two_places_is_refused(tmp_path):
    (tmp_path / "w.toml").write_text(WAN)
    spec = load_spec(tmp_path / "w.toml")
    hosts = HostsSpec.model_validate({"ssh": {"key_env": "K"}, "hosts": {
        "a": {"address": "10.9.0.1", "nodes": ["galera-1", "galera-3"]},
        "b": {"address": "10.9.0.2", "nodes": ["galera-2"]}}})
    with pytest.raises(SpecError, match=r"host a holds nodes of different places: galera-1 \(no site\), galera-3 "
                                        r"\(far\)") as err:
        Plan(spec, hosts, [])
    assert "a machine is in one place" in err.value.render()


def test_netem_shapes_each_peer_through_a_band_of_its_delay():
    peers = [{"address": "10.9.0.2", "delay_ms": 50.0, "jitter_ms": 0.0},
             {"address": "10.9.0.3", "delay_ms": 20.0, "jitter_ms": 2.0},
             {"address": "10.9.0.4", "delay_ms": 20.0, "jitter_ms": 2.0}]
    cmds = [" ".join(c) for c in netem_commands(peers, {p["address"]: "eth0" for p in peers})]
    assert cmds == [
        "tc qdisc replace dev eth0 root handle 3307: prio bands 3 priomap " + " ".join(["0"] * 16),
        "tc qdisc replace dev eth0 parent 3307:2 handle 12: netem delay 20ms 2ms",
        "tc filter add dev eth0 parent 3307: protocol ip prio 1 u32 match ip dst 10.9.0.3/32 flowid 3307:2",
        "tc filter add dev eth0 parent 3307: protocol ip prio 1 u32 match ip dst 10.9.0.4/32 flowid 3307:2",
        "tc qdisc replace dev eth0 parent 3307:3 handle 13: netem delay 50ms",
        "tc filter add dev eth0 parent 3307: protocol ip prio 1 u32 match ip dst 10.9.0.2/32 flowid 3307:3",
    ]
