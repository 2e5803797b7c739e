"""Lab specs: a small TOML file describing one or more clusters on this machine.

A spec names the lab, optional server defaults, one or more clusters (each with a
topology: ``single``, ``async``, ``semisync``, ``galera`` or ``group_replication``, and a
server ``system``: a flavour of ``benchlib.lab.flavors``, ``mariadb`` by default or ``mysql``, optionally from a
``basedir``) and optional WAN
*sites*: groups of nodes placed in their own network namespace behind a link with
a round-trip delay to the rest of the lab.

    name = "demo"

    [defaults]
    durability = "durable"        # or "relaxed"
    buffer_pool = "128M"

    [clusters.async]
    topology = "async"
    replicas = 2

    [clusters.galera]
    topology = "galera"
    nodes = 3
    fc_limit = 16

    [clusters.gr]
    topology = "group_replication"   # system = "mysql" implied
    nodes = 3

    [sites.far]
    nodes = ["galera-3"]
    rtt_ms = 100

Nodes are named ``<cluster>-<i>``; node 1 is the primary (async, semisync,
single, a group's primary) or the first Galera node. Validation errors name every bad field.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import Field, ValidationError, field_validator, model_validator

from benchlib.systems import base as systems
from benchlib import catalogue
from benchlib.errors import SpecError
from benchlib.lab import flavors
from benchlib.specs import (CLUSTER_NAME, CLUSTER_NAME_RULE, Site, Strict, check_sites, format_validation, named_keys,
                            read_toml, site_of)
from benchlib.systems.settings import SettingRules

LAB_NAME = r"^[a-z][a-z0-9-]{0,23}$"
#: spec fields a DBA may try to change on a running lab: they need a new lab (or another runtime setting)
_NEW_LAB = "change it in the spec, then: benchlib lab down, benchlib lab up SPEC"
FIXED = {**{k: _NEW_LAB for k in ("binlog", "nodes", "replicas", "buffer_pool", "redo_log", "gcache",
                                   "performance_schema", "max_connections", "topology")},
         "wait_point": "use the runtime setting semisync_wait_point",
         "timeout_ms": "use the runtime setting semisync_timeout_ms"}
_SIZE = re.compile(r"^\s*(\d+)\s*([KMGkmg]?)i?[Bb]?\s*$")


def parse_size(value: str | int) -> int:
    """'128M' -> 134217728; plain integers are bytes."""
    if isinstance(value, int):
        return value
    m = _SIZE.match(str(value))
    if not m:
        raise ValueError(f"not a size: {value!r} (use bytes or a number with K, M or G, e.g. '128M')")
    n, unit = int(m.group(1)), m.group(2).upper()
    return n * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[unit]


def _size_field(lo: int, hi: int):
    def check(value: str | int) -> str:
        n = parse_size(value)
        if not lo <= n <= hi:
            raise ValueError(f"{value!r} is outside {lo >> 20}M..{hi >> 20}M")
        return str(value)

    return check


class ServerSettings(Strict):
    """Server settings shared by every node of a cluster (overridable per cluster)."""

    #: durable: innodb_flush_log_at_trx_commit = 1 and sync_binlog = 1; relaxed: 2 and 0 (default durable)
    durability: Literal["durable", "relaxed"] | None = None
    #: innodb_buffer_pool_size, e.g. "128M" (default 128M)
    buffer_pool: str | None = None
    #: the redo log's size (innodb_log_file_size, MySQL's innodb_redo_log_capacity), e.g. "96M" (default 96M)
    redo_log: str | None = None
    #: performance_schema on or off (default off)
    performance_schema: bool | None = None
    #: max_connections (default 1000)
    max_connections: int | None = Field(default=None, ge=10, le=100_000)
    #: any other server option, name = value, written into every node's my.cnf
    server: dict[str, str | int | float | bool] = Field(default_factory=dict)

    _check_pool = field_validator("buffer_pool")(lambda v: v and _size_field(16 << 20, 64 << 30)(v))
    _check_redo = field_validator("redo_log")(lambda v: v and _size_field(4 << 20, 16 << 30)(v))

    _option_names = named_keys("server", pattern=r"[a-z][a-z0-9_-]*", rule="letters, digits, _ and -", what="server option")


DEFAULT_SERVER = ServerSettings(
    durability="durable", buffer_pool="128M", redo_log="96M", performance_schema=False, max_connections=1000
)


class _ClusterBase(ServerSettings):
    """Fields every topology has: the server settings, the server (``system``, ``basedir``), the topology."""

    system: str = Field(default="mariadb", description="the server flavour (benchlib.lab.flavors): mariadb, mysql")
    basedir: str | None = Field(default=None, description="an unpacked server to run (default: the one benchlib finds)")

    @property
    def node_count(self) -> int:  # pragma: no cover - overridden
        raise NotImplementedError

    @property
    def flavor(self) -> flavors.Flavor:
        return flavors.get(self.system)

    @field_validator("system")
    @classmethod
    def _known_flavor(cls, v: str) -> str:
        if v not in flavors.FLAVORS:
            raise ValueError(f"unknown system {v!r}: a local cluster runs one of {', '.join(flavors.names())}")
        return v

    @model_validator(mode="after")
    def _flavor_runs_topology(self):
        flavor = self.flavor
        flavor.system(self.topology)  # every subclass has a topology; a ValueError names what the flavour runs
        for name, (only, why) in flavor.refuses.items():
            if name in type(self).model_fields and getattr(self, name) != only:
                raise ValueError(why)
        return self


class SingleCluster(_ClusterBase):
    #: one server, no replication
    topology: Literal["single"]
    #: the server writes a binary log
    binlog: bool = True

    @property
    def node_count(self) -> int:
        return 1


class AsyncCluster(_ClusterBase):
    #: a primary and asynchronous replicas
    topology: Literal["async"]
    #: how many replicas follow the primary
    replicas: int = Field(default=2, ge=1, le=8)
    parallel_threads: int | list[int] = Field(default=0, description="MariaDB slave_parallel_threads or MySQL "
                                              "replica_parallel_workers, one value or one per replica")
    #: MariaDB slave_parallel_mode, one value or one per replica
    parallel_mode: (
        Literal["optimistic", "conservative", "aggressive", "minimal", "none"]
        | list[Literal["optimistic", "conservative", "aggressive", "minimal", "none"]]
    ) = "optimistic"
    preserve_commit_order: bool = Field(default=True, description="MySQL replica_preserve_commit_order")

    @property
    def node_count(self) -> int:
        return 1 + self.replicas

    @model_validator(mode="after")
    def _per_replica_lists(self):
        for field in ("parallel_threads", "parallel_mode"):
            value = getattr(self, field)
            if isinstance(value, list) and len(value) != self.replicas:
                raise ValueError(f"{field}: a list needs one value per replica ({self.replicas}), got {len(value)}")
        threads = self.parallel_threads if isinstance(self.parallel_threads, list) else [self.parallel_threads]
        top = flavors.get(self.system).parallel_threads_max if self.system in flavors.FLAVORS else 0
        if any(not 0 <= t <= top for t in threads):
            raise ValueError(f"parallel_threads: each value must be between 0 and {top} ({self.system}'s limit)")
        return self

    def replica_parallel(self, index: int) -> tuple[int, str]:
        """(threads, mode) of replica ``index`` (1-based)."""
        t = self.parallel_threads[index - 1] if isinstance(self.parallel_threads, list) else self.parallel_threads
        m = self.parallel_mode[index - 1] if isinstance(self.parallel_mode, list) else self.parallel_mode
        return t, m


class SemisyncCluster(AsyncCluster):
    topology: Literal["semisync"]  # type: ignore[assignment]
    #: where the primary waits for a replica's acknowledgement: after syncing the binary log (lossless) or after the
    #: commit
    wait_point: Literal["AFTER_SYNC", "AFTER_COMMIT"] = "AFTER_SYNC"
    #: how long a commit waits for an acknowledgement before the primary falls back to async
    timeout_ms: int = Field(default=10_000, ge=1, le=3_600_000)
    replica_count: int = Field(default=1, ge=1, le=8, description="MySQL rpl_semi_sync_source_wait_for_replica_count")

    @model_validator(mode="after")
    def _replica_count(self):
        if self.replica_count > self.replicas:
            raise ValueError(f"replica_count ({self.replica_count}) exceeds the number of replicas ({self.replicas})")
        return self


class GaleraCluster(_ClusterBase):
    #: a Galera cluster (virtually synchronous, every node writable)
    topology: Literal["galera"]
    #: how many nodes
    nodes: int = Field(default=3, ge=3, le=9)
    #: the nodes write a binary log (log_bin and log_slave_updates); Galera replicates without one
    binlog: bool = False
    #: gcs.fc_limit: the receive queue length at which a node asks the cluster to pause (flow control)
    fc_limit: int = Field(default=16, ge=1, le=2_147_483_647)
    #: gcs.fc_factor: flow control resumes when the queue falls below fc_limit × fc_factor
    fc_factor: float = Field(default=1.0, ge=0.0, le=1.0)
    #: wsrep_slave_threads: threads applying write sets on each node
    applier_threads: int = Field(default=4, ge=1, le=512)
    #: gcache.size: the write-set cache a joining node's incremental transfer (IST) is served from
    gcache: str = "128M"
    #: any other wsrep_provider_options item, name = value
    provider_options: dict[str, str | int | float | bool] = Field(default_factory=dict)

    _check_gcache = field_validator("gcache")(lambda v: _size_field(1 << 20, 64 << 30)(v))

    @property
    def node_count(self) -> int:
        return self.nodes


class GroupReplicationCluster(_ClusterBase):
    """A MySQL group: every member certifies every transaction; node 1 bootstraps it and takes the load."""

    #: a MySQL Group Replication group
    topology: Literal["group_replication"]
    #: the server flavour: Group Replication runs on mysql
    system: str = "mysql"
    nodes: int = Field(default=3, ge=3, le=9, description="members (3 tolerate one failure; at most 9)")
    #: one primary takes writes (single-primary mode), or every member does (multi-primary)
    single_primary: bool = True
    communication_stack: Literal["XCOM", "MYSQL"] = Field(
        default="MYSQL", description="MYSQL: group traffic over the server's port; XCOM: a port of its own, which "
                                     "MySQL opens on every address (so only for members in WAN sites)")
    #: group_replication_paxos_single_leader: one member leads the consensus
    paxos_single_leader: bool = False
    applier_threads: int = Field(default=4, ge=0, le=1024, description="replica_parallel_workers of the applier")
    #: MySQL Router in front of the group, as InnoDB Cluster deploys it (benchlib.lab.router: metadata written by
    #: benchlib, Router's own bootstrap): started with the lab, its ports on 127.0.0.1 (benchlib lab status)
    router: bool = False

    @property
    def node_count(self) -> int:
        return self.nodes


Cluster = Annotated[
    Union[SingleCluster, AsyncCluster, SemisyncCluster, GaleraCluster, GroupReplicationCluster],
    Field(discriminator="topology"),
]


class LabSpec(Strict):
    kind: Literal["local"] = "local"  # a remote lab spec says kind = "remote" (benchlib.remote.spec)
    #: the lab's name: its folder under the lab root, and the prefix of its namespaces
    name: str = Field(pattern=LAB_NAME)
    #: the first node's port; the lab's nodes take ports from it upwards (default: a free range benchlib picks)
    base_port: int | None = Field(default=None, ge=1024, le=65000)
    #: how WAN delay is emulated: netem where the kernel has it, else benchlib's TUN relay (auto)
    shaper: Literal["auto", "netem", "tun-relay"] = "auto"
    # where the clusters run on the host's CPUs (benchlib.lab.placement): pinned, each to a CPU set of its own with its
    # load, where the host has 2 CPUs a cluster ("auto"); always ("pinned"); or every CPU shared ("shared")
    placement: Literal["auto", "pinned", "shared"] = "auto"
    #: server settings every cluster takes unless it sets its own
    defaults: ServerSettings = Field(default_factory=ServerSettings)
    #: the lab's clusters by name; each table's topology says which kind (the tables below)
    clusters: dict[str, Cluster] = Field(min_length=1)
    #: places apart from the rest of the lab, each with its nodes and round trip (WAN sites)
    sites: dict[str, Site] = Field(default_factory=dict)
    # SHOW GLOBAL STATUS counters sampled every second beyond each system's own set (benchlib.systems)
    counters: list[Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_]{0,63}$")]] = Field(default_factory=list)

    _table_names = named_keys("clusters", "sites", pattern=CLUSTER_NAME, rule=CLUSTER_NAME_RULE)

    @model_validator(mode="after")
    def _sites_name_real_nodes(self):
        check_sites(self.sites, self.node_names())
        return self

    @model_validator(mode="after")
    def _xcom_only_in_namespaces(self):
        for name, c in self.clusters.items():
            if isinstance(c, GroupReplicationCluster) and c.communication_stack == "XCOM":
                outside = [f"{name}-{i}" for i in range(1, c.nodes + 1) if self.site_of(f"{name}-{i}") is None]
                if outside:
                    raise ValueError(
                        f"clusters.{name}: communication_stack XCOM listens on every address of the machine (MySQL "
                        f"gives XCom no bind address), and lab servers listen on loopback only: use \"MYSQL\" (the "
                        f"default), or place {', '.join(outside)} in [sites] (their own network namespaces)")
        return self

    def node_names(self) -> list[str]:
        return [n for c in self.clusters for n in self.nodes_of(c)]

    def nodes_of(self, cluster: str) -> list[str]:
        """The nodes of ``cluster``, the one that takes the writes first."""
        return [f"{cluster}-{i}" for i in range(1, self.clusters[cluster].node_count + 1)]

    # -- capabilities: what a campaign may ask of a lab of this spec ("" or None: it can) ------------------------------
    def lacks(self, capability: str) -> str:
        """Why this lab cannot do ``capability`` (``benchlib.lab.base.CAPABILITIES``); "": it can (benchlib runs
        these servers: it kills, freezes, cuts, promotes, rejoins and puts a proxy in front)."""
        return ""

    def fault_refusal(self, kind: str, nodes: list[str], site: str | None) -> str | None:
        """Why this lab cannot inject a ``kind`` fault into ``nodes`` (or ``site``); None: it can."""
        return refusal(self, kind, nodes, site)

    def settings_for(self, cluster: str) -> ServerSettings:
        """Effective server settings of a cluster: built-in defaults < [defaults] < the cluster's own."""
        merged = DEFAULT_SERVER.model_dump()
        for layer in (self.defaults, self.clusters[cluster]):
            for key in ServerSettings.model_fields:
                value = getattr(layer, key)
                if key == "server":
                    merged["server"] = {**merged["server"], **value}
                elif value is not None:
                    merged[key] = value
        return ServerSettings(**merged)

    def system_of(self, cluster: str) -> str:
        """The ``benchlib.systems`` key of ``cluster`` (its flavour's, for its topology)."""
        c = self.clusters[cluster]
        return c.flavor.system(c.topology)

    def setting_rules(self, cluster: str) -> SettingRules:
        """The runtime settings of ``cluster``: its system's, less replica settings where it has no replicas."""
        c = self.clusters[cluster]
        rules = systems.rules(self.system_of(cluster), label=c.topology, replicas=c.node_count > 1)
        return replace(rules, fixed=FIXED)

    def site_of(self, node: str) -> str | None:
        return site_of(self.sites, node)




