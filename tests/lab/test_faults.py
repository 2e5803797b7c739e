"""Bad input and faults: one clear error, nothing left running, orphans found by cleanup."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from benchlib.errors import LabError, MissingDependencyError, NodeStartError
from benchlib.lab import procs, state, wan
from benchlib.lab.cleanup import cleanup
from benchlib.lab.lab import LocalLab
from benchlib.lab.state import list_labs
from benchlib.lab.layout import lab_root, netns_name
from benchlib.lab.spec import parse_spec
from tests.conftest import example_spec, leftovers, needs_root


@pytest.mark.lab
def test_node_that_fails_to_start_leaves_nothing(tmp_path):
    spec = example_spec("galera-3.toml", "t-badopt",
                        clusters={"galera": {"topology": "galera", "server": {"innodb_no_such_option": 1}}})
    with pytest.raises(NodeStartError) as info:
        LocalLab.up(spec)
    message = info.value.render()
    assert "exited during start" in message
    assert "unknown variable 'innodb_no_such_option=1'" in message  # the error-log tail
    assert "error logs are kept in" in message
    assert "t-badopt" not in list_labs()
    assert not procs.find(f"{lab_root()}/t-badopt/")
    assert not (lab_root() / "t-badopt").exists()


@pytest.mark.lab
def test_port_in_use_is_named(tmp_path):
    spec = parse_spec('name = "t-port"\nbase_port = 23500\n[clusters.a]\ntopology = "async"\nreplicas = 1\n')
    with socket.socket() as held:
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        held.bind(("127.0.0.1", 23510))
        held.listen()
        with pytest.raises(LabError) as info:
            LocalLab.up(spec)
    assert "port 23510 (a-2 mysql) is already in use" in info.value.render()
    assert not (lab_root() / "t-port").exists()


def test_missing_binary_is_named(monkeypatch):
    spec = example_spec("galera-3.toml", "t-nobin")
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda exe, *a, **k: None if exe == "rsync" else real_which(exe, *a, **k))
    with pytest.raises(MissingDependencyError) as info:
        LocalLab.up(spec)
    assert "missing system packages for this lab: rsync" in info.value.render()
    assert "apt-get install -y rsync" in info.value.render()


def test_second_lab_with_same_name_and_other_spec_is_refused(fresh_labs):
    fresh_labs.up(example_spec("single.toml", "t-twice"))
    with pytest.raises(LabError, match="already up with a different spec"):
        LocalLab.up(example_spec("async-1p2r.toml", "t-twice"))


def test_two_labs_side_by_side_get_distinct_ports(fresh_labs):
    a = fresh_labs.up(example_spec("single.toml", "t-side-a"))
    b = fresh_labs.up(example_spec("single.toml", "t-side-b"))
    assert {n.port for n in a.layout.nodes.values()}.isdisjoint(n.port for n in b.layout.nodes.values())


@pytest.mark.lab
@pytest.mark.alone  # cleanup() looks at every lab under the root
def test_cleanup_stops_orphans_of_a_crashed_run():
    lab = LocalLab.up(example_spec("async-1p2r.toml", "t-orphan"))
    pids = list(lab.record.pids.values())
    state.record_path(lab.dir).unlink()  # the record of a crashed run is gone, its servers still run
    assert all(procs.is_running(p) for p in pids)
    report = cleanup()
    assert report.processes >= 3 and str(lab.dir) in report.directories
    assert not any(procs.is_running(p) for p in pids)
    assert leftovers(lab) == []


@pytest.mark.lab
@needs_root
@pytest.mark.alone  # cleanup() looks at every lab under the root
def test_cleanup_removes_orphan_namespaces():
    lab = LocalLab.up(example_spec("wan-semisync.toml", "t-orphns"))
    state.record_path(lab.dir).unlink()  # a crashed run: no record, servers, relay and namespace still there
    # a namespace of the same lab name under another root (another user's or test session's) is not ours
    other = netns_name(Path("/tmp/not-this-root"), "t-orphns", "far")
    subprocess.run(["ip", "netns", "add", other], check=True)
    try:
        report = cleanup()
        assert report.namespaces == [lab.layout.sites["far"].netns]
        assert other in wan.list_namespaces()
    finally:
        subprocess.run(["ip", "netns", "del", other], check=False)
    assert leftovers(lab) == []


@pytest.mark.lab
def test_interrupted_bring_up_leaves_nothing(monkeypatch):
    from benchlib.lab import topology

    def boom(self, timeout):
        raise KeyboardInterrupt

    monkeypatch.setattr(topology.Async, "form", boom)
    spec = example_spec("async-1p2r.toml", "t-intr")
    with pytest.raises(KeyboardInterrupt):
        LocalLab.up(spec)
    assert not procs.find(f"{lab_root()}/t-intr/")
    assert not (lab_root() / "t-intr").exists()


@pytest.mark.long
def test_cli_bad_spec_exits_2_with_one_message(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[clusters.a]\ntopology = "async"\nreplicas = "two"\n')
    res = subprocess.run([sys.executable, "-m", "benchlib.cli", "lab", "up", str(bad)], capture_output=True, text=True)
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    assert f"{bad}: invalid lab spec (1 problem)" in res.stderr
    assert "clusters.a.replicas" in res.stderr


def test_cli_open_unknown_lab(tmp_path):
    res = subprocess.run([sys.executable, "-m", "benchlib.cli", "lab", "status", "no-such-lab"],
                         capture_output=True, text=True)
    assert res.returncode == 2 and "no lab named 'no-such-lab'" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.lab
def test_sigterm_during_bring_up_rolls_back(tmp_path):
    import signal
    import time

    spec = tmp_path / "g.toml"
    spec.write_text('name = "t-term"\n[clusters.g]\ntopology = "galera"\nnodes = 3\n')
    proc = subprocess.Popen([sys.executable, "-m", "benchlib.cli", "lab", "up", str(spec)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not procs.find(f"{lab_root()}/t-term/g-") and time.monotonic() < deadline:
        time.sleep(0.01)  # wait until servers are starting
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert not procs.find(f"{lab_root()}/t-term/")
    assert not (lab_root() / "t-term").exists()
