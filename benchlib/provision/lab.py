"""A provisioned lab: the remote lab ``benchlib provision`` built, whose servers are benchlib's to kill, freeze and
restart.

It is a ``benchlib.remote.lab.RemoteLab`` (connections, load, sampling, check: as any remote lab) with two
capabilities more, both through the hosts: faults, by the fault layer the embedded lab has too
(``benchlib.lab.node_hosts.HostFaults``) over this lab's hosts (``ProvisionedHosts``): ``kill``: SIGKILL, ``freeze``:
SIGSTOP until released, sent over the SSH connection to the node's host as ``benchlib-node kill|freeze|thaw NODE``; ``isolate``: the node cut off from
the other nodes of its cluster while its clients still reach it, by firewall rules on its host (iptables: its peers'
addresses on its cluster's ports, each rule named after the node, removed on release); and a heal that starts the nodes
that do not answer and waits until each is back in its cluster (Ansible's ``heal.yml``: a Galera node rejoins by
state transfer, a group member starts Group Replication again and the group gets its intended primary back).

``promote`` on an async or semi-sync cluster is the embedded lab's (``benchlib.lab.faults.promote``: the most advanced
replica takes the writes, the others follow it), its SQL sent as each server's ``root@localhost`` through a port
forwarded over the SSH connection to the server's socket (no administrator account opens to the network). The heal
then gives the original primary its role back as the embedded lab does (``benchlib.lab.node_hosts.restore``): the
promoted node's data copied over the old primary's, streamed from host to host through this machine (``tar`` over
the two SSH connections), both started again, every replica following the original primary. Which cluster was
promoted is kept in the folder (``promoted.json``), so a ``lab heal`` in another process restores it too.
"""

from __future__ import annotations

import json
import shlex
import threading
import time
from pathlib import Path

import pymysql

from benchlib.errors import LabError
from benchlib.lab import faults as lab_faults
from benchlib.lab import node_hosts
from benchlib.lab import secrets as lab_secrets
from benchlib.lab.base import Progress, quiet
from benchlib.lab.layout import NodePlan
from benchlib.lab.node import write_private
from benchlib.lab.topology import ClusterContext, Topology, for_cluster
from benchlib.remote.capabilities import RemoteHealth
from benchlib.remote.lab import RemoteLab
from benchlib.remote.spec import RemoteLabSpec

__all__ = ["ProvisionedHosts", "ProvisionedLab"]


