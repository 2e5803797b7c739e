"""Remote lab specs: roles per system, secrets only by variable name, threads split over client hosts."""

from __future__ import annotations

import pytest

from benchlib.errors import SpecError
from benchlib.remote.spec import RemoteLabSpec, load_remote_spec
from tests.conftest import ROOT

BASE = {"kind": "remote", "name": "r", "credentials": {"user": "bench", "password_env": "BENCH_DB_PASSWORD"},
        "clusters": {"gr": {"system": "group_replication", "mode": "single-primary",
                            "nodes": [{"name": "a", "host": "h1", "role": "primary"},
                                      {"name": "b", "host": "h2", "role": "secondary"}]}},
        "clients": {"c1": {"host": "h9", "user": "u", "agent": True}}}


def spec(**changes):
    return RemoteLabSpec.model_validate({**BASE, **changes})


def test_the_example_loads_and_bad_files_fail_with_one_message(tmp_path):
    s = load_remote_spec(ROOT / "examples" / "remote" / "gr9.toml")
    assert len(s.clusters["gr"].nodes) == 9 and s.clusters["gr"].mode == "single-primary"
    bad = tmp_path / "bad.toml"
    bad.write_text('kind = "remote"\nname = "x"\n[credentials]\nuser = "bench"\npassword = "hunter2"\n'
                   '[clusters.a]\nsystem = "mysql"\nnodes = [{ name = "m1", host = "h", role = "boss" }]\n')
    with pytest.raises(SpecError) as err:
        load_remote_spec(bad)
    text = err.value.render()
    assert "secrets are never written in a spec" in text and "password_env" in text
    assert "hunter2" not in text  # the value is never echoed
    assert "role 'boss'" in text


def test_roles_and_modes_follow_the_system():
    with pytest.raises(ValueError, match="needs mode"):
        spec(clusters={"gr": {**BASE["clusters"]["gr"], "mode": None}})
    two = [{"name": "a", "host": "h1", "role": "primary"}, {"name": "b", "host": "h2", "role": "primary"}]
    with pytest.raises(ValueError, match="exactly one primary"):
        spec(clusters={"gr": {**BASE["clusters"]["gr"], "nodes": two}})
    assert spec(clusters={"gr": {**BASE["clusters"]["gr"], "mode": "multi-primary", "nodes": two}})
    with pytest.raises(ValueError, match="role 'secondary' is not one of aurora's"):
        spec(clusters={"au": {"system": "aurora", "nodes": [{"name": "w", "host": "h", "role": "writer"},
                                                             {"name": "r", "host": "h", "role": "secondary"}]}})
    with pytest.raises(ValueError, match="key_env .* or agent"):
        spec(clients={"c1": {"host": "h", "user": "u"}})
    with pytest.raises(ValueError, match="should match pattern"):
        spec(credentials={"user": "bench", "password_env": "not a variable"})


def test_threads_are_split_over_client_hosts_as_the_shares_say():
    two = {"c1": {"host": "h8", "user": "u", "agent": True}, "c2": {"host": "h9", "user": "u", "agent": True}}
    assert spec(clients=two).split_threads(2048) == {"c1": 1024, "c2": 1024}
    assert spec(clients=two).split_threads(5) == {"c1": 3, "c2": 2}
    shared = {"c1": {**two["c1"], "share": 0.75}, "c2": {**two["c2"], "share": 0.25}}
    assert spec(clients=shared).split_threads(128) == {"c1": 96, "c2": 32}
    with pytest.raises(ValueError, match="add up to"):
        spec(clients={"c1": {**two["c1"], "share": 0.5}, "c2": {**two["c2"], "share": 0.6}})
    with pytest.raises(SpecError, match="cannot be split"):
        spec(clients=two).split_threads(1)


def test_the_example_campaign_plans_on_the_remote_lab_with_its_systems_settings():
    from benchlib.campaign.plan import plan
    from benchlib.campaign.spec import load_campaign_spec
    from benchlib.errors import SettingError

    campaign, lab = load_campaign_spec(ROOT / "examples" / "remote" / "000-gr9.toml")
    assert isinstance(lab, RemoteLabSpec) and list(lab.clients) == ["c1", "c2"]
    runs = plan(campaign, lab)
    assert {r.topology for r in runs} == {"async", "group_replication"}
    assert {r.settings.get("gr_applier_threshold") for r in runs if r.cluster == "gr"} == {25000, 1000, 2147483647}
    assert all("gr_applier_threshold" not in r.settings for r in runs if r.cluster == "async")
    assert lab.split_threads(256) == {"c1": 128, "c2": 128}
    with pytest.raises(SettingError, match="not a setting benchlib can sweep on aurora clusters"):
        spec(clusters={"au": {"system": "aurora", "nodes": [{"name": "w", "host": "h", "role": "writer"}]}}
             ).setting_rules("au").parse("durability", "relaxed")


