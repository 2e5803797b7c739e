"""The provisioning commands of docs/labs/real-machines.md, run verbatim, against hosts that refuse SSH: loopback
addresses with nothing listening on the SSH port. Run from a folder laid out as the repository and from another
folder, each ends in one message naming every host that did not answer, never in an Ansible path error."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from benchlib.provision import collections

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "labs" / "real-machines.md"
REFUSING = ["127.0.0.2", "127.0.0.3", "127.0.0.4"]  # loopback, nothing listening on port 22 (checked below)


def _documented() -> tuple[str, list[str]]:
    """The page's hosts file and its commands, as written."""
    text = PAGE.read_text()
    hosts = re.search(r"```toml\n(# hosts\.toml.*?)```", text, re.S)
    assert hosts, f"{PAGE} shows no hosts.toml"
    commands = [line.strip().split("#")[0].strip() for line in text.splitlines()
                if re.match(r"\s{4}(export |benchlib )", line)]
    return hosts.group(1), commands


def _refused(address: str, port: int = 22) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((address, port)) != 0


@pytest.mark.skipif(not (collections.path() / "ansible_collections" / "community" / "mysql").is_dir(),
                    reason="Ansible's collections are not installed (the bootstrap installs them)")
@pytest.mark.parametrize("where", ["repository root", "another folder"])
@pytest.mark.long
def test_the_documented_commands_name_every_host_that_refuses_ssh(tmp_path, where):
    assert all(_refused(a) for a in REFUSING), "something listens on port 22 of a loopback address the test uses"
    hosts_text, commands = _documented()
    addresses = re.findall(r'address = "([^"]+)"', hosts_text)
    assert len(addresses) == 3
    for real, loop in zip(addresses, REFUSING):
        hosts_text = hosts_text.replace(f'"{real}"', f'"{loop}"')
    provision = next(c for c in commands if c.startswith("benchlib provision"))
    unprovision = next(c for c in commands if c.startswith("benchlib unprovision"))
    assert provision == "benchlib provision examples/labs/galera-3.toml hosts.toml"
    cwd = tmp_path / "repo"
    if where == "repository root":  # the repository's examples folder as the page expects it
        (cwd / "examples").mkdir(parents=True)
        shutil.copytree(ROOT / "examples" / "labs", cwd / "examples" / "labs")
    else:  # a folder of the user's own: the lab spec given by where it is
        cwd = tmp_path / "elsewhere" / "deeper"
        cwd.mkdir(parents=True)
        provision = provision.replace("examples/labs/galera-3.toml", str(ROOT / "examples/labs/galera-3.toml"))
    (cwd / "hosts.toml").write_text(hosts_text)
    key = tmp_path / "id"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    env = {**os.environ, "BENCH_SSH_KEY": key.read_text(),
           "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}

    res = subprocess.run(shlex.split(provision), cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    said = res.stderr
    assert res.returncode == 2 and "Traceback" not in said, said
    assert "3 hosts unreachable over SSH: db1, db2, db3" in said, said
    assert all(f"db{i}: connect to host 127.0.0.{i + 1} port 22: Connection refused" in said for i in (1, 2, 3)), said
    assert "Connection refused" in said, said
    assert "Could not find or access" not in said and "Unable to parse" not in said, said
    folder = cwd / "provisioned" / "galera-3"
    state = (folder / "state.json").read_text()
    assert all(f'"db{i}": "failed"' in state for i in (1, 2, 3)), state  # every host marked, not just the first

    res = subprocess.run(shlex.split(unprovision), cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert "3 hosts unreachable over SSH" in res.stderr and "Could not find or access" not in res.stderr, res.stderr
