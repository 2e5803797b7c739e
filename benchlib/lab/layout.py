"""Where every node of a lab lives: directories, ports, addresses, namespaces.

A layout is computed from the spec plus two numbers chosen when the lab is first
brought up (the base port and, for labs with WAN sites, the lab's network
index), so it is stable for the life of the lab and never stored twice.

Addresses: nodes of the local site listen on 127.0.0.1. A lab with WAN sites
gets its own /24 inside 198.18.0.0/15 (RFC 2544, reserved for benchmarking):
the hub address 198.18.L.1 sits on a TUN device the lab creates in the root
namespace, and site ``s`` (1-based) owns 198.18.L.(10+s) inside its own network
namespace. Nothing ever listens on another address.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from pathlib import Path

from benchlib import catalogue
from benchlib.errors import LabError
from benchlib.lab import placement
from benchlib.lab.spec import LabSpec

DEFAULT_ROOT = "/tmp/benchlib"
PORTS_PER_NODE = 10  # mysql, galera (gmcast) or Group Replication (XCom), IST, SST; the rest spare
AUTO_PORT_RANGE = (21000, 29990)
SOCKET_MAX = 107
NET_PREFIX = "198.18"
ACCOUNT_HOSTS = ("127.0.0.1", "localhost", f"{NET_PREFIX}.%")


def lab_root() -> Path:
    """Directory holding every lab (``BENCHLIB_LAB_ROOT``, default /tmp/benchlib).

    Kept short on purpose: a server socket path over 107 characters aborts the server.
    """
    return Path(os.environ.get("BENCHLIB_LAB_ROOT", DEFAULT_ROOT)).absolute()


@dataclass(frozen=True)
class NodePlan:
    name: str
    cluster: str
    topology: str
    index: int  # 1-based within its cluster
    server_id: int
    port: int
    site: str | None
    dir: Path
    listen_host: str  # address the other nodes and clients reach this node at
    bind_hosts: tuple[str, ...]
    netns: str | None
    flavor: str = "mariadb"  # the cluster's server flavour (benchlib.lab.flavors): its spec's ``system``
    cpus: str | None = None  # the CPU list its server runs on (benchlib.lab.placement; None: every CPU, shared)

    @property
    def role(self) -> str:
        """Node 1's role in its topology, or the others' (``benchlib.catalogue.TopologyFacts.roles``)."""
        first, others = catalogue.topology(self.topology).roles
        return first if self.index == 1 else others

    @property
    def galera_port(self) -> int:
        return self.port + 1

    @property
    def ist_port(self) -> int:
        return self.port + 2

    @property
    def sst_port(self) -> int:
        return self.port + 3

    @property
    def gr_port(self) -> int:
        """Group Replication's group communication (XCom) port."""
        return self.port + 1

    @property
    def ports(self) -> dict[str, int]:
        """Every port this node listens on, by what it serves (its topology's, ``TopologyFacts.ports``)."""
        return {what: self.port + offset for what, offset in catalogue.topology(self.topology).ports}

    @property
    def datadir(self) -> Path:
        return self.dir / "data"

    @property
    def tmpdir(self) -> Path:
        return self.dir / "tmp"

    @property
    def socket(self) -> Path:
        return self.dir / "mysqld.sock"

    @property
    def cnf(self) -> Path:
        return self.dir / "my.cnf"

    @property
    def init_file(self) -> Path:
        """SQL a MySQL node runs at its first start (the lab's passwords; removed once the node is up)."""
        return self.dir / "init.sql"

    @property
    def error_log(self) -> Path:
        return self.dir / "error.log"

    @property
    def pid_file(self) -> Path:
        return self.dir / "mysqld.pid"

    @property
    def marker(self) -> str:
        """What identifies this node's server in a process list."""
        return f"--defaults-file={self.cnf}"


@dataclass(frozen=True)
class SitePlan:
    name: str
    number: int
    rtt_ms: float
    jitter_ms: float
    address: str
    netns: str
    tun: str


