"""benchlib provision on hosts with their own root filesystem, network, processes and sshd (namespace hosts): every
topology built over real SSH and apt, checked as a remote lab, provisioned again without a change, then taken away
leaving each host as it was."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pymysql
import pytest

from benchlib.labs import load_lab_spec
from benchlib.provision import hostroot
from benchlib.provision.build import provision, unprovision
from benchlib.provision.nshosts import NamespaceHosts
from benchlib.remote.check import check_remote
from benchlib.remote.lab import RemoteLab
from tests.conftest import needs_root

pytestmark = [pytest.mark.lab, needs_root,
              pytest.mark.skipif(hostroot.find() is None and os.geteuid() == 0 and not os.environ.get("CI"),
                                 reason="the namespace hosts' root filesystem is not built (the bootstrap builds it)")]

SPEC = """
name = "prov"

[clusters.semi]
topology = "semisync"
replicas = 1

[clusters.galera]
topology = "galera"
nodes = 3

[clusters.gr]
topology = "group_replication"
nodes = 3
"""
PLACES = {"h1": "semi-1", "h2": "semi-2", "h3": "galera-1", "h4": "galera-2", "h5": "galera-3", "h6": "gr-1",
          "h7": "gr-2", "h8": "gr-3"}


def _host_state(kit: NamespaceHosts, name: str) -> dict:
    """What a host has: its packages, accounts, benchlib's folders, its processes."""
    root = kit.hosts[name].root
    pkgs = subprocess.run(["chroot", str(root), "dpkg-query", "-W", "-f", "${Package} ${Status}\\n"],
                          capture_output=True, text=True, check=True).stdout
    pids = subprocess.run(["ip", "netns", "pids", kit.hosts[name].netns], capture_output=True, text=True).stdout.split()
    comms = sorted(Path(f"/proc/{p}/comm").read_text().strip() for p in pids if Path(f"/proc/{p}").exists())
    return {"packages": sorted(line.split()[0] for line in pkgs.splitlines() if line.endswith(" install ok installed")),
            "passwd": sorted(line.split(":")[0] for line in (root / "etc/passwd").read_text().splitlines()),
            "benchlib": [p for p in ("var/lib/benchlib", "opt/benchlib", "etc/benchlib", "usr/local/sbin/benchlib-node")
                         if (root / p).exists()],
            "processes": [c for c in comms if c not in ("sshd", "sshd-session")]}


@pytest.mark.heavy
@pytest.mark.timeout(900)
def test_every_topology_is_built_checked_rebuilt_without_change_and_taken_away(tmp_path, monkeypatch):
    kit = NamespaceHosts(tmp_path / "hosts", list(PLACES))
    kit.up()
    try:
        before = {h: _host_state(kit, h) for h in PLACES}
        monkeypatch.setenv("BENCHLIB_TEST_SSH_KEY", kit.private_key)
        (tmp_path / "lab.toml").write_text(SPEC)
        (tmp_path / "hosts.toml").write_text(
            f'[ssh]\nuser = "root"\nkey_env = "BENCHLIB_TEST_SSH_KEY"\nknown_hosts = "{kit.known_hosts}"\n\n'
            '[defaults]\nport = 3310\napt_update = false\n\n'
            + "".join(f'[hosts.{h}]\naddress = "{kit.hosts[h].address}"\nnodes = ["{n}"]\n\n' for h, n in PLACES.items()))
        folder = tmp_path / "prov"
        built = provision(tmp_path / "lab.toml", tmp_path / "hosts.toml", folder, quiet=True)
        print(f"provisioned in {built.seconds:.0f} s with {built.changed} changes")
        assert built.changed > 0
        lab = RemoteLab(load_lab_spec(built.remote_spec))
        check = check_remote(lab)
        assert check.ok, "\n".join(check.lines())

        again = provision(tmp_path / "lab.toml", tmp_path / "hosts.toml", folder, quiet=True)
        print(f"provisioned again in {again.seconds:.0f} s")
        assert again.changed == 0 and "nothing changed" in again.summary()

        # the servers run with the spec's settings (the embedded lab's defaults: durable, 128M buffer pool)
        want = {"sync_binlog": "1", "innodb_flush_log_at_trx_commit": "1", "innodb_buffer_pool_size": "134217728"}
        lab = RemoteLab(load_lab_spec(built.remote_spec))
        for node, extra in {"semi-1": {"rpl_semi_sync_master_enabled": "ON", "gtid_strict_mode": "ON"},
                            "semi-2": {"rpl_semi_sync_slave_enabled": "ON", "read_only": "ON"},
                            "galera-2": {"wsrep_on": "ON", "wsrep_slave_threads": "4"},
                            "gr-3": {"gtid_mode": "ON", "group_replication_single_primary_mode": "ON",
                                     "group_replication_member_expel_timeout": "5"}}.items():
            with lab.connect(node) as conn, conn.cursor() as cur:
                names = list({**want, **extra})
                cur.execute("SHOW GLOBAL VARIABLES WHERE Variable_name IN (" + ",".join(["%s"] * len(names)) + ")",
                            names)
                got = {r["Variable_name"]: r["Value"] for r in cur.fetchall()}
            assert got == {**want, **extra}, node
        lab.close()

        # secrets: only in the mode-600 files, never in the log, Ansible's files or the remote spec
        passwords = list(json.loads((folder / "secrets.json").read_text()).values())
        for f in folder.rglob("*"):
            if f.is_file() and f.name not in ("secrets.json", "bench.password", "secrets.vars.json"):
                assert not any(p in f.read_text(errors="replace") for p in passwords), f
        for f in ("secrets.json", "bench.password", "secrets.vars.json"):
            assert (folder / f).stat().st_mode & 0o777 == 0o600, f
        with pytest.raises(pymysql.MySQLError):  # no account without a password from benchlib's address
            pymysql.connect(host=kit.hosts["h1"].address, port=3310, user="root", password="", connect_timeout=3)

        changed, seconds = unprovision(folder, quiet=True)
        print(f"unprovisioned in {seconds:.0f} s")
        assert changed > 0 and not folder.exists()
        after = {h: _host_state(kit, h) for h in PLACES}
        for h in PLACES:
            for what in before[h]:
                assert set(after[h][what]) ^ set(before[h][what]) == set(), f"{h} {what}: before {before[h][what]}"
    finally:
        kit.down()
    assert not (tmp_path / "hosts").exists()
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not any(h.netns in namespaces for h in kit.hosts.values())
    assert str(tmp_path / "hosts") not in Path("/proc/mounts").read_text()
