"""A provisioned lab: the remote lab ``benchlib provision`` built, whose servers are benchlib's to kill, freeze and
restart.

It is a ``benchlib.remote.lab.RemoteLab`` (connections, load, sampling, check: as any remote lab) with two
capabilities more, both through the hosts: faults (``kill``: SIGKILL, ``freeze``: SIGSTOP until released), sent over
the SSH connection to the node's host as ``benchlib-node kill|freeze|thaw NODE``; ``isolate``: the node cut off from
the other nodes of its cluster while its clients still reach it, by firewall rules on its host (iptables: its peers'
addresses on its cluster's ports, each rule named after the node, removed on release); and a heal that starts the nodes
that do not answer and waits until each is back in its cluster (Ansible's ``heal.yml``: a Galera node rejoins by
state transfer, a group member starts Group Replication again and the group gets its intended primary back).
"""

from __future__ import annotations

import shlex
import threading
from pathlib import Path
from typing import Callable

from benchlib.errors import LabError
from benchlib.lab.base import Fault, Promotion, quiet
from benchlib.remote.lab import RemoteLab
from benchlib.remote.spec import RemoteLabSpec

__all__ = ["ProvisionedFaults", "ProvisionedLab"]


class ProvisionedLab(RemoteLab):
    def __init__(self, spec: RemoteLabSpec):
        super().__init__(spec)
        assert spec.provisioned is not None
        self.folder = Path(spec.provisioned)
        self._healed_how: list[str] = []
        self._fault_ssh = None
        self._fault_lock = threading.Lock()
        self._plan = None

    def describe(self) -> str:
        return super().describe().replace("remote lab", "provisioned lab", 1)

    def faults(self) -> "ProvisionedFaults":  # type: ignore[override]
        return ProvisionedFaults(self)

    def heal(self, *, timeout: float = 120.0, progress=quiet) -> list[str]:
        """Start every node that does not answer and wait until it is back in its cluster (Ansible's heal.yml on
        those nodes only); returns them."""
        from benchlib.provision.build import heal

        down = self.broken()
        self._healed_how = []
        if not down:
            return []
        progress(f"restarting {', '.join(down)} on their hosts ...")
        self._healed_how = heal(self.folder, down, quiet=True)
        self.refresh()
        return down

    def heal_report(self) -> list[str]:
        return list(self._healed_how)

    def plan(self):
        """The provisioning plan of these servers (their ports and hosts), from the folder it kept."""
        if self._plan is None:
            from benchlib.provision.build import reopen

            self._plan = reopen(self.folder)[1]
        return self._plan

    def run_on_host(self, node: str, command: str, timeout: float = 30.0) -> str:
        """Run ``command`` as root on the host of ``node`` (its spec's SSH access); its output, or an error naming
        the node and what the host said."""
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
        # a pipe or a chain of commands runs as root as a whole (sudo before the first would cover only that one)
        as_root = command if n.ssh.user == "root" else f"sudo -n sh -c {shlex.quote(command)}"
        rc, out, err = self._fault_ssh.run(key, as_root, timeout=timeout)
        if rc != 0:
            raise LabError(f"{node}: `{command}` failed on {n.host} (exit {rc}): {(err or out).strip()[:300]}")
        return out

    def close(self) -> None:
        super().close()
        with self._fault_lock:
            if self._fault_ssh is not None:
                self._fault_ssh.close()
                self._fault_ssh = None


def _tag(node: str) -> str:
    return f"benchlib-isolate-{node}"


class ProvisionedFaults:
    """``benchlib.lab.base.FaultControl`` of a provisioned lab: kill, freeze and isolate over SSH."""

    def __init__(self, lab: ProvisionedLab):
        self.lab = lab

    def fault_refusal(self, cluster: str, kind: str, nodes: list[str], site: str | None) -> str | None:
        refused = self.lab.spec.fault_refusal(kind, nodes, site)
        if refused or kind != "isolate":
            return refused
        plan = self.lab.plan()
        for name in nodes:
            me = plan.nodes[name]
            beside = [n.name for n in plan.cluster_nodes(me.plan.cluster) if n is not me and n.address == me.address]
            if beside:
                return (f"{name} shares its host with {', '.join(beside)} of the same cluster: a host's firewall "
                        "cannot cut them apart")
        return None

    def inject(self, cluster: str, fault: Fault) -> None:
        if fault.kind == "isolate":
            for node in fault.nodes:
                self.lab.run_on_host(node, self._isolation(node))
            return
        verb = {"kill": "kill", "freeze": "freeze"}[fault.kind]
        for node in fault.nodes:
            self.lab.run_on_host(node, f"/usr/local/sbin/benchlib-node {verb} {shlex.quote(node)}")

    def release(self, cluster: str, fault: Fault) -> None:
        if fault.kind == "isolate":
            for node in fault.nodes:
                self.lab.run_on_host(node, f"iptables -S | grep -F -- '--comment {_tag(node)}' | "
                                           "sed 's/^-A /-D /' | xargs -r -L1 iptables")
        if fault.kind == "freeze":
            for node in fault.nodes:
                self.lab.run_on_host(node, f"/usr/local/sbin/benchlib-node thaw {shlex.quote(node)}")

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

    def promote(self, cluster: str, failed: str, *, timeout: float = 60.0) -> Promotion:
        raise LabError(f"{cluster}: benchlib does not promote replicas on provisioned hosts yet",
                       hint="run failover = \"promote\" campaigns on the embedded lab")

    def rejoin(self, cluster: str, node: str, *, full: bool = False, timeout: float = 300.0,
               starting: Callable[[], None] | None = None) -> str:
        raise LabError(f"{cluster}: rejoin under load runs on the embedded lab only so far")