def lab_spec_from(data: dict, source: str) -> LabSpec:
    """Validate a lab spec's TOML table; raise ``SpecError`` naming every bad field."""
    try:
        return LabSpec.model_validate(data)
    except ValidationError as exc:
        n = exc.error_count()
        raise SpecError(
            f"{source}: invalid lab spec ({n} problem{'s' if n > 1 else ''})",
            detail=format_validation(exc, source, "docs/reference/lab-spec.md"),
            hint="correct the fields listed below; examples/labs/ has a valid spec for every topology",
        ) from None


def parse_spec(text: str, source: str = "<spec>") -> LabSpec:
    """Parse and validate TOML text; raise ``SpecError`` naming every bad field."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{source}: not valid TOML: {exc}", hint="fix the syntax at the line and column given") from None
    return lab_spec_from(data, source)


def load_spec(path: str | Path) -> LabSpec:
    return lab_spec_from(read_toml(path, "lab spec", "examples/labs/async-1p2r.toml"), str(path))


def refusal(spec: "LabSpec", kind: str, nodes: list[str], site: str | None) -> str | None:
    """Why the embedded lab of ``spec`` (a ``LabSpec``) cannot inject this fault (None: it can)."""
    if kind == "isolate":
        return next((why for n in nodes if (why := _isolation_refusal(spec, n))), None)
    if kind == "switchover":
        for n in nodes:
            c = spec.clusters[n.rsplit("-", 1)[0]]
            first, others = catalogue.topology(c.topology).roles
            if first != "primary" or others == first or not getattr(c, "single_primary", True):
                return (f"a switchover moves the primary role to another node: {c.topology} cluster "
                        f"{n.rsplit('-', 1)[0]} has none to move")
        return None
    if kind != "cut":
        return None
    if not spec.sites:
        return "a network cut takes a WAN site's link down, and this lab has no [sites] (its nodes share loopback)"
    if site is not None:
        return None if site in spec.sites else f"no site {site!r} in lab {spec.name} (sites: {', '.join(spec.sites)})"
    for n in nodes:
        where = spec.site_of(n)
        if where is None:
            return f"{n} runs on loopback, outside every site: only a site's link can be cut"
        others = [m for m in spec.sites[where].nodes if m != n]
        if others:
            return f"cutting {n} alone needs it alone in its site; site {where} also holds {', '.join(others)}"
    return None


def _isolation_refusal(spec: "LabSpec", node: str) -> str | None:
    """Why ``node`` cannot be cut off from the other nodes of its cluster (``benchlib.lab.isolation``; None: it can)."""
    where = spec.site_of(node)
    if where is None:
        return (f"{node} runs on loopback, beside its clients: cutting it off from its cluster needs it alone in a "
                "WAN site ([sites.NAME] nodes = [...] in the lab spec)")
    others = [m for m in spec.sites[where].nodes if m != node]
    if others:
        return f"cutting {node} off needs it alone in its site; site {where} also holds {', '.join(others)}"
    cluster = node.rsplit("-", 1)[0]
    size = spec.clusters[cluster].node_count
    outside = [f"{cluster}-{i}" for i in range(1, size + 1) if spec.site_of(f"{cluster}-{i}") is None]
    if outside:
        return (f"{', '.join(outside)} of cluster {cluster} run on loopback, at the clients' address: cutting "
                f"{node} off from them would cut its clients too (place them in a site of their own)")
    return None
