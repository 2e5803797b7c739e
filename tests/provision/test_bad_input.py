"""Bad input to benchlib provision: one message naming the host and the fix, exit 2, nothing half-built silently."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchlib.errors import BenchlibError, SpecError
from benchlib.provision import hostroot
from benchlib.provision.build import provision
from benchlib.provision.nshosts import NamespaceHosts
from tests.conftest import EXAMPLES, LAB_ROOT, needs_root

LAB = """name = "pbad"

[clusters.semi]
topology = "semisync"
replicas = 1
"""


def _hosts(tmp_path: Path, kit: NamespaceHosts | None, *, ssh_port: int = 22, address: str = "198.19.250.11") -> Path:
    known = f'known_hosts = "{kit.known_hosts}"\n' if kit else ""
    where = kit.hosts["h1"].address if kit else address
    path = tmp_path / "hosts.toml"
    path.write_text(f'[ssh]\nuser = "root"\nkey_env = "BENCHLIB_TEST_SSH_KEY"\nport = {ssh_port}\n{known}\n'
                    f'[defaults]\nport = 3310\napt_update = false\n\n[hosts.h1]\naddress = "{where}"\n'
                    'nodes = ["semi-1", "semi-2"]\n')
    (tmp_path / "lab.toml").write_text(LAB)
    return path


def test_an_unset_key_variable_and_a_host_in_two_places_are_refused_before_any_host_is_touched(tmp_path,
                                                                                                monkeypatch):
    monkeypatch.delenv("BENCHLIB_TEST_SSH_KEY", raising=False)
    hosts = _hosts(tmp_path, None)
    with pytest.raises(SpecError, match="BENCHLIB_TEST_SSH_KEY is not set"):
        provision(tmp_path / "lab.toml", hosts, tmp_path / "state")
    monkeypatch.setenv("BENCHLIB_TEST_SSH_KEY", "not used: refused before")
    wan = tmp_path / "wan-hosts.toml"
    wan.write_text('[ssh]\nuser = "root"\nkey_env = "BENCHLIB_TEST_SSH_KEY"\n'
                   '[hosts.near]\naddress = "198.19.250.11"\nnodes = ["galera-1", "galera-2", "galera-3", "galera-4"]\n'
                   '[hosts.far]\naddress = "198.19.250.12"\nnodes = ["galera-5", "galera-6"]\n')
    with pytest.raises(SpecError, match=r"host near holds nodes of different places: .*galera-4 \(west\)"):
        provision(EXAMPLES / "wan-galera.toml", wan, tmp_path / "state")
    assert not (tmp_path / "state").exists()


@pytest.mark.lab
@needs_root
@pytest.mark.skipif(hostroot.find() is None and not os.environ.get("CI"), reason="no namespace hosts' root built")
def test_a_wrong_key_a_closed_port_and_a_taken_port_each_get_one_message_naming_the_host(tmp_path, monkeypatch):
    kit = NamespaceHosts(LAB_ROOT / f"hostsbad{os.getpid()}", ["h1"]).up()
    listener = None
    try:
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "stranger")],
                       check=True)  # a key the host does not know
        monkeypatch.setenv("BENCHLIB_TEST_SSH_KEY", (tmp_path / "stranger").read_text())
        hosts = _hosts(tmp_path, kit)
        cli = subprocess.run([str(Path(sys.executable).parent / "benchlib"), "provision", str(tmp_path / "lab.toml"),
                              str(hosts), "--dir", str(tmp_path / "state")], capture_output=True, text=True, timeout=120)
        assert cli.returncode == 2 and "Traceback" not in cli.stderr, cli.stderr
        assert "host h1 unreachable over SSH" in cli.stderr and "Permission denied" in cli.stderr, cli.stderr
        assert "the key the hosts file names" in cli.stderr
        # the folder says where each host was left, and the same command goes on from there
        assert json.loads((tmp_path / "state" / "state.json").read_text())["reached"] == {"h1": "failed"}

        monkeypatch.setenv("BENCHLIB_TEST_SSH_KEY", kit.private_key)
        with pytest.raises(BenchlibError, match="host h1 unreachable over SSH.*refused"):
            provision(tmp_path / "lab.toml", _hosts(tmp_path, kit, ssh_port=2222), tmp_path / "state2", quiet=True)

        # something else listens on the first node's port on that host
        listener = subprocess.Popen(["ip", "netns", "exec", kit.hosts["h1"].netns, sys.executable, "-c",
                                     "import socket, time; s = socket.socket(); s.bind(('0.0.0.0', 3310)); "
                                     "s.listen(); time.sleep(300)"])
        time.sleep(0.5)
        with pytest.raises(BenchlibError) as err:
            provision(tmp_path / "lab.toml", _hosts(tmp_path, kit), tmp_path / "state3", quiet=True)
        assert "host h1: port 3310 (for semi-1) is in use" in err.value.render()
        assert "[defaults] port" in err.value.render()
        assert json.loads((tmp_path / "state3" / "state.json").read_text())["reached"] == {"h1": "failed"}
        pids = subprocess.run(["ip", "netns", "pids", kit.hosts["h1"].netns], capture_output=True, text=True).stdout
        assert [p for p in pids.split() if "mariadbd" in Path(f"/proc/{p}/comm").read_text()] == []  # nothing started
    finally:
        if listener is not None:
            listener.kill()
            listener.wait()
        kit.down()