class ProvisionedLab(RemoteLab):
    """A remote lab whose servers benchlib provisioned (a ``benchlib.lab.base.Lab``): it heals them and has faults."""

    health: ProvisionedHealth
    def __init__(self, spec: RemoteLabSpec):
        super().__init__(spec)
        assert spec.provisioned is not None
        self.folder = Path(spec.provisioned)
        self._fault_ssh = None
        self._fault_lock = threading.Lock()
        self._plan = None
        self._forwards: dict[str, int] = {}  # node -> the port here that reaches its server's socket
        self._creds = None
        self.health = ProvisionedHealth(self)

    def faults(self) -> node_hosts.HostFaults:  # type: ignore[override]
        """Its faults (``benchlib.lab.base.FaultControl``): the fault layer the embedded lab has too
        (``benchlib.lab.node_hosts``), over its hosts (``ProvisionedHosts``)."""
        return node_hosts.HostFaults(self, self.hosts())

    def hosts(self) -> "ProvisionedHosts":
        """Its nodes' servers and hosts, as its faults and its heal act on them, over SSH."""
        return ProvisionedHosts(self)

    def plan(self):
        """The provisioning plan of these servers (their ports and hosts), from the folder it kept."""
        if self._plan is None:
            from benchlib.provision.build import reopen

            self._plan = reopen(self.folder)[1]
        return self._plan

    def _host_ssh(self, node: str):
        """(the SSH connections to server hosts, the key of ``node``'s host there): opened once, kept."""
        from benchlib.remote.ssh import SSHClients

        n = self.node(node)
        if n.ssh is None:
            raise LabError(f"{node} has no ssh access in the lab spec: benchlib reaches its server over SSH")
        key = next(name for name, h in self.spec.server_hosts().items() if h.host == n.host)
        with self._fault_lock:
            if self._fault_ssh is None:
                self._fault_ssh = SSHClients(self.spec.server_hosts(), kind="server host")
            if key not in self._fault_ssh.conns:
                self._fault_ssh.open([key], keep=True)
        return self._fault_ssh, key

    def _as_root(self, node: str, command: str) -> str:
        # a pipe or a chain of commands runs as root as a whole (sudo before the first would cover only that one)
        return command if self.node(node).ssh.user == "root" else f"sudo -n sh -c {shlex.quote(command)}"

    def run_on_host(self, node: str, command: str, timeout: float = 30.0) -> str:
        """Run ``command`` as root on the host of ``node`` (its spec's SSH access); its output, or an error naming
        the node and what the host said."""
        ssh, key = self._host_ssh(node)
        rc, out, err = ssh.run(key, self._as_root(node, command), timeout=timeout)
        if rc != 0:
            raise LabError(f"{node}: `{command}` failed on {self.node(node).host} (exit {rc}): "
                           f"{(err or out).strip()[:300]}")
        return out

    # -- the servers' own administrator, through SSH -------------------------------------------------------------------
    def admin_connect(self, node: NodePlan | str, *, timeout: float = 5.0, **_):
        """A connection as ``root@localhost`` of ``node``'s server: through a port here forwarded over the SSH
        connection to the server's socket on its host (the password from the folder's mode-600 file)."""
        name = node if isinstance(node, str) else node.name
        if name not in self._forwards:
            ssh, key = self._host_ssh(name)
            self._forwards[name] = ssh.forward_socket(key, str(self.plan().nodes[name].plan.socket))
        try:
            return pymysql.connect(host="127.0.0.1", port=self._forwards[name], user="root",
                                   password=self._credentials().password("root"), connect_timeout=timeout,
                                   read_timeout=60, write_timeout=60, autocommit=True,
                                   cursorclass=pymysql.cursors.DictCursor)
        except pymysql.MySQLError as exc:
            raise LabError(f"cannot connect to {name} as its root through SSH "
                           f"({exc.args[-1] if exc.args else exc})") from None

    def _credentials(self):
        """The lab's generated passwords (the folder's mode-600 file), read once."""
        if self._creds is None:
            self._creds = lab_secrets.load(self.folder)
        return self._creds

    def topology(self, cluster: str) -> Topology:
        """The embedded lab's topology of ``cluster`` over the provisioned servers (its SQL as their root)."""
        planned = self.plan().cluster_nodes(cluster)
        return for_cluster(ClusterContext(cluster, self.plan().lab.clusters[cluster], [p.plan for p in planned],
                                          self.admin_connect, lambda: self.tuning.settings(cluster),
                                          self._credentials().password, self.spec.setting_rules(cluster),
                                          planned[0].flavor, planned[0].server.server))

    # -- promotion: which cluster has another primary, and the original one given back -------------------------------
    def promoted(self) -> dict[str, str]:
        """{cluster: its promoted node}: the clusters whose primary moved and has not been given back."""
        path = self.folder / PROMOTED
        return json.loads(path.read_text()) if path.exists() else {}

    def record_promotion(self, cluster: str, node: str | None) -> None:
        now = self.promoted()
        if node is None:
            now.pop(cluster, None)
        else:
            now[cluster] = node
        write_private(self.folder / PROMOTED, json.dumps(now), None)

    def _restore(self, cluster: str, promoted: str, timeout: float) -> str:
        topo = self.topology(cluster)
        how = node_hosts.restore(topo, next(n for n in topo.nodes if n.name == promoted), self.hosts(), timeout)
        node_hosts.reapply(topo, self.tuning.settings(cluster), topo.nodes)
        self.record_promotion(cluster, None)
        return how

    def _copy_data(self, src: NodePlan, dst: NodePlan) -> None:
        """``dst``'s datadir replaced by a copy of ``src``'s (both stopped), without the files that are ``src``'s own
        (``benchlib.lab.faults.NODE_FILES``), streamed from host to host through this machine."""
        skip = " ".join(f"--exclude={shlex.quote(p)}" for p in
                        (*lab_faults.NODE_FILES, *(f"{p}*" for p in lab_faults.NODE_PREFIXES), "*.pid"))
        d = shlex.quote(str(dst.datadir))
        ssh, from_key = self._host_ssh(src.name)
        _, to_key = self._host_ssh(dst.name)
        ssh.pipe(from_key, self._as_root(src.name, f"tar -C {shlex.quote(str(src.datadir))} {skip} -cf - ."),
                 to_key, self._as_root(dst.name, f"rm -rf {d} && mkdir -m 750 {d} && tar -C {d} -xf - && "
                                                 f"chown -R mysql:mysql {d}"))

    def close(self, *, down: bool = False) -> None:
        super().close(down=down)
        with self._fault_lock:
            if self._fault_ssh is not None:
                self._fault_ssh.close()
                self._fault_ssh = None
            self._forwards.clear()  # their listeners closed with the connections


