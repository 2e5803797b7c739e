"""The system catalogue: what benchlib knows of each replication system and topology, as pure data, written once.

Analysis, the report, studies, labs and campaigns all read it; it imports nothing that talks to a server (no pymysql,
no lab code), so the analysis side may import it. What acts on a server (probes, settings, promotion, readiness)
lives in ``benchlib.systems`` and ``benchlib.sampling``, keyed by the same names.

- A **system** (``SYSTEMS``) is a replication technology as a campaign's runs record it (``system`` column): its
  title, the server it runs on, whether every node takes writes, how it fails over and what it promises then (the
  report quotes the promise, and docs/campaigns/faults.md quotes the report's), its read-consistency settings (the first is what a
  session gets by default), its remote lab's node roles, the topology label its clusters get by default, and which
  status probe samples it.
- A **topology** (``TOPOLOGIES``) is how a cluster is laid out, as analysis groups runs (``topology`` column): async
  is the baseline ratios are taken against; a single node has no replicas; in a multi-writer topology the nodes
  besides the write node are members, not replicas.
- A **server** (``SERVERS``) is a binary flavour: its display name.

Each system is a package, ``benchlib/systems/<name>/``, declared as an entry point of the ``benchlib.systems`` group
(``pyproject.toml``) exactly as a third party's system would be: its ``facts.py`` holds a ``SystemFacts`` (``FACTS``)
with the topologies it brings, pure data this registry loads on first use; its ``system.py`` holds what acts on its
servers (``benchlib.systems.base``), loaded only by lab-side code. The topologies every replicated server has
(single, async, semisync) are here.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchlib.plugin import Registry

__all__ = ["BASELINE", "SERVERS", "SYSTEMS", "TOPOLOGIES", "SystemFacts", "TopologyFacts", "Wiring", "house_color", "family", "get", "is_multi_writer", "why_not_everywhere", "writes_everywhere", "local_topologies", "of",
           "promise", "register", "server_name", "topology"]


@dataclass(frozen=True)
class SystemFacts:
    name: str  # as runs record it (the ``system`` column) and remote specs name it
    title: str  # for people: "MariaDB Galera Cluster"
    server: str  # the server it runs on, for people: "MariaDB"
    #: the server family whose async runs are its baseline (Galera against MariaDB's, Group Replication against
    #: MySQL's): with baseline runs on several servers a configuration is never compared with a pool of both
    family: str
    topology: str  # the topology label its clusters get unless a spec names another
    multi_writer: bool = False  # every node of the cluster takes writes
    #: how it fails over when the node taking writes fails: elect (the group elects), any (every survivor takes
    #: writes), promote (nothing by itself: a lab or an operator promotes a replica), "" (benchlib knows none)
    failover: str = ""
    promise: str = ""  # what it promises then, in words (the report and docs/campaigns/faults.md quote it)
    #: read-consistency settings a session can read under, the default first (``benchlib.systems.consistency``
    #: has what each does to a session)
    read_settings: tuple[str, ...] = ("eventual",)
    read_settings_described: str = ""  # the settings in a few words, when listing them would not do
    roles: tuple[str, ...] = ()  # a remote lab's node roles, the one that takes the writes first
    #: how the sampler reads its cluster's status (a probe kind of ``benchlib.campaign.sampling.STATUS_PROBES``:
    #: a MySQL-family system is read as MariaDB, MySQL, Galera, PXC, Group Replication or Aurora is); "": none
    status_probe: str = ""
    modes: tuple[str, ...] = ()  # the modes a remote cluster must name one of (Group Replication's primaries)
    local: bool = True  # the embedded lab can run it
    #: the server variables that say how many threads apply replicated transactions on a node (the first one a node
    #: reports counts; 0 means the one SQL thread applies by itself)
    applier_variables: tuple[str, ...] = ()
    #: its server has MariaDB's ``innodb_snapshot_isolation`` (10.6.18+, 10.11.8+): a REPEATABLE READ transaction
    #: that writes a row changed since its snapshot is refused (1020) instead of overwriting it
    snapshot_isolation: bool = False
    #: a published analysis of its isolation, quoted beside what a campaign's histories show ("" none known) ...
    published: str = ""
    #: ... and the anomaly kinds it reported (``benchlib.axes.history.checker.KINDS``; a stale read is "-realtime")
    published_kinds: tuple[str, ...] = ()
    color: str = ""  # its colour in charts that colour by system ("": its topology's)
    #: how its nodes space out AUTO_INCREMENT ids by default: "" (they do not), "cluster size" (Galera's
    #: wsrep_auto_increment_control), "7 when multi-primary" (group_replication_auto_increment_increment)
    spaced_ids: str = ""
    topologies: tuple[TopologyFacts, ...] = ()  # the topologies it brings (registered with it)

    @property
    def automatic_failover(self) -> bool:
        return self.failover in ("elect", "any")

    @property
    def writer_role(self) -> str:
        return self.roles[0] if self.roles else ""

    def described(self) -> str:
        """Its read-consistency settings in a few words."""
        return self.read_settings_described or ", ".join(self.read_settings)


@dataclass(frozen=True)
class Wiring:
    """How the provisioning playbook orders and wires a topology's nodes: the inventory groups of its node 1 and of
    the others, node 1's extra server arguments at its first start, and whether the others make their own accounts
    at their first start (a Galera joiner gets them with its state transfer)."""

    first: tuple[str, ...] = ("first",)
    others: tuple[str, ...] = ("first", "replicas")
    first_args: tuple[str, ...] = ()
    others_make_accounts: bool = True


@dataclass(frozen=True)
class TopologyFacts:
    name: str
    multi_writer: bool = False  # the nodes besides the write node are members that take writes, not replicas
    replicas: bool = True  # it has nodes besides the write node
    baseline: bool = False  # ratios are taken against it
    local: bool = True  # the embedded lab builds it
    binlog: bool = True  # its nodes write a binary log unless the spec says otherwise
    semisync_acks: bool = False  # a commit waits for a replica's semi-sync acknowledgement (a remote check asks)
    #: the binary log is how it replicates: it cannot run without one (Galera certifies write sets and needs none)
    needs_binlog: bool = True
    #: a commit returns only once other nodes have the transaction (semi-sync's acknowledgement, Galera's and the
    #: group's ordering): where those nodes sit, and their round trip, is part of its commit
    commit_waits: bool = True
    color: str = ""  # its colour in every chart ("": the next free Okabe-Ito colour)
    roles: tuple[str, str] = ("primary", "replica")  # a lab node's role: node 1's, the others'
    #: the ports a lab node listens on, by what they serve, as offsets from its client port
    ports: tuple[tuple[str, int], ...] = (("mysql", 0),)
    wiring: Wiring = Wiring()  # how provisioning orders and wires its nodes (benchlib.provision)


@dataclass(frozen=True)
class ServerFacts:
    name: str  # the binary flavour (benchlib.servers)
    title: str
    binaries: tuple[str, ...]  # its server program's names (Debian's mysqld is MariaDB's alias of mariadbd)
    plugins: bool = False  # ``benchlib doctor`` lists its replication plugins
    #: when no server of it is found: what cannot run, and how to get one ("": nothing is missing without it)
    without: str = ""


#: the topologies every replicated server has; the systems' packages bring theirs (Galera's, the group's, Aurora's)
TOPOLOGIES: Registry[TopologyFacts] = Registry("topology", hint=lambda names: f"topologies: {', '.join(names)}", items=(
    TopologyFacts("single", replicas=False, needs_binlog=False, commit_waits=False, color="#000000",
                  roles=("single", "single"), wiring=Wiring(("first",), ("first",))),
    TopologyFacts("async", baseline=True, commit_waits=False, color="#0072B2"),  # blue
    TopologyFacts("semisync", semisync_acks=True, color="#E69F00",  # orange
                  wiring=Wiring(("first", "semisync_primaries"), ("first", "replicas")))))
#: the topology ratios are taken against
BASELINE = next(t.name for t in TOPOLOGIES.values() if t.baseline)


def _brings(facts: SystemFacts) -> None:
    for t in facts.topologies:
        TOPOLOGIES.register(t)


SYSTEMS: Registry[SystemFacts] = Registry("system", group="benchlib.systems", on_register=_brings,
                                          hint=lambda names: f"systems: {', '.join(sorted(names))}")
TOPOLOGIES.requires(SYSTEMS)
SERVERS: Registry[ServerFacts] = Registry("server", items=(
    ServerFacts("mariadb", "MariaDB", ("mariadbd", "mysqld")),
    ServerFacts("mysql", "MySQL", ("mysqld",), plugins=True,
                without="MySQL and Group Replication clusters cannot run; get one: python -m benchlib.servers.debian "
                        "(./scripts/bootstrap does), or give a spec the basedir of an unpacked server")))
#: the server kinds (``benchlib.systems.dialect.detect``) that speak MySQL's own statements and performance_schema
MYSQL_FAMILY_KINDS = frozenset({"mysql", "percona", "pxc", "aurora"})


def register(facts: SystemFacts) -> SystemFacts:
    return SYSTEMS.register(facts)


def of(system: str) -> SystemFacts:
    return SYSTEMS.lookup(system)


def get(system: object) -> SystemFacts | None:
    """The facts of ``system``, None when it is not a known system's name (a missing value in a frame)."""
    return SYSTEMS.get(system) if isinstance(system, str) else None