@dataclass(frozen=True)
class Layout:
    spec: LabSpec
    dir: Path
    base_port: int
    net_index: int | None
    nodes: dict[str, NodePlan] = field(default_factory=dict)
    sites: dict[str, SitePlan] = field(default_factory=dict)
    #: who may join a Group Replication group (None: loopback and the lab's namespaces; provisioned hosts: theirs)
    allowlist: str | None = None

    @property
    def hub_address(self) -> str | None:
        return f"{NET_PREFIX}.{self.net_index}.1" if self.net_index else None

    @property
    def hub_tun(self) -> str | None:
        return f"bl{self.net_index}h" if self.net_index else None

    def cluster_nodes(self, cluster: str) -> list[NodePlan]:
        return [n for n in self.nodes.values() if n.cluster == cluster]

    @property
    def relay_marker(self) -> str:
        return f"--lab-dir={self.dir}"


def root_tag(root: Path) -> str:
    """A short tag of a lab root: namespaces carry it, so one root's cleanup never touches another's."""
    import hashlib

    return hashlib.sha1(str(Path(root).absolute()).encode()).hexdigest()[:6]


def netns_prefix(root: Path) -> str:
    return f"bl-{root_tag(root)}-"


def netns_name(root: Path, lab: str, site: str) -> str:
    return f"{netns_prefix(root)}{lab}-{site}"


def build_layout(spec: LabSpec, root: Path, base_port: int, net_index: int | None) -> Layout:
    lab_dir = root / spec.name
    sites: dict[str, SitePlan] = {}
    for number, (sname, site) in enumerate(spec.sites.items(), start=1):
        assert net_index is not None, "a lab with sites needs a network index"
        sites[sname] = SitePlan(
            name=sname,
            number=number,
            rtt_ms=site.rtt_ms,
            jitter_ms=site.jitter_ms,
            address=f"{NET_PREFIX}.{net_index}.{10 + number}",
            netns=netns_name(root, spec.name, sname),
            tun=f"bl{net_index}s{number}",
        )
    hub = f"{NET_PREFIX}.{net_index}.1" if net_index else None
    cpus = placement.plan(list(spec.clusters), spec.placement)
    nodes: dict[str, NodePlan] = {}
    k = 0
    for cname, cluster in spec.clusters.items():
        for i in range(1, cluster.node_count + 1):
            name = f"{cname}-{i}"
            site = spec.site_of(name)
            if site:
                listen, bind = sites[site].address, (sites[site].address,)
            elif hub:
                listen, bind = hub, ("127.0.0.1", hub)
            else:
                listen, bind = "127.0.0.1", ("127.0.0.1",)
            nodes[name] = NodePlan(
                name=name,
                cluster=cname,
                topology=cluster.topology,
                index=i,
                server_id=k + 1,
                port=base_port + PORTS_PER_NODE * k,
                site=site,
                dir=lab_dir / name,
                listen_host=listen,
                bind_hosts=bind,
                netns=sites[site].netns if site else None,
                flavor=cluster.system,
                cpus=cpus[cname],
            )
            k += 1
    layout = Layout(spec=spec, dir=lab_dir, base_port=base_port, net_index=net_index, nodes=nodes, sites=sites)
    longest = max((n.socket for n in nodes.values()), key=lambda p: len(str(p)))
    if len(str(longest)) > SOCKET_MAX:
        raise LabError(
            f"socket path too long ({len(str(longest))} > {SOCKET_MAX} characters): {longest}",
            hint="set BENCHLIB_LAB_ROOT to a shorter directory (default /tmp/benchlib) or shorten the lab name",
        )
    return layout


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def ports_needed(spec: LabSpec) -> int:
    return PORTS_PER_NODE * sum(c.node_count for c in spec.clusters.values())


def busy_ports(layout: Layout) -> list[tuple[int, str]]:
    """(port, what) for every port of a local-site node that something already holds."""
    busy = []
    for node in layout.nodes.values():
        if node.site:
            continue  # its own namespace: nothing else can hold its ports
        for what, port in node.ports.items():
            if not port_free(port):
                busy.append((port, f"{node.name} {what}"))
    return busy


def pick_base_port(spec: LabSpec, taken: set[int]) -> int:
    """First block of free loopback ports in the automatic range not used by another lab."""
    need = ports_needed(spec)
    lo, hi = AUTO_PORT_RANGE
    base = lo
    while base + need <= hi:
        block = range(base, base + need)
        if not taken.intersection(block) and all(
            port_free(p) for p in block if (p - base) % PORTS_PER_NODE < 4
        ):
            return base
        base += need
    raise LabError(
        f"no block of {need} free ports in {lo}-{hi}",
        hint="stop other labs (benchlib lab list) or set base_port in the spec",
    )