def test_server_hosts_are_the_nodes_with_ssh_one_per_address():
    ssh = {"user": "u", "key_env": "BENCH_SSH_KEY", "port": 2200}
    nodes = [{"name": "a", "host": "h1", "role": "primary", "ssh": ssh},
             {"name": "b", "host": "h1", "port": 3307, "role": "secondary", "ssh": ssh},
             {"name": "c", "host": "h2", "role": "secondary"}]
    hosts = spec(clusters={"gr": {**BASE["clusters"]["gr"], "nodes": nodes}}).server_hosts()
    assert list(hosts) == ["a"] and hosts["a"].host == "h1" and hosts["a"].port == 2200
    assert spec().server_hosts() == {}
    with pytest.raises(ValueError, match="key_env .* or agent"):
        spec(clusters={"gr": {**BASE["clusters"]["gr"], "nodes": [{**nodes[0], "ssh": {"user": "u"}}, nodes[2]]}})


def test_a_password_file_beside_the_spec_is_read_only_when_nobody_else_can(tmp_path):
    from benchlib.errors import BenchlibError
    from benchlib.remote.lab import RemoteLab

    (tmp_path / "r.toml").write_text(
        'kind = "remote"\nname = "r"\n[credentials]\nuser = "bench"\npassword_file = "bench.password"\n'
        '[clusters.m]\nsystem = "mariadb"\nnodes = [{ name = "m1", host = "h", role = "primary" }]\n')
    pw = tmp_path / "bench.password"
    pw.write_text("s3cret\n")
    pw.chmod(0o600)
    lab = RemoteLab(load_remote_spec(tmp_path / "r.toml"))
    assert lab.password("m") == ("bench", "s3cret")
    pw.chmod(0o644)
    with pytest.raises(BenchlibError, match="readable by others .mode 644.") as err:
        lab.password("m")
    assert "chmod 600" in err.value.render()
    with pytest.raises(ValueError, match="exactly one of password_env"):
        spec(credentials={"user": "bench", "password_env": "X", "password_file": "f"})


def test_only_a_provisioned_lab_takes_faults_and_only_kill_freeze_and_isolate():
    ssh = {"user": "root", "key_env": "K"}
    nodes = [{"name": "a", "host": "h1", "role": "primary", "ssh": ssh},
             {"name": "b", "host": "h2", "role": "secondary"}]
    plain = spec(clusters={"gr": {**BASE["clusters"]["gr"], "nodes": nodes}})
    assert "not benchlib's" in plain.lacks("faults") and plain.fault_refusal("kill", ["a"], None)
    built = spec(clusters={"gr": {**BASE["clusters"]["gr"], "nodes": nodes}}, provisioned="/tmp/p")
    assert built.lacks("faults") == "" and "provisioned hosts" in built.lacks("proxy")
    assert built.fault_refusal("kill", ["a"], None) is None
    assert built.fault_refusal("freeze", ["a"], None) is None
    assert built.fault_refusal("isolate", ["a"], None) is None
    assert "embedded lab" in built.fault_refusal("cut", ["a"], "far")
    assert "no ssh access" in built.fault_refusal("kill", ["b"], None)


def test_sites_name_the_lab_s_nodes_each_once_and_say_each_node_s_place():
    s = spec(sites={"far": {"nodes": ["b"], "rtt_ms": 35}})
    assert s.site_of("b") == "far" and s.site_of("a") is None
    with pytest.raises(ValueError, match=r"sites.far.nodes: no node 'z' in this lab \(nodes are: a, b\)"):
        spec(sites={"far": {"nodes": ["z"], "rtt_ms": 35}})
    with pytest.raises(ValueError, match="node 'b' is in both 'far' and 'farther'"):
        spec(sites={"far": {"nodes": ["b"], "rtt_ms": 35}, "farther": {"nodes": ["b"], "rtt_ms": 90}})
    with pytest.raises(ValueError, match="jitter_ms .* at most half of rtt_ms"):
        spec(sites={"far": {"nodes": ["b"], "rtt_ms": 10, "jitter_ms": 6}})
