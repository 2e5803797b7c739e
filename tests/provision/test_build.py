"""benchlib provision on hosts with their own root filesystem, network, processes and sshd (namespace hosts): a
semi-sync pair and a group (with a Galera cluster too at the full size: ``FULL``) built over real SSH and apt,
checked as a remote lab, provisioned again without a change, then taken away leaving each host as it was."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pymysql
import pytest

from benchlib.lab.base import Fault
from benchlib.lab.wan import handshake_rtt
from benchlib.labs import load_lab_spec, open_lab
from benchlib.provision import hostroot
from benchlib.provision.build import provision, unprovision
from benchlib.provision.nshosts import NamespaceHosts
from benchlib.remote.check import check_remote
from benchlib.remote.lab import RemoteLab
from tests.campaigns import campaign_toml
from tests.conftest import LAB_ROOT, needs_root
from tests.provision.test_plan import MATTER, _options

#: options that matter but are not a variable as written (a file name's base, a list of plugins)
NOT_VARIABLES = {"log_bin", "plugin_load_add"}

pytestmark = [pytest.mark.lab, needs_root,
              pytest.mark.skipif(hostroot.find() is None and os.geteuid() == 0 and not os.environ.get("CI"),
                                 reason="the namespace hosts' root filesystem is not built (the bootstrap builds it)")]

#: the suite provisions the semi-sync pair and the group (the promotion's copy from host to host, systemd, the far site,
#: a host's firewall); the full size adds a Galera cluster to the same hosts:
#: ``BENCHLIB_FULL_SIZE=1 ./scripts/test tests/provision/test_build.py`` (about 4 minutes more on a loaded 2-core VM)
FULL = os.environ.get("BENCHLIB_FULL_SIZE") == "1"
CLUSTERS = ["semi", "galera", "gr"] if FULL else ["semi", "gr"]
TOPOLOGIES = {"semi": 'topology = "semisync"\nreplicas = 1', "galera": 'topology = "galera"\nnodes = 3',
              "gr": 'topology = "group_replication"\nnodes = 3'}
FAR = [f"{c}-3" for c in CLUSTERS if c != "semi"]  # the third host's nodes
SPEC = ('name = "prov"\n\n' + "".join(f"[clusters.{c}]\n{TOPOLOGIES[c]}\n\n" for c in CLUSTERS)
        + "[sites.far]                     # the third host's nodes: a WAN away (the hosts' kernel has no netem: the relay)\n"
        + f"nodes = {json.dumps(FAR)}\nrtt_ms = 20\n")
RTT_MS = 20
#: a failover run per cluster (the write node killed; GR expels at once with expel timeout 0, Galera suspects after
#: 2 s, the semi-sync pair's replica is promoted by benchlib), its load driven by sysbench on the client host
#: (installed by provisioning, started over SSH; across the far site for Galera and GR): benchlib kills the server over
#: SSH; its heal starts Galera's and GR's again through Ansible, and rebuilds the semi-sync primary from the promoted
#: replica's data, copied from host to host. (A closed-loop campaign from client hosts is tests/remote's.)
CAMPAIGNS = {
    "provfail": campaign_toml("provfail", "prov/remote.toml", clusters=CLUSTERS, threads=[4],
                              repetitions=1, seed=1, table_size=2000, time_s=12,  # GR (expel timeout 0) elects about 6 s after the kill at 3 s
                              load="rates = [100]\n",
                              matrix="gr_member_expel_timeout = [0]\n" + ("suspect_timeout = [2]\n" if FULL else ""),
                              tail='[fault]\nkind = "kill"\ntarget = "write_node"\nat_s = 3\nwrite_rate = 50\n'
                                   'failover = "promote"\n'),
}
#: three hosts, each with a group member (and a Galera node at the full size; the semi-sync pair on the first two): a
#: host with several servers of two flavours, as a lab machine often has
PLACES = {"h1": [f"{c}-1" for c in CLUSTERS], "h2": [f"{c}-2" for c in CLUSTERS], "h3": FAR}
CLIENT = "h2"  # sysbench runs there (installed by provisioning), started over SSH
#: the host that boots systemd (the others run tini): its servers run as units benchlib@NODE, and the write nodes the
#: failover campaign kills there are killed and started again through systemd
SYSTEMD_HOST = "h1"


def _effective_matches(node: str, cnf: str, effective: dict[str, str]) -> int:
    """Each option of ``cnf`` that matters against the server's variable of that name; returns how many."""
    n = 0
    for key, value in _options(cnf).items():
        name = key.removeprefix("loose-")
        if not MATTER.search(name) or name in NOT_VARIABLES:
            continue
        assert name in effective, f"{node}: {name} is not a variable of the server"
        if name == "wsrep_provider_options":  # the provider lists every option: ours among them
            have = dict(o.split(" = ", 1) for o in effective[name].rstrip(";").split("; ") if " = " in o)
            for opt in value.strip('"').split(";"):
                k, v = opt.split("=", 1)
                assert have.get(k) == v, f"{node}: provider option {k} is {have.get(k)}, the spec says {v}"
        else:
            assert effective[name].upper() == value.upper(), f"{node}: {name} is {effective[name]}, my.cnf says {value}"
        n += 1
    return n