def topology(name: str) -> TopologyFacts:
    return TOPOLOGIES.lookup(name)


def is_multi_writer(topology_name: object) -> bool:
    t = TOPOLOGIES.get(topology_name) if isinstance(topology_name, str) else None
    return bool(t and t.multi_writer)


def why_not_everywhere(cluster: object) -> str | None:
    """Why not every node of a cluster (a lab spec's, a remote lab's) takes writes; None when each does: replicas are
    read-only, and so are a single-primary group's secondaries."""
    topology = str(getattr(cluster, "topology", "") or "")
    if not is_multi_writer(topology):
        return f"its topology {topology} has read-only replicas"
    if getattr(cluster, "single_primary", None) is True or getattr(cluster, "mode", None) == "single-primary":
        return "it is a single-primary group (its secondaries are read-only): single_primary = false makes it " \
               "multi-primary"
    return None


def writes_everywhere(cluster: object) -> bool:
    return why_not_everywhere(cluster) is None


def server_name(system: object) -> str:
    """The server a system runs on, for people ("MariaDB"); the name itself when it is no known system."""
    facts = get(system)
    return facts.server if facts else str(system)


def family(system: object) -> str:
    """The server family whose baseline runs ``system`` is compared with ("" when the runs do not say)."""
    facts = get(system)
    return facts.family if facts else (str(system) if isinstance(system, str) else "")


def local_topologies() -> list[str]:
    return [t.name for t in TOPOLOGIES.values() if t.local]


def promise(system: object) -> str:
    facts = get(system)
    return facts.promise if facts else ""


def house_color(name: object) -> str | None:
    """The colour charts give a topology (or a system) of this name; None when it has none of its own."""
    if not isinstance(name, str):
        return None
    t, s = TOPOLOGIES.get(name), SYSTEMS.get(name)
    return (t.color if t else "") or (s.color if s else "") or None