class ProvisionedHealth(RemoteHealth):
    """``benchlib.lab.base.Health`` of a provisioned lab: benchlib built these servers, so it starts them again."""

    def __init__(self, lab: ProvisionedLab):
        super().__init__(lab)
        self._healed_how: list[str] = []

    def describe(self) -> str:
        return super().describe().replace("remote lab", "provisioned lab", 1)

    def heal(self, *, timeout: float = 120.0, progress: Progress = quiet) -> list[str]:
        """Give a promoted cluster its original primary back, then start every node that does not answer and wait
        until it is back in its cluster (Ansible's heal.yml on those nodes only); returns the nodes started again."""
        from benchlib.provision.build import heal

        lab = self.lab
        self._healed_how = []
        restarted = []
        for cluster, promoted in lab.promoted().items():
            old = lab.topology(cluster).nodes[0].name
            progress(f"{cluster}: {old} made primary again from {promoted}'s data ...")
            self._healed_how.append(lab._restore(cluster, promoted, timeout))
            restarted.append(old)
        down = self.broken()
        if down:
            progress(f"restarting {', '.join(down)} on their hosts ...")
            self._healed_how += heal(lab.folder, down, quiet=True)
        return restarted + [n for n in down if n not in restarted]

    def heal_report(self) -> list[str]:
        return list(self._healed_how)


PROMOTED = "promoted.json"


def _tag(node: str) -> str:
    return f"benchlib-isolate-{node}"


class ProvisionedHosts:
    """``benchlib.lab.node_hosts.NodeHosts`` of a provisioned lab: ``benchlib-node`` and iptables on each node's host,
    over SSH; a node's data copied from host to host through this machine. Its nodes' files are on their hosts: a
    rejoin under load, which reads and changes them here, is the embedded lab's only."""

    local_files = False

    def __init__(self, lab: ProvisionedLab):
        self.lab = lab

    def refusal(self, cluster: str, kind: str, nodes: list[str], site: str | None) -> str | None:
        if kind != "isolate":
            return None
        plan = self.lab.plan()
        for name in nodes:
            me = plan.nodes[name]
            beside = [n.name for n in plan.cluster_nodes(me.plan.cluster) if n is not me and n.address == me.address]
            if beside:
                return (f"{name} shares its host with {', '.join(beside)} of the same cluster: a host's firewall "
                        "cannot cut them apart")
        return None

    def signal(self, node: str, what: str) -> bool:
        self.lab.run_on_host(node, f"/usr/local/sbin/benchlib-node {what} {shlex.quote(node)}")
        return True

    def isolate(self, node: str) -> None:
        self.lab.run_on_host(node, self._isolation(node))

    def let_back(self, node: str) -> None:
        self.lab.run_on_host(node, f"iptables -S | grep -F -- '--comment {_tag(node)}' | "
                                   "sed 's/^-A /-D /' | xargs -r -L1 iptables")

    def link(self, site: str, up: bool) -> None:
        raise LabError(f"a provisioned lab has no site links to take {'up' if up else 'down'} (site {site})")

    def stop(self, nodes: list[NodePlan], timeout: float) -> None:
        for n in nodes:
            self.lab.run_on_host(n.name, f"/usr/local/sbin/benchlib-node stop {shlex.quote(n.name)}", timeout)

    def start(self, nodes: list[NodePlan], timeout: float) -> None:
        for n in nodes:
            self.lab.run_on_host(n.name, f"/usr/local/sbin/benchlib-node start {shlex.quote(n.name)}", timeout)
        deadline = time.monotonic() + timeout
        for n in nodes:
            while True:
                try:
                    self.lab.admin_connect(n, timeout=2).close()
                    break
                except LabError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)

    def gone(self, node: NodePlan, timeout: float) -> None:
        """``benchlib-node kill`` signals and returns: until the host says the node no longer runs."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ssh, key = self.lab._host_ssh(node.name)
            rc, _, _ = ssh.run(key, self.lab._as_root(node.name, f"/usr/local/sbin/benchlib-node status "
                                                                 f"{shlex.quote(node.name)}"), timeout=10)
            if rc != 0:
                return
            time.sleep(0.2)

    def copy(self, src: NodePlan, dst: NodePlan) -> None:
        self.lab._copy_data(src, dst)

    def is_up(self, node: NodePlan | str) -> bool:
        return bool(self.lab.health.is_up(node if isinstance(node, str) else node.name))

    def _isolation(self, node: str) -> str:
        """The iptables rules that cut ``node`` off from its cluster's other nodes: what they send to its ports, and
        what it sends to theirs (its clients, benchlib's address among them, still reach it)."""
        plan = self.lab.plan()
        me = plan.nodes[node]
        mine = ",".join(str(p) for p in sorted(set(me.plan.ports.values())))
        rules = []
        for peer in plan.cluster_nodes(me.plan.cluster):
            if peer is me:
                continue
            theirs = ",".join(str(p) for p in sorted(set(peer.plan.ports.values())))
            rules += [f"iptables -I INPUT -s {peer.address} -p tcp -m multiport --dports {mine} "
                      f"-m comment --comment {_tag(node)} -j DROP",
                      f"iptables -I OUTPUT -d {peer.address} -p tcp -m multiport --dports {theirs} "
                      f"-m comment --comment {_tag(node)} -j DROP"]
        return " && ".join(rules)