def _member_state(lab, observer: str, member: str) -> str:
    """How ``observer`` sees ``member`` in its group (gone: expelled)."""
    with lab.connect(observer) as conn, conn.cursor() as cur:
        cur.execute("SELECT MEMBER_HOST, MEMBER_PORT, MEMBER_STATE FROM performance_schema.replication_group_members")
        rows = cur.fetchall()
    node = lab.node(member)
    return next((r["MEMBER_STATE"] for r in rows if r["MEMBER_HOST"] == node.host and r["MEMBER_PORT"] == node.port),
                "gone")


def _host_state(kit: NamespaceHosts, name: str) -> dict:
    """What a host has: its packages, accounts, benchlib's folders, its processes."""
    root = kit.hosts[name].root
    pkgs = subprocess.run(["chroot", str(root), "dpkg-query", "-W", "-f", "${Package} ${Status}\\n"],
                          capture_output=True, text=True, check=True).stdout
    pids = subprocess.run(["ip", "netns", "pids", kit.hosts[name].netns], capture_output=True, text=True).stdout.split()
    comms = sorted(Path(f"/proc/{p}/comm").read_text().strip() for p in pids if Path(f"/proc/{p}").exists())
    return {"packages": sorted(line.split()[0] for line in pkgs.splitlines() if line.endswith(" install ok installed")),
            "passwd": sorted(line.split(":")[0] for line in (root / "etc/passwd").read_text().splitlines()),
            "benchlib": [p for p in ("var/lib/benchlib", "opt/benchlib", "etc/benchlib", "usr/local/sbin/benchlib-node",
                                     "etc/systemd/system/benchlib@.service", "etc/systemd/system/benchlib-wan.service",
                                     "usr/local/lib/benchlib", "var/log/benchlib-wan.log") if (root / p).exists()],
            "processes": [c for c in comms if c not in ("sshd", "sshd-session")],
            "routing rules": subprocess.run(["ip", "-n", kit.hosts[name].netns, "rule", "show"], capture_output=True,
                                            text=True, check=True).stdout.splitlines()}


#: the median TCP handshake to a host from another host (its own Python: benchlib is not there)
CONNECT_MS = ("python3 -c 'import socket, statistics, time\nts = []\nfor _ in range(7):\n    t0 = time.perf_counter()\n"
              "    socket.create_connection((\"{address}\", {port}), timeout=5).close()\n"
              "    ts.append((time.perf_counter() - t0) * 1000)\nprint(statistics.median(ts))'")


