"""Hosts files: every node placed once, logins without literal secrets, one message naming what is wrong."""

from __future__ import annotations

import pytest

from benchlib.errors import SpecError
from benchlib.provision.hosts import load_hosts

GOOD = """
[ssh]
user = "root"
key_env = "BENCH_SSH_KEY"
known_hosts = "known_hosts"

[hosts.db1]
address = "10.0.0.1"
nodes = ["galera-1", "galera-2"]

[hosts.db2]
address = "10.0.0.2"
nodes = ["galera-3"]
client = true
"""


def _load(tmp_path, text):
    path = tmp_path / "hosts.toml"
    path.write_text(text)
    return load_hosts(path)


def test_a_good_file_places_every_node_and_reads_known_hosts_beside_it(tmp_path):
    hosts = _load(tmp_path, GOOD)
    assert hosts.placed() == {"galera-1": "db1", "galera-2": "db1", "galera-3": "db2"}
    assert hosts.clients() == ["db2"]
    assert hosts.ssh.known_hosts == str(tmp_path / "known_hosts")
    hosts.check_against(["galera-1", "galera-2", "galera-3"], "hosts.toml")


@pytest.mark.parametrize("change, words", [
    (('key_env = "BENCH_SSH_KEY"', 'password = "hunter2"'), "secrets are never written"),
    (('nodes = ["galera-3"]', 'nodes = ["galera-2"]'), "galera-2 is placed on both db1 and db2"),
    (('user = "root"', 'user = "deploy"'), "set become = true"),
    (('nodes = ["galera-3"]', 'nodes = ["Galera 3"]'), "not a lab spec node name"),
    (('[hosts.db1]', '[hosts.Db1]'), "host name 'Db1': lower-case letters, digits and '-', at most 32"),
    (('client = true', 'client = true\nssh = { user = "admin", become = true, agent = true }'),
     "hosts.db2.ssh: unknown field"),  # one login for every host: a host's own is refused, not ignored
])
def test_bad_files_get_one_message_naming_the_field(tmp_path, change, words):
    with pytest.raises(SpecError) as err:
        _load(tmp_path, GOOD.replace(*change))
    assert words in err.value.render()


def test_nodes_the_spec_lacks_or_misses_are_named(tmp_path):
    hosts = _load(tmp_path, GOOD)
    with pytest.raises(SpecError, match="node galera-3 .on host db2. is not in the lab spec"):
        hosts.check_against(["galera-1", "galera-2"], "hosts.toml")
    with pytest.raises(SpecError, match="no host for node galera-4"):
        hosts.check_against(["galera-1", "galera-2", "galera-3", "galera-4"], "hosts.toml")
