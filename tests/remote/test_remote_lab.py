"""A remote lab for real: the local lab's servers reached only by host:port through the namespace
network, load from two SSH client hosts, `lab check` and a campaign end to end."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from benchlib.errors import SettingError
from benchlib.lab import sql
from benchlib.lab.spec import load_spec
from benchlib.remote.check import format_remote_check
from benchlib.remote.lab import RemoteLab
from benchlib.remote.spec import load_remote_spec
from tests.campaigns import campaign_toml
from tests.remote.hosts import create_account, remote_lab_toml

#: ./scripts/test's phase 2 runs the remote-lab modules in one process: their client hosts share one network
LANE = "client hosts"
LONG_S = 120  # about how long this module's light tests take: phase 2 starts the longest first

LAB = """name = "rmt{pid}"
[defaults]
durability = "durable"
buffer_pool = "64M"
[clusters.async]
topology = "async"
replicas = 1
[clusters.galera]
topology = "galera"
nodes = 3
"""

ROLES = {"async-1": "primary", "async-2": "replica", "galera-1": "writer", "galera-2": "node", "galera-3": "node"}


def remote_toml(lab, hosts, *, user: str = "rbench", password_env: str = "BENCHLIB_TEST_DB_PASSWORD",
                node_extra: dict[str, str] | None = None) -> str:
    return remote_lab_toml(lab, hosts, name=f"r{lab.name}", systems={"async": "mariadb", "galera": "galera"},
                           roles=ROLES, user=user, password_env=password_env, node_extra=node_extra)


@pytest.fixture(scope="module")
def remote(labs, client_hosts, tmp_path_factory):
    d = tmp_path_factory.mktemp("remote")
    (d / "lab.toml").write_text(LAB.format(pid=os.getpid() % 10000))
    lab = labs.up(load_spec(d / "lab.toml"))
    password = secrets.token_urlsafe(18)
    weak = secrets.token_urlsafe(18)
    for writer in ("async-1", "galera-1"):  # accounts replicate to the other nodes
        create_account(lab, writer, "rbench", password,
                       "SUPER, SLAVE MONITOR, BINLOG MONITOR, REPLICATION CLIENT, PROCESS")
        create_account(lab, writer, "rweak", weak)
    for node in lab.layout.nodes.values():
        client_hosts.forward(node.port)
    os.environ["BENCHLIB_TEST_DB_PASSWORD"] = password
    os.environ["BENCHLIB_TEST_WEAK_PASSWORD"] = weak
    (d / "remote.toml").write_text(remote_toml(lab, client_hosts))
    (d / "weak.toml").write_text(remote_toml(lab, client_hosts, user="rweak",
                                             password_env="BENCHLIB_TEST_WEAK_PASSWORD"))
    yield lab, d
    for var in ("BENCHLIB_TEST_DB_PASSWORD", "BENCHLIB_TEST_WEAK_PASSWORD"):
        os.environ.pop(var, None)


def test_lab_check_passes_on_a_healthy_remote_lab(remote):
    lab, d = remote
    result = RemoteLab(load_remote_spec(d / "remote.toml")).health.check()
    text = "\n".join(format_remote_check(result))
    assert result.ok, text
    assert set(result.offsets) == {*ROLES, "c1", "c2"}  # every server and client host has a clock offset
    assert all(abs(o["offset_s"]) <= o["error_s"] + 0.002 for o in result.offsets.values()), text  # one clock
    assert "client host c1: sysbench 1.0.20" in text and "ready for a campaign" in text


def test_lab_check_names_each_problem_once(remote, monkeypatch):
    lab, d = remote
    spec = load_remote_spec(d / "remote.toml")
    monkeypatch.setenv("BENCHLIB_TEST_DB_PASSWORD", "not-the-password")
    wrong = RemoteLab(spec).health.check(clients=False)
    assert [f.message for f in wrong.problems] == [
        "async-1: the server refused the login of 'rbench' (wrong password, or no such account for this host): "
        "check the password in $BENCHLIB_TEST_DB_PASSWORD"]
    monkeypatch.undo()

    weak = RemoteLab(load_remote_spec(d / "weak.toml")).health.check(clients=False)
    assert len(weak.problems) == 1, weak.problems
    assert re.match(r"async-2: 'rweak' lacks a privilege the replica_status probe needs \(.*SLAVE MONITOR.*\); "
                    r"add it: GRANT REPLICATION CLIENT ON \*\.\* TO rweak", weak.problems[0].message)

    # an async pair the spec calls semi-sync: said on its primary, with what to do
    text = (d / "remote.toml").read_text()
    (d / "semi.toml").write_text(text.replace('[clusters.async]\nsystem = "mariadb"\n',
                                              '[clusters.async]\nsystem = "mariadb"\ntopology = "semisync"\n')
                                 + '[sites.far]\nnodes = ["galera-3"]\nrtt_ms = 50\n')
    labelled = RemoteLab(load_remote_spec(d / "semi.toml")).health.check(clients=False)
    # a declared site of a lab benchlib did not build: its round trip from here is said, not judged
    assert any(re.fullmatch(r"note galera-3: \d+\.\d ms round trip from here \(site far: rtt_ms = 50\)", line)
               for line in labelled.lines()), labelled.lines()
    assert [f.message for f in labelled.problems] == [
        "async-1: the spec says semisync, but semi-sync is OFF on the primary with 0 of 1 replicas as semi-sync "
        "clients: switch it on (primary and replicas, then restart the replicas' IO threads), or remove "
        'topology = "semisync" from the cluster']

    with lab.connect("async-2") as conn:
        sql.execute(conn, "STOP SLAVE")
    try:
        stopped = RemoteLab(spec).health.check(clients=False)
        assert [f.message for f in stopped.problems] == [
            "async-2: replication is stopped (IO thread: No, SQL thread: No): run START REPLICA on async-2"]
        cli = subprocess.run([sys.executable, "-m", "benchlib.cli", "lab", "check", str(d / "remote.toml")],
                             capture_output=True, text=True, env={**os.environ}, timeout=120)
        assert cli.returncode == 1 and "Traceback" not in cli.stderr + cli.stdout
        assert [line for line in cli.stdout.splitlines() if line.startswith("FAIL")] == [
            "FAIL async-2: replication is stopped (IO thread: No, SQL thread: No): run START REPLICA on async-2"]
    finally:
        with lab.connect("async-2") as conn:
            sql.execute(conn, "START SLAVE")
    assert lab.health.broken() == []


def test_a_setting_that_needs_a_restart_is_refused(remote):
    from benchlib.campaign.plan import plan
    from benchlib.campaign.spec import CampaignSpec

    _, d = remote
    spec = load_remote_spec(d / "remote.toml")
    campaign = CampaignSpec(name="x", lab="remote.toml", matrix={"performance_schema": [True]})
    with pytest.raises(SettingError, match="performance_schema takes effect only when the server restarts, and "
                                           "this remote lab does not allow restarts") as exc:
        plan(campaign, spec)
    assert "allow_restart = true" in exc.value.render()
    allowed = spec.model_copy(update={"allow_restart": True})
    with pytest.raises(SettingError, match="cannot do on a remote MariaDB server"):
        plan(campaign, allowed)


def _campaign(name: str, lab: str, *, clusters=("async", "galera"), repetitions: int = 2, time_s: int = 5) -> str:
    """Two configurations on the remote lab (disturbed runs kept: these tests count runs)."""
    return campaign_toml(name, lab, clusters=clusters, workloads=["oltp_read_write"], threads=[4], time_s=time_s,
                         repetitions=repetitions, table_size=2000, top="stall_s = 20\n", matrix='durability = ["relaxed"]\n')


def _sections(page: Path) -> list[str]:
    return re.findall(r"<h2>([^<]*)</h2>", page.read_text())


def test_campaign_from_two_client_hosts_reports_like_a_local_one(remote, tmp_path):
    from benchlib.analysis.campaign import analyze
    from benchlib.campaign.runner import run_campaign
    from benchlib.report import publish
    from benchlib.store import read_manifest

    lab, d = remote
    (d / "local.toml").write_text(_campaign("rlocal", "lab.toml"))
    (d / "remote-campaign.toml").write_text(_campaign("rremote", "remote.toml"))
    local = run_campaign(d / "local.toml", runs_dir=tmp_path, progress="none", keep_lab=True)
    # the remote one as a user runs it: the CLI, through the campaign notebook (papermill)
    cli = subprocess.run([str(Path(sys.executable).parent / "benchlib"), "run", str(d / "remote-campaign.toml"),
                          "--runs-dir", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert "using remote lab" in cli.stdout + cli.stderr
    far = run_campaign(d / "remote-campaign.toml", runs_dir=tmp_path, progress="none")  # resumes: nothing to do
    assert far.ran == [] and len(far.skipped) == 4
    assert local.counts == far.counts == {"ok": 4}, (local.table(), far.table())
    assert list((far.path / "notebooks").glob("*.ipynb"))
    assert lab.health.broken() == []  # the remote campaign never touched the servers' processes

    for run in far.plan:
        folder = far.path / run.run_id
        m = read_manifest(folder)
        hosts = m.client_hosts
        assert set(hosts) == {"c1", "c2"} and sum(h["threads"] for h in hosts.values()) == 4
        assert all(h["exit_status"] == 0 and h["sysbench"] == "sysbench 1.0.20" for h in hosts.values())
        assert abs(hosts["c1"]["start_s"] - hosts["c2"]["start_s"]) < 0.5  # started together
        nodes = {n.name for n in lab.layout.cluster_nodes(run.cluster)}
        assert set(m.clock_offsets) == nodes
        assert all(m.server_variables[n]["sync_binlog"] == "0" for n in nodes)  # the setting, by SET GLOBAL
        per_host = [pd.read_parquet(folder / "intervals.parquet")]
        from benchlib.sysbench.output import parse_file

        parts = [parse_file(folder / "raw" / f"sysbench-{h}.txt").intervals for h in ("c1", "c2")]
        merged = per_host[0]
        n = min(len(merged), *(len(p) for p in parts))
        assert n >= 4
        assert merged["tps"].head(n).sum() == pytest.approx(sum(p["tps"].head(n).sum() for p in parts), rel=1e-6)
        assert merged["threads"].head(n).tolist() == (parts[0]["threads"].head(n) + parts[1]["threads"].head(n)).tolist()
        assert (merged["threads"].iloc[:-1] == 4).all()  # (sysbench's last second may count exiting threads)
        lag = pd.read_parquet(folder / "lag.parquet")
        assert set(lag["node"]) == nodes - {run.cluster + "-1"} and lag["lag_ms"].notna().mean() > 0.9
        cl = pd.read_parquet(folder / "cluster.parquet")  # each client host's CPU, read over its SSH connection
        for host in ("host:c1", "host:c2"):
            cpu = cl[(cl.node == host) & (cl.metric == "cpu.all.user_s")].sort_values("t_s").value
            assert len(cpu) >= 3 and cpu.iloc[-1] > cpu.iloc[0], host
        assert {"Com_commit", "Innodb_data_fsyncs"} <= set(cl[cl.node == run.cluster + "-1"].metric)

    password = os.environ["BENCHLIB_TEST_DB_PASSWORD"]
    for f in far.path.rglob("*"):
        if f.is_file():
            assert password.encode() not in f.read_bytes(), f

    a_local, a_far = analyze(local.path), analyze(far.path)
    assert list(a_local.runs.columns) == list(a_far.runs.columns)
    assert list(a_local.configs.columns) == list(a_far.configs.columns)
    assert set(a_far.comparisons.cluster) == {"galera"}  # galera against the async baseline, as locally
    r_local = publish(local.path, out=tmp_path / "report-local", notebooks=False, static=False)
    r_far = publish(far.path, out=tmp_path / "report-remote", notebooks=False, static=False)
    assert _sections(r_local.page) == _sections(r_far.page)
    assert sorted(p.name for p in r_local.files) == sorted(p.name for p in r_far.files)


def test_server_hosts_with_ssh_report_their_metrics_and_an_unreachable_one_warns(remote, client_hosts):
    import time

    from benchlib.sampling.host import HostProbe
    from benchlib.sampling.status import StatusLog
    from tests.remote.hosts import SHARED

    lab, d = remote
    port = client_hosts.server_sshd()
    reach = (f', ssh = {{ user = "root", port = {port}, key_env = "BENCHLIB_TEST_SSH_KEY", '
             f'known_hosts = "{client_hosts.known_hosts}" }}')
    text = remote_toml(lab, client_hosts, node_extra={"async-1": reach, "async-2": reach,
                                                      "galera-1": reach.replace(f"port = {port}", "port = 1")})
    text = text.replace(f'name = "galera-1", host = "{SHARED}"', 'name = "galera-1", host = "127.0.0.1"')
    (d / "server-ssh.toml").write_text(text)
    rl = RemoteLab(load_remote_spec(d / "server-ssh.toml"))
    assert set(rl.spec.server_hosts()) == {"async-1", "galera-1"}  # one per address, named by its first node
    log = StatusLog()
    try:
        probes = {p.host: p for p in rl.hooks.extra_probes(list(ROLES), log, time.monotonic) if isinstance(p, HostProbe)}
        assert set(probes) == {"c1", "c2", "async-1", "galera-1"}
        for p in probes.values():
            p.setup()
        for _ in range(3):
            for p in probes.values():
                p.sample(time.monotonic())
            time.sleep(0.3)
        # only the async cluster's server host for a run on that cluster
        assert {p.host for p in rl.hooks.extra_probes(["async-1", "async-2"], log, time.monotonic)
                if isinstance(p, HostProbe)} == {"c1", "c2", "async-1"}
    finally:
        rl.close()
    cl = log.frame()
    cpu = cl[(cl.node == "host:async-1") & (cl.metric == "cpu.all.user_s")].value
    assert len(cpu) == 3 and cpu.is_monotonic_increasing
    assert cl[cl.node == "host:async-1"].metric.str.startswith("disk.").any()
    gone = probes["galera-1"]
    assert gone.off and "server host galera-1" in gone.warnings[0] and "cannot connect" in gone.warnings[0]
    assert cl[cl.node == "host:galera-1"].empty


def test_a_remote_lab_without_client_hosts_runs_sysbench_here(remote, tmp_path):
    """No [clients]: the same campaign, sysbench on the benchlib host; lab status and lab check work on it."""
    from benchlib.campaign.runner import run_campaign
    from benchlib.store import read_manifest

    lab, d = remote
    (d / "here.toml").write_text(remote_lab_toml(lab, None, name=f"h{lab.name}", systems={"async": "mariadb",
                                                                                          "galera": "galera"},
                                                 roles=ROLES, user="rbench", password_env="BENCHLIB_TEST_DB_PASSWORD"))
    assert "[clients" not in (d / "here.toml").read_text()
    (d / "here-campaign.toml").write_text(_campaign("rhere", "here.toml"))
    result = run_campaign(d / "here-campaign.toml", runs_dir=tmp_path, progress="none")
    assert result.counts == {"ok": 4}, result.table()
    for run in result.plan:
        m = read_manifest(result.path / run.run_id)
        assert m.client_hosts is None and m.lab.kind == "remote" and m.summary["tps"] > 0
        assert m.lab.facts.system == {"async": "mariadb", "galera": "galera"}[run.cluster]
        assert set(m.clock_offsets) == {n.name for n in lab.layout.cluster_nodes(run.cluster)}
    benchlib = str(Path(sys.executable).parent / "benchlib")
    status = subprocess.run([benchlib, "lab", "status", str(d / "here.toml")], capture_output=True, text=True)
    assert status.returncode == 0, status.stderr
    assert "galera-2" in status.stdout and "Synced" in status.stdout and "IO:Yes SQL:Yes" in status.stdout
    check = subprocess.run([benchlib, "lab", "check", str(d / "here.toml")], capture_output=True, text=True)
    assert check.returncode == 0 and "ready for a campaign" in check.stdout, check.stdout + check.stderr


def test_lab_check_names_a_node_that_does_not_answer(remote):
    _, d = remote
    text = (d / "remote.toml").read_text()
    port = re.search(r'name = "galera-3", host = "[0-9.]+", port = (\d+)', text).group(1)
    (d / "unreachable.toml").write_text(text.replace(f"port = {port},", "port = 9,"))
    result = RemoteLab(load_remote_spec(d / "unreachable.toml")).health.check(clients=False)
    assert [f.message.split(" (")[0] for f in result.problems] == ["galera-3: cannot connect to 198.18.251.1:9"]
    assert "check the address, the port, and that the server runs" in result.problems[0].message
    # galera-1 and galera-2 see a cluster of 3 still: the spec is the one that is wrong here, not the cluster


def test_a_node_lost_mid_run_fails_the_run_and_stops_the_campaign(remote, tmp_path, client_hosts):
    from benchlib.campaign.runner import CampaignError, run_campaign
    from benchlib.store import read_manifest
    from tests.conftest import kill9

    lab, d = remote
    spec = _campaign("rdown", "remote.toml", clusters=["galera"], repetitions=1, time_s=30)
    (d / "down.toml").write_text(spec)
    killed = []

    def kill_at_two_seconds(remote_lab, run, iv):
        if iv.t_s == 2.0 and not killed:
            killed.append(run.run_id)
            kill9(lab, "galera-3")

    try:
        with pytest.raises(CampaignError) as exc:
            run_campaign(d / "down.toml", runs_dir=tmp_path, progress="none", on_interval=kill_at_two_seconds)
        assert "galera-3 of remote lab" in exc.value.message and "does not restart remote servers" in \
            exc.value.message
        m = read_manifest(tmp_path / "rdown" / killed[0])
        assert m.status == "failed" and m.reason == "FAILED: galera-3 went down during the run"
        left = subprocess.run(["pgrep", "-f", "sysbench --config-file=/dev/stdin"], capture_output=True, text=True)
        marker = f"BENCHLIB_LOAD=r{lab.name}".encode()  # this remote lab's loads (another test's may run beside it)
        assert [p for p in left.stdout.split() if _environ_has(p, marker)] == []  # nothing left on the client hosts
    finally:
        lab.tuning.refresh()
        lab.health.heal()
    assert lab.health.broken() == []


def _environ_has(pid: str, entry: bytes) -> bool:
    try:
        return entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:  # gone meanwhile
        return False