@pytest.mark.heavy
@pytest.mark.timeout(900)
def test_the_topologies_are_built_checked_rebuilt_without_change_and_taken_away(tmp_path, monkeypatch):
    # (under LAB_ROOT: the suite's cleanup finds the kit there)
    kit = NamespaceHosts(LAB_ROOT / f"hosts{os.getpid()}", list(PLACES), systemd=[SYSTEMD_HOST])
    kit.up()
    try:
        before = {h: _host_state(kit, h) for h in PLACES}
        monkeypatch.setenv("BENCHLIB_TEST_SSH_KEY", kit.private_key)
        (tmp_path / "lab.toml").write_text(SPEC)
        (tmp_path / "hosts.toml").write_text(
            f'[ssh]\nuser = "root"\nkey_env = "BENCHLIB_TEST_SSH_KEY"\nknown_hosts = "{kit.known_hosts}"\n\n'
            '[defaults]\nport = 3310\napt_update = false\n\n'
            + "".join(f'[hosts.{h}]\naddress = "{kit.hosts[h].address}"\nnodes = {json.dumps(n)}\n'
                      + ("client = true\n" if h == CLIENT else "") + "\n" for h, n in PLACES.items()))
        folder = tmp_path / "prov"
        built = provision(tmp_path / "lab.toml", tmp_path / "hosts.toml", folder, quiet=True)
        print(f"provisioned in {built.seconds:.0f} s with {built.changed} changes")
        assert built.changed > 0
        lab = RemoteLab(load_lab_spec(built.remote_spec))
        check = check_remote(lab)
        assert check.ok, "\n".join(check.lines())
        assert "ok   semi-1: semi-sync ON, 1 of 1 replicas as clients" in check.lines()  # really semi-sync
        sites = [line for line in check.lines() if "round trip from here" in line]
        assert [line.split(":")[0] for line in sites] == [f"ok   {n}" for n in FAR], sites  # really far
        plab = open_lab(load_lab_spec(built.remote_spec))[0]
        units = " ".join(f"benchlib@{n}" for n in PLACES[SYSTEMD_HOST])
        assert plab.run_on_host("semi-1", f"systemctl is-active {units}").split() == ["active"] * len(CLUSTERS)
        # no systemd on h2: the script started the server itself
        assert plab.run_on_host("semi-2", "test ! -d /run/systemd/system && /usr/local/sbin/benchlib-node status "
                                          "semi-2").strip().isdigit()
        # the far site is RTT_MS away: from benchlib's machine (h3 delays its answers by the whole round trip) and
        # from h1 (each end by half; h1's relay runs under systemd); h1 and h2 stay next to each other
        h2, h3 = kit.hosts["h2"].address, kit.hosts["h3"].address
        far, near = (handshake_rtt(a, 22, samples=7)["median_ms"] for a in (h3, h2))
        h1_h3, h1_h2 = (float(plab.run_on_host("semi-1", CONNECT_MS.format(address=a, port=22))) for a in (h3, h2))
        print(f"round trips: here-h3 {far:.1f} ms, h1-h3 {h1_h3:.1f} ms, here-h2 {near:.1f} ms, h1-h2 {h1_h2:.1f} ms")
        assert RTT_MS * 0.95 <= far < RTT_MS * 2 and RTT_MS * 0.95 <= h1_h3 < RTT_MS * 2
        # next to each other: a small part of the far site's round trip (a busy host slows a handshake by a few ms)
        assert near < RTT_MS / 2 and h1_h2 < RTT_MS / 2
        assert plab.run_on_host("semi-1", "systemctl is-active benchlib-wan").strip() == "active"

        again = provision(tmp_path / "lab.toml", tmp_path / "hosts.toml", folder, quiet=True)
        print(f"provisioned again in {again.seconds:.0f} s")
        assert again.changed == 0 and "nothing changed" in again.summary()

        # the servers run with the spec's settings: every option that matters in each node's my.cnf (the embedded
        # lab's, test_plan shows) is the server's effective value
        lab = RemoteLab(load_lab_spec(built.remote_spec))
        checked = 0
        for host, nodes in PLACES.items():
            for node in nodes:
                cnf = (kit.hosts[host].root / f"var/lib/benchlib/prov/{node}/my.cnf").read_text()
                with lab.connect(node) as conn, conn.cursor() as cur:
                    cur.execute("SHOW GLOBAL VARIABLES")
                    effective = {r["Variable_name"].lower(): r["Value"] for r in cur.fetchall()}
                checked += _effective_matches(node, cnf, effective)
        lab.close()
        # 136 for the full size's 8 servers: durability, buffer pool, binary log, GTID, semi-sync, Galera, the group
        assert checked > 12 * sum(len(nodes) for nodes in PLACES.values())

        # a failover campaign on the provisioned hosts, its load from the client host
        from benchlib.campaign.runner import run_campaign

        for name, text in CAMPAIGNS.items():
            (tmp_path / f"{name}.toml").write_text(text)
            result = run_campaign(tmp_path / f"{name}.toml", runs_dir=tmp_path / "runs", progress="none")
            assert result.counts == {"ok": len(CLUSTERS)}, result.table()
        for run_dir in sorted((tmp_path / "runs" / "provfail").glob("0*")):
            m = json.loads((run_dir / "manifest.json").read_text())
            cluster, f = m["lab"]["cluster"], m["axes"]["fault"]  # the fault axis's entry: the fault and what happened
            assert m["status"] == "ok" and f["words"].startswith("killed"), f
            assert f["heal"]["restarted"] == f["nodes"], f["heal"]  # killed over SSH, started by the heal
            assert f["ledger"]["lost"] == 0, f["ledger"]  # semi-sync: what it acknowledged, its replica had
            rtt = {n["name"]: n["rtt_ms"] for n in m["lab"]["facts"]["nodes"]}  # the run says where its nodes were
            size = 2 if cluster == "semi" else 3
            assert rtt == {f"{cluster}-{i}": RTT_MS if i == 3 else 0.0 for i in range(1, size + 1)}, rtt
            if cluster == "semi":  # promoted by benchlib, its old primary rebuilt from the promoted node's data
                assert f["promotion"]["primary"] == "semi-2" and f["ledger"]["missing_on"] == {"semi-1": 0}, m
                assert f["heal"]["how"][0].startswith("semi-1 rebuilt from a copy of semi-2's data"), f["heal"]
        # the pair is semi-sync again with its original primary
        assert "ok   semi-1: semi-sync ON, 1 of 1 replicas as clients" in check_remote(
            RemoteLab(load_lab_spec(built.remote_spec))).lines()
        from benchlib.analysis.campaign import analyze

        cost = analyze(tmp_path / "runs" / "provfail").axis("fault").failover.set_index("run_id")
        print("failover across the far site:", {r: round(v, 2) for r, v in cost.unavailability_s.items()})
        assert RemoteLab(load_lab_spec(built.remote_spec)).health.broken() == []
        for node in [f"{c}-1" for c in CLUSTERS if c != "semi"]:  # killed through systemd, and started again as the unit's main process
            main = plab.run_on_host(node, f"systemctl show -P ExecMainPID benchlib@{node}").strip()
            assert main == plab.run_on_host(node, f"/usr/local/sbin/benchlib-node status {node}").strip() != "0", node

        # gr-3 cut off from its group by its host's firewall: the group loses it, benchlib still reaches it
        control = plab.faults()
        cut = Fault("isolate", ("gr-3",))
        assert control.fault_refusal("gr", "isolate", ["gr-3"], None) is None
        control.inject("gr", cut)
        try:
            deadline = time.monotonic() + 20
            while _member_state(plab, "gr-1", "gr-3") == "ONLINE":
                assert time.monotonic() < deadline, "gr-1 still sees gr-3 ONLINE 20 s after its isolation"
                time.sleep(0.25)
            with plab.connect("gr-3") as conn, conn.cursor() as cur:  # its clients still reach it
                cur.execute("SELECT 1")
        finally:
            control.release("gr", cut)
        rules = subprocess.run(["ip", "netns", "exec", kit.hosts["h3"].netns, "chroot", str(kit.hosts["h3"].root),
                                "iptables", "-S"], capture_output=True, text=True, check=True).stdout
        assert "benchlib" not in rules
        plab.close()

        # secrets: only in the mode-600 files, never in the log, Ansible's files or the remote spec
        passwords = list(json.loads((folder / "secrets.json").read_text()).values())
        for f in folder.rglob("*"):
            if f.is_file() and f.name not in ("secrets.json", "bench.password", "secrets.vars.json"):
                assert not any(p in f.read_text(errors="replace") for p in passwords), f
        for f in ("secrets.json", "bench.password", "secrets.vars.json"):
            assert (folder / f).stat().st_mode & 0o777 == 0o600, f
        for port in [3310 + 10 * i for i in range(len(CLUSTERS))]:  # no account without a password from benchlib's address
            with pytest.raises(pymysql.MySQLError):
                pymysql.connect(host=kit.hosts["h1"].address, port=port, user="root", password="", connect_timeout=3)

        changed, seconds = unprovision(folder, quiet=True)
        print(f"unprovisioned in {seconds:.0f} s")
        assert changed > 0 and not folder.exists()
        after = {h: _host_state(kit, h) for h in PLACES}
        for h in PLACES:
            for what in before[h]:
                assert set(after[h][what]) ^ set(before[h][what]) == set(), f"{h} {what}: before {before[h][what]}"
    finally:
        kit.down()
    assert not Path(kit.dir).exists()
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not any(h.netns in namespaces for h in kit.hosts.values())
    assert str(kit.dir) not in Path("/proc/mounts").read_text()
