"""What provisioning builds: a lab spec's nodes placed on hosts, each with the my.cnf the embedded lab would give it.

A provisioned node is a ``benchlib.lab.layout.NodePlan`` whose address is its host's and whose files are under
``/var/lib/benchlib/<lab>/<node>`` there; its options come from its flavour's own ``options`` (``benchlib.lab.mariadb``,
``benchlib.lab.mysql``), the very function the embedded lab renders its my.cnf with. So a spec's durability, buffer
pool, binary log, GTID, semi-sync, Galera and Group Replication settings mean the same on both; only paths, addresses
and which networks may join a group differ. The SQL that wires replication, semi-sync and the group is the flavour's
too (``benchlib.systems.replication``, ``benchlib.systems.semisync``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pymysql.converters

from benchlib.lab import flavors
from benchlib.lab.flavors import Flavor
from benchlib.errors import SpecError
from benchlib.lab.layout import PORTS_PER_NODE, Layout, NodePlan, SitePlan
from benchlib.lab.mycnf import render
from benchlib.lab.secrets import Credentials
from benchlib.lab.topology import REGISTRY
from benchlib.lab.spec import AsyncCluster, LabSpec, SemisyncCluster
from benchlib.provision.hosts import HostsSpec
from benchlib.servers import Server

__all__ = ["BASE", "HostServer", "PlannedNode", "Plan", "host_server", "sql_literal"]

BASE = Path("/var/lib/benchlib")  # a node's folder on its host: BASE/<lab>/<node>
OPT = Path("/opt/benchlib")  # servers benchlib copies to a host (MySQL 9 unpacked from Debian's unstable suite)
#: on every host: Ansible's apt module's own library, community.mysql's driver, sysbench (a client or not), and the
#: tools a cut (iptables) and a WAN delay (ip, tc) use
ALWAYS = ["iproute2", "iptables", "python3-apt", "python3-pymysql", "sysbench"]


def sql_literal(value: Any) -> str:
    return pymysql.converters.escape_item(value, "utf8mb4")


@dataclass(frozen=True)
class HostServer:
    """A server as installed on the hosts: where its programs are there, and the local copy it came from."""
    server: Server  # paths as on the host
    local_prefix: Path | None = None  # the folder copied to OPT/<name> on each host (None: the hosts' packages)
    local: Server | None = None  # the same server here (what it ships, e.g. its plugins, is read here)

    @property
    def remote_prefix(self) -> Path | None:
        return OPT / self.local_prefix.name if self.local_prefix else None

    def render(self, layout: Layout, node: NodePlan) -> str:
        """The node's my.cnf: its flavour's options for this server, with the paths it has on the hosts."""
        if self.local is None or self.local_prefix is None:
            return render(layout, node, self.server)
        return render(layout, node, self.local).replace(str(self.local_prefix), str(self.remote_prefix))


def host_server(flavor: Flavor) -> HostServer:
    """Where a flavour's server lives on a provisioned host: installed by the hosts' packages (MariaDB), or copied from
    benchlib's own prefix (MySQL 9, from ``benchlib.servers.debian``: Debian bookworm has no package of it), run
    through its own loader as the embedded lab runs it."""
    if flavor.host_program is not None:
        return HostServer(Server(flavor.server, "0.0.0", Path(flavor.host_program), "the hosts' packages"))
    from benchlib import servers

    local = servers.find(flavor.server)
    prefix = next((p for p in local.mysqld.parents if p.parent == servers.prefix_root()), None)
    if prefix is None:
        from benchlib.errors import MissingDependencyError

        raise MissingDependencyError(f"{local.label} at {local.mysqld} is not in benchlib's prefix, so it cannot be "
                                     "copied to the hosts", hint="python -m benchlib.servers.debian fetches MySQL 9 "
                                                                 "into the prefix")
    remote = OPT / prefix.name

    def moved(p: Path | None) -> Path | None:
        return remote / p.relative_to(prefix) if p is not None else None

    return HostServer(replace(local, mysqld=moved(local.mysqld), plugin_dir=moved(local.plugin_dir),
                              share_dir=moved(local.share_dir), library_path=moved(local.library_path),
                              source=f"copied to {remote}"), prefix, local)


def _host_sites(lab: LabSpec, hosts: HostsSpec) -> dict[str, str]:
    """Each host's site (hosts with no node of a site are in none); a host holding nodes of two places is refused:
    a machine is in one place."""
    out: dict[str, str] = {}
    for host, m in hosts.hosts.items():
        places = {lab.site_of(n) for n in m.nodes}
        if len(places) > 1:
            named = ", ".join(f"{n} ({lab.site_of(n) or 'no site'})" for n in m.nodes)
            raise SpecError(f"host {host} holds nodes of different places: {named}",
                            hint="a machine is in one place: put each site's nodes on hosts of their own")
        if places and None not in places:
            out[host] = next(iter(places))
    return out


@dataclass(frozen=True)
class PlannedNode:
    plan: NodePlan
    host: str  # the machine it runs on (a hosts-file name)
    flavor: Flavor
    server: HostServer
    cnf: str  # its my.cnf

    @property
    def name(self) -> str:
        return self.plan.name

    @property
    def address(self) -> str:
        return self.plan.listen_host

    def start_command(self) -> list[str]:
        return self.server.server.argv(f"--defaults-file={self.plan.cnf}")

    def initialize_command(self) -> list[str]:
        """Makes its datadir (root@localhost without a password, over the socket only: the first start sets it)."""
        return self.flavor.host_initialize(self.server.server, self.plan)


class Plan:
    """The nodes of ``lab`` on the machines of ``hosts``, and the accounts they get."""

    def __init__(self, lab: LabSpec, hosts: HostsSpec, controller: list[str]):
        self.lab = lab
        self.hosts = hosts
        self.controller = controller  # this machine's addresses as the hosts see them (benchlib connects from there)
        placed = hosts.placed()
        self.host_sites = _host_sites(lab, hosts)
        per_host: dict[str, int] = {}
        nodes: dict[str, NodePlan] = {}
        k = 0
        for cname, cluster in lab.clusters.items():
            for i in range(1, cluster.node_count + 1):
                name = f"{cname}-{i}"
                host = placed[name]
                slot = per_host.get(host, 0)
                per_host[host] = slot + 1
                address = hosts.hosts[host].address
                nodes[name] = NodePlan(name=name, cluster=cname, topology=cluster.topology, index=i, server_id=k + 1,
                                       port=hosts.defaults.port + PORTS_PER_NODE * slot, site=lab.site_of(name),
                                       dir=BASE / lab.name / name, listen_host=address, bind_hosts=(address,),
                                       netns=None, flavor=cluster.system)
                k += 1
        networks = ",".join(sorted({f"{a}/32" for a in self.addresses()}))
        # the sites' round trips size the same timers as in the embedded lab (their namespaces are not made here)
        sites = {name: SitePlan(name, k, site.rtt_ms, site.jitter_ms, "", "", "")
                 for k, (name, site) in enumerate(lab.sites.items(), start=1)}
        self.layout = Layout(spec=lab, dir=BASE / lab.name, base_port=hosts.defaults.port, net_index=None,
                             nodes=nodes, sites=sites, allowlist=f"127.0.0.1/8,{networks}")
        servers: dict[str, HostServer] = {}
        self.nodes: dict[str, PlannedNode] = {}
        for name, n in nodes.items():
            flavor = flavors.get(n.flavor)
            if flavor.name not in servers:
                servers[flavor.name] = host_server(flavor)
            hs = servers[flavor.name]
            self.nodes[name] = PlannedNode(n, placed[name], flavor, hs, hs.render(self.layout, n))

    # -- facts ----------------------------------------------------------------------------------------------------------
    def addresses(self) -> list[str]:
        """Every address a lab account may log in from: the hosts' and benchlib's own."""
        return sorted({m.address for m in self.hosts.hosts.values()} | set(self.controller))

    def cluster_nodes(self, cluster: str) -> list[PlannedNode]:
        return [n for n in self.nodes.values() if n.plan.cluster == cluster]

    def machines(self) -> dict[str, list[PlannedNode]]:
        """Each host of the hosts file and the nodes it runs (clients included, with none)."""
        return {h: [self.nodes[n] for n in m.nodes] for h, m in self.hosts.hosts.items()}

    def packages(self, host: str) -> list[str]:
        """What a host needs from its packages: what every host has, each node's server when the packages carry it,
        and what its topology needs beside (Galera's provider, rsync for state transfers)."""
        want = set(ALWAYS)
        for node in self.machines()[host]:
            if node.flavor.host_program is not None:
                want |= set(node.flavor.tools.values())
            topology = REGISTRY[node.plan.topology]
            want |= set(topology.tools.values()) | set(topology.files.values())
        return sorted(want)

    def wan_peers(self, host: str) -> list[dict[str, Any]]:
        """Where ``host`` delays what it sends, and by how much (``benchlib.provision.wanhost``): toward each host of
        another site half of both sites' round trips (and jitters), toward benchlib's machine, which shapes nothing,
        its whole site's; none when neither end is in a site."""
        mine = self.lab.sites.get(self.host_sites.get(host) or "")
        peers = []
        for other, m in self.hosts.hosts.items():
            theirs = self.lab.sites.get(self.host_sites.get(other) or "")
            if other == host or mine is theirs:
                continue
            delay = ((mine.rtt_ms if mine else 0.0) + (theirs.rtt_ms if theirs else 0.0)) / 2
            jitter = ((mine.jitter_ms if mine else 0.0) + (theirs.jitter_ms if theirs else 0.0)) / 2
            peers.append({"address": m.address, "delay_ms": delay, "jitter_ms": jitter})
        if mine is not None:
            peers += [{"address": a, "delay_ms": mine.rtt_ms, "jitter_ms": mine.jitter_ms} for a in self.controller
                      if a not in {m.address for m in self.hosts.hosts.values()}]
        return peers

    # -- accounts -------------------------------------------------------------------------------------------------------
    def init_sql(self, node: PlannedNode, creds: Credentials) -> str:
        """What a node runs at its first start: the lab's accounts, from every address of the lab, not written to its
        binary log (each node makes its own: no errant transactions on a replica or a group member)."""
        flavor = node.flavor
        stmts = ["SET SESSION sql_log_bin = 0"]
        hosts = tuple(self.addresses()) + ("localhost", "127.0.0.1")
        for sql, args in flavor.accounts(creds, hosts):
            stmts.append(sql % tuple(sql_literal(a) for a in args))
        stmts += [f"GRANT {flavor.set_global} ON *.* TO 'bench'@{sql_literal(h)}" for h in hosts]
        stmts += flavor.seed_statements(node.server.server)
        return "".join(s + ";\n" for s in stmts)

    # -- wiring ---------------------------------------------------------------------------------------------------------
    def replication_of(self, node: PlannedNode) -> dict[str, Any] | None:
        """How a replica is pointed at its primary: where it is, and the positioning options of its flavour (the
        password is the playbook's: no statement carries it in the inventory)."""
        cluster = self.lab.clusters[node.plan.cluster]
        if not isinstance(cluster, AsyncCluster) or node.plan.role != "replica":
            return None
        primary = self.cluster_nodes(node.plan.cluster)[0]
        names = node.flavor.replication
        return {"source_host": primary.address, "source_port": primary.plan.port, "options": dict(names.ansible),
                "status": names.status, "io": names.io_running, "sql": names.sql_running}

    def semisync_of(self, node: PlannedNode) -> dict[str, Any] | None:
        """Semi-sync on a primary: the statement that switches its side on, once the replicas are attached."""
        cluster = self.lab.clusters[node.plan.cluster]
        if not isinstance(cluster, SemisyncCluster) or node.plan.role != "primary":
            return None
        names = node.flavor.semisync
        return {"enable": f"SET GLOBAL {names.var('enabled')} = ON", "clients": names.var("clients"),
                "status": names.var("status"),
                "want": cluster.node_count - 1, "restart_io": list(names.restart_io)}

    def first_of(self, cluster: str) -> PlannedNode:
        return self.cluster_nodes(cluster)[0]
