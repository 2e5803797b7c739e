"""SSH to client hosts for real: sshd in two network namespaces (tests/remote/hosts.py)."""

from __future__ import annotations

import os
import subprocess
import threading
import time

import pytest

from benchlib.remote.spec import ClientHost
from benchlib.remote.ssh import SSHClients, SSHError

#: ./scripts/test's phase 2 runs the remote-lab modules in one process: their client hosts share one network
LANE = "client hosts"
LONG_S = 120  # about how long this module's light tests take: phase 2 starts the longest first


def clients(hosts, **changes) -> dict[str, ClientHost]:
    base = dict(user="root", key_env="BENCHLIB_TEST_SSH_KEY", known_hosts=str(hosts.known_hosts))
    base.update(changes)
    return {name: ClientHost(host=addr, **base) for name, addr in hosts.hosts.items()}


def test_commands_run_inside_each_client_namespace(client_hosts):
    with SSHClients(clients(client_hosts)) as ssh:
        for name, addr in client_hosts.hosts.items():
            rc, out, _ = ssh.run(name, "ip -o -4 addr show")
            assert rc == 0 and addr in out  # the command ran in the client's namespace
        rc, out, err = ssh.run("c1", "echo $((6 * 7)); exit 3")
        assert (rc, out.strip()) == (3, "42")
        off = ssh.clock_offset("c1")
        assert abs(off.offset_s) <= off.error_s + 0.005  # same machine: one clock, within the round trip
        assert off.rtt_s < 1.0


def test_spawned_processes_start_together_and_are_killed(client_hosts):
    lines: dict[str, list[str]] = {"c1": [], "c2": []}
    with SSHClients(clients(client_hosts)) as ssh:
        procs = [ssh.spawn(h, "sh -c 'cat; sleep 300'", lines[h].append) for h in ("c1", "c2")]
        t = ssh.go(procs, {"c1": "one\n", "c2": "two\n"})
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (lines["c1"] and lines["c2"]):
            time.sleep(0.05)
        assert lines == {"c1": ["one\n"], "c2": ["two\n"]}  # each got its own standard input
        starts = [p.start_wall for p in procs]
        assert all(s is not None for s in starts) and abs(starts[0] - starts[1]) < 0.5 and abs(starts[0] - t) < 1
        pids = [p.pid for p in procs]
        for p in procs:
            ssh.kill(p)
            assert p.done.is_set()
    for pid in pids:  # killed on the host: nothing left running
        assert subprocess.run(["pgrep", "-P", str(pid)], capture_output=True).returncode == 1
        assert not os.path.exists(f"/proc/{pid}")


def test_close_kills_what_still_runs(client_hosts):
    ssh = SSHClients(clients(client_hosts)).open()
    p = ssh.spawn("c2", "sleep 300", lambda line: None)
    ssh.go([p], {})
    ssh.close()
    assert p.done.is_set() and not os.path.exists(f"/proc/{p.pid}")
    assert not any(t.name == "benchlib-ssh" and t.is_alive() for t in threading.enumerate() if t is ssh.thread)


def test_refusals_are_one_clear_message(client_hosts, monkeypatch, tmp_path):
    import asyncssh

    other = asyncssh.generate_private_key("ssh-ed25519")
    monkeypatch.setenv("OTHER_KEY", other.export_private_key().decode())
    with pytest.raises(SSHError, match=r"c1 \(root@198\.18\.251\.11:22\): permission denied for the key in "
                                       r"\$OTHER_KEY") as exc:
        SSHClients(clients(client_hosts, key_env="OTHER_KEY")).open()
    assert "authorized_keys" in exc.value.render()
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    with pytest.raises(SSHError, match="host key is not in") as exc:
        SSHClients(clients(client_hosts, known_hosts=str(empty))).open()
    assert "ssh-keyscan" in exc.value.render()
    monkeypatch.delenv("BENCHLIB_TEST_SSH_KEY")
    with pytest.raises(SSHError, match="BENCHLIB_TEST_SSH_KEY is not set"):
        SSHClients(clients(client_hosts)).open()
    monkeypatch.setenv("BENCHLIB_TEST_SSH_KEY", "/root/.ssh/id_ed25519")
    with pytest.raises(SSHError, match="not a path"):
        SSHClients(clients(client_hosts)).open()
