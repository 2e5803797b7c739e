"""Running a playbook (``benchlib.provision.ansible_run``): here how a host Ansible could not reach is named; the
playbooks themselves run in tests/provision/test_documented.py and on real hosts (docs/labs/real-machines.md)."""

from __future__ import annotations

import socket

from benchlib.provision.ansible_run import _address, _ssh_words


def _free_port() -> int:
    with socket.socket() as s:  # bound, then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_host_ansible_could_not_reach_is_named_in_ssh_s_words():
    """Under load Ansible may say "Data could not be sent to remote host ... Broken pipe" of a host whose SSH port
    refuses connections (a clean clone's run): what connecting says now is the cause, in SSH's words."""
    port = _free_port()
    inventory = {"all": {"vars": {"ansible_port": port},
                         "children": {"machines": {"hosts": {"db1": {"ansible_host": "127.0.0.1"}}},
                                      "nodes": {"hosts": {"n1": {"ansible_host": "127.0.0.1", "ansible_port": 2}}}}}}
    assert _address(inventory, "db1") == ("127.0.0.1", port) and _address(inventory, "n1") == ("127.0.0.1", 2)
    assert _address(inventory, "nope") is None
    said = "Data could not be sent to remote host '127.0.0.1'. Make sure this host can be reached over SSH: [Errno 32]"
    assert _ssh_words(inventory, "db1", said) == f"connect to host 127.0.0.1 port {port}: Connection refused"
    ssh = "connect to host 127.0.0.1 port 22: Connection refused"
    assert _ssh_words(inventory, "db1", ssh) == ssh  # SSH's own words stand
    with socket.socket() as listening:  # a port that answers: Ansible's words stand
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        inventory["all"]["vars"]["ansible_port"] = listening.getsockname()[1]
        assert _ssh_words(inventory, "db1", said) == said
