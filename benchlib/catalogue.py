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

Adding a system is one ``register(SystemFacts(...))`` here, plus its appliers in ``benchlib.systems``.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchlib.plugin import Registry

__all__ = ["BASELINE", "SERVERS", "SYSTEMS", "TOPOLOGIES", "SystemFacts", "TopologyFacts", "family", "get", "is_multi_writer", "local_topologies", "of",
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
    status_probe: str = ""  # the sampler's status probe (benchlib.campaign.sampling.STATUS_PROBES); "": none
    modes: tuple[str, ...] = ()  # the modes a remote cluster must name one of (Group Replication's primaries)
    local: bool = True  # the embedded lab can run it
    #: the server variables that say how many threads apply replicated transactions on a node (the first one a node
    #: reports counts; 0 means the one SQL thread applies by itself)
    applier_variables: tuple[str, ...] = ()

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


@dataclass(frozen=True)
class ServerFacts:
    name: str  # the binary flavour (benchlib.servers)
    title: str
    binaries: tuple[str, ...]  # its server program's names (Debian's mysqld is MariaDB's alias of mariadbd)
    plugins: bool = False  # ``benchlib doctor`` lists its replication plugins
    #: when no server of it is found: what cannot run, and how to get one ("": nothing is missing without it)
    without: str = ""


SYSTEMS: Registry[SystemFacts] = Registry("system", hint=lambda names: f"systems: {', '.join(sorted(names))}")
TOPOLOGIES: Registry[TopologyFacts] = Registry("topology", hint=lambda names: f"topologies: {', '.join(names)}", items=(
    TopologyFacts("single", replicas=False, needs_binlog=False, commit_waits=False),
    TopologyFacts("async", baseline=True, commit_waits=False), TopologyFacts("semisync", semisync_acks=True),
    TopologyFacts("galera", multi_writer=True, binlog=False, needs_binlog=False),
    TopologyFacts("group_replication", multi_writer=True), TopologyFacts("aurora", local=False, needs_binlog=False)))
SERVERS: Registry[ServerFacts] = Registry("server", items=(
    ServerFacts("mariadb", "MariaDB", ("mariadbd", "mysqld")),
    ServerFacts("mysql", "MySQL", ("mysqld",), plugins=True,
                without="MySQL and Group Replication clusters cannot run; get one: python -m benchlib.servers.debian "
                        "(./scripts/bootstrap does), or give a spec the basedir of an unpacked server")))
#: the server kinds (``benchlib.systems.dialect.detect``) that speak MySQL's own statements and performance_schema
MYSQL_FAMILY_KINDS = frozenset({"mysql", "percona", "pxc", "aurora"})
#: the topology ratios are taken against
BASELINE = next(t.name for t in TOPOLOGIES.values() if t.baseline)


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


_REPLICATION_ROLES = ("primary", "replica")
_GALERA_ROLES = ("writer", "node")
_GALERA_SETTINGS = tuple(f"wsrep_sync_wait={bits}" for bits in range(16))
_GALERA_DESCRIBED = ("wsrep_sync_wait=0 to wsrep_sync_wait=15 (a bitmask: 1 reads, 2 UPDATE and DELETE, 4 INSERT and "
                     "REPLACE, 8 SHOW)")
_GALERA_APPLIERS = ("wsrep_applier_threads", "wsrep_slave_threads")
_MYSQL_APPLIERS = ("replica_parallel_workers", "slave_parallel_workers")
_GR_SETTINGS = ("EVENTUAL", "BEFORE_ON_PRIMARY_FAILOVER", "BEFORE", "AFTER", "BEFORE_AND_AFTER")
_GALERA_PROMISE = ("every node of the primary component takes writes; a commit returns once the cluster has ordered it, "
                   "so the survivors hold every acknowledged write; they go on once the view has dropped the failed "
                   "node.")

register(SystemFacts(
    "mariadb", "MariaDB replication", "MariaDB", "MariaDB", "async", failover="promote",
    promise="nothing fails over by itself (here the lab promotes the most advanced replica, as orchestrator would); "
            "async acknowledges before any replica has the write, so it can lose what the replicas had not received; "
            "semi-sync acknowledges once a replica received it (AFTER_SYNC before the commit is visible, AFTER_COMMIT "
            "after), so a promotion that first applies the relay logs loses none, unless the primary had fallen back "
            "to async.",
    read_settings=("eventual", "causal"), roles=_REPLICATION_ROLES, status_probe="mariadb",
    applier_variables=("slave_parallel_threads", "replica_parallel_threads")))
register(SystemFacts(
    "galera", "MariaDB Galera Cluster", "MariaDB", "MariaDB", "galera", multi_writer=True, failover="any",
    promise=_GALERA_PROMISE, read_settings=_GALERA_SETTINGS, read_settings_described=_GALERA_DESCRIBED,
    roles=_GALERA_ROLES, status_probe="galera", applier_variables=_GALERA_APPLIERS))
register(SystemFacts(
    "pxc", "Percona XtraDB Cluster", "Percona XtraDB Cluster", "MySQL", "galera", multi_writer=True, failover="any",
    promise=_GALERA_PROMISE, read_settings=_GALERA_SETTINGS, read_settings_described=_GALERA_DESCRIBED,
    roles=_GALERA_ROLES, status_probe="pxc", local=False, applier_variables=_GALERA_APPLIERS))
register(SystemFacts(
    "mysql", "MySQL replication", "MySQL", "MySQL", "async", failover="promote",
    promise="as MariaDB: nothing fails over by itself (here the lab promotes); async can lose what the replicas had "
            "not received.",
    read_settings=("eventual", "causal"), roles=_REPLICATION_ROLES, status_probe="mysql",
    applier_variables=_MYSQL_APPLIERS))
register(SystemFacts(
    "group_replication", "MySQL Group Replication", "MySQL", "MySQL", "group_replication", multi_writer=True,
    failover="elect",
    promise="the group elects a new primary once it has expelled the failed one (5 s of suspicion, then "
            "group_replication_member_expel_timeout); an acknowledged transaction was certified by a majority, so "
            "none is lost.",
    read_settings=_GR_SETTINGS, roles=("primary", "secondary"), status_probe="group_replication",
    modes=("single-primary", "multi-primary"), applier_variables=_MYSQL_APPLIERS))
register(SystemFacts(
    "aurora", "Amazon Aurora MySQL", "Aurora MySQL", "Aurora", "aurora", roles=("writer", "reader"), status_probe="aurora",
    local=False))
