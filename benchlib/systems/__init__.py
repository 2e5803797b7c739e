"""Systems: what benchlib knows of each MySQL-family replication technology, in one registry.

A ``System`` owns its settings vocabulary (``benchlib.systems.settings``), what ``lab status``
shows of a node, when a node is ready (``readiness``: the same check on local and remote labs),
what the sampler reads of it (``reads``: a remote lab's check runs them to find missing
privileges; the SQL and parsers of each system's probes are in its module, which servers it is
in ``dialect``), which servers can be it (``kinds``, as ``queries.detect`` names them) and whether
its settings that need a restart can be restarted from SQL. Local and remote labs look systems up alike:
a local topology maps onto a system (async, semi-sync and single -> ``mariadb``; galera ->
``galera``), a remote cluster names its system. The SQL and parsers of every system's probes
are in its module; the sampler's probes (``benchlib.sampling``) use them.

What a system *is* (its title, failover promise, read-consistency settings, roles) is pure data in
``benchlib.catalogue``, which analysis may import; this registry holds what acts on its servers. Adding a system is
one ``catalogue.register(SystemFacts(...))``, one ``register(System(...))`` here and its status probe in
``benchlib.campaign.sampling.STATUS_PROBES``, not a chain of ifs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from benchlib import catalogue
from benchlib.plugin import Registry
from benchlib.systems import aurora, failover, galera, group_replication, mariadb, mysql, positions, replication
from benchlib.systems import invariants as inv
from benchlib.systems.settings import Setting, SettingRules

__all__ = ["SYSTEMS", "Stall", "System", "failover_of", "get", "register", "rules"]


@dataclass(frozen=True)
class Stall:
    """How a replica's applier is stopped and started again on one connection (``benchlib.axes.stall``), and in words
    what that stands for in production."""

    begin: tuple[str, ...]
    end: tuple[str, ...]
    how: str


@dataclass(frozen=True)
class System:
    name: str  # its benchlib.catalogue entry: title, failover promise, read settings, roles
    settings: dict[str, Setting]
    node_status: Callable[[Any, str], dict[str, Any]]
    #: (connection, takes the writes, nodes in the cluster, node name) -> what keeps the node from being ready
    readiness: Callable[[Any, bool, int, str], list[str]] = lambda conn, writer, size, node: []
    #: (server kind, takes the writes) -> (privilege probe, SQL, parameters) the sampler runs on such a node
    reads: Callable[[Any, bool], list[tuple[str, str, Any]]] = lambda kind, writer: []
    kinds: frozenset[str] = frozenset()  # the servers (dialect.detect's ServerKind.system) that can be this system
    #: what must hold through a run's measured window (benchlib.systems.invariants): a run that breaks one is invalid
    invariants: tuple[inv.Invariant, ...] = (inv.nodes_answer,)
    #: where a node stands and how to wait for a position (the consistency audit); None: nothing to compare (Aurora)
    positions: positions.Positions | None = None
    #: the server without a RESTART statement this system runs on: settings read at start cannot be swept ("": they can)
    no_restart: str = ""
    restart_settings: dict[str, Setting] = field(default_factory=dict)  # remote labs that allow restarts
    sweeps_nothing: str = ""  # why no setting can be swept (Aurora)
    variables: tuple[str, ...] = ()  # server variables recorded in every run's manifest (beyond COMMON_VARIABLES)
    counters: tuple[str, ...] = ()  # SHOW GLOBAL STATUS counters sampled every second (beyond COMMON_COUNTERS)
    #: (connect, nodes, current) -> the node that takes the writes now, after a fault (None: unchanged, the one a
    #: lab promoted); how the system fails over and what it promises are in ``benchlib.catalogue``
    locate: failover.Locate | None = None
    #: how one of its replicas stops applying for a while, as a long DDL or a backup lock does (None: it cannot)
    stall: Stall | None = None

    @property
    def facts(self) -> catalogue.SystemFacts:
        return catalogue.of(self.name)

    @property
    def title(self) -> str:
        return self.facts.title

    @property
    def status_counters(self) -> list[str]:
        return [*COMMON_COUNTERS, *self.counters]

    @property
    def server_variables(self) -> list[str]:
        return [*COMMON_VARIABLES, *self.variables]


SYSTEMS: Registry[System] = Registry("system", hint=lambda names: f"systems: {', '.join(sorted(names))}")

#: SHOW GLOBAL STATUS counters every MySQL-family server has, sampled once a second on every node (raw, as counters;
#: Threads_running and Threads_connected are gauges): statements by kind, handler and InnoDB row operations, data and
#: redo I/O with fsyncs, buffer pool misses and waits, row lock waits, network bytes, binary log commits
COMMON_COUNTERS = ("Com_commit", "Com_rollback", "Com_select", "Com_insert", "Com_update", "Com_delete",
                   "Handler_commit", "Handler_rollback", "Handler_read_key", "Handler_read_next", "Handler_read_rnd_next",
                   "Handler_write", "Handler_update", "Handler_delete",
                   "Innodb_rows_read", "Innodb_rows_inserted", "Innodb_rows_updated", "Innodb_rows_deleted",
                   "Innodb_data_reads", "Innodb_data_writes", "Innodb_data_read", "Innodb_data_written",
                   "Innodb_data_fsyncs", "Innodb_os_log_fsyncs", "Innodb_os_log_written",
                   "Innodb_buffer_pool_reads", "Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_wait_free",
                   "Innodb_row_lock_waits", "Innodb_row_lock_time", "Bytes_sent", "Bytes_received",
                   "Threads_running", "Threads_connected", "Binlog_cache_use", "Binlog_cache_disk_use")
GAUGES = frozenset({"Threads_running", "Threads_connected"})

#: recorded on every node of every system (a variable a server lacks is left out)
COMMON_VARIABLES = ("version", "sync_binlog", "innodb_flush_log_at_trx_commit", "innodb_buffer_pool_size",
                    "log_bin", "binlog_format", "performance_schema", "innodb_log_file_size",
                    "innodb_redo_log_capacity")


def register(system: System) -> System:
    return SYSTEMS.register(system)


def get(name: str) -> System:
    return SYSTEMS.lookup(name)


def failover_of(name: str) -> failover.Failover | None:
    """How ``name`` fails over (None: benchlib knows none, e.g. Aurora, whose failover is the cloud's): the catalogue's
    kind and promise, and the system's ``locate``."""
    facts = catalogue.get(name)
    if facts is None or not facts.failover:
        return None
    found = SYSTEMS.get(name)
    return failover.Failover(facts.failover, facts.promise, (found.locate if found else None) or failover.unchanged)


def rules(system: str, *, label: str | None = None, replicas: bool = True, remote: bool = False,
          allow_restart: bool = False) -> SettingRules:
    """The settings of one cluster of ``system``: without replica settings when it has no replicas, and with
    the restart-only settings on remote labs only (a local lab rebuilds instead)."""
    s = get(system)
    chosen = {k: v for k, v in s.settings.items() if replicas or not v.replicas_only}
    if remote and not s.sweeps_nothing:
        chosen.update(s.restart_settings)
    return SettingRules(system, label or system, chosen, allow_restart=allow_restart, note=s.sweeps_nothing,
                        no_restart=s.no_restart)


def _no_status(conn, role: str) -> dict[str, Any]:
    return {}


_NO_RESTART = "MariaDB"  # no RESTART statement: settings read at start cannot be swept remotely


_REPLICATED = (inv.semisync_holds, inv.replica_threads, inv.nodes_answer)
_MARIADB_STALL = Stall(("STOP SLAVE SQL_THREAD",), ("START SLAVE SQL_THREAD",),
                       "the replica's SQL thread stopped (what a long DDL on a serial applier does to what follows)")
_MYSQL_STALL = Stall(("STOP REPLICA SQL_THREAD",), ("START REPLICA SQL_THREAD",),
                     "the replica's SQL thread stopped (what a long DDL on a serial applier does to what follows)")
_GR_STALL = Stall(("STOP REPLICA SQL_THREAD FOR CHANNEL 'group_replication_applier'",),
                  ("START REPLICA SQL_THREAD FOR CHANNEL 'group_replication_applier'",),
                  "the member's applier channel stopped (it goes on certifying and queueing)")
_GALERA_STALL = Stall(("FLUSH TABLES WITH READ LOCK",), ("UNLOCK TABLES",),
                      "FLUSH TABLES WITH READ LOCK held on the node (a backup's lock): its applier waits")
_GALERA = (inv.galera_membership, inv.nodes_answer)

register(System("mariadb", mariadb.SETTINGS, mariadb.node_status, replication.readiness,
                replication.reads, frozenset({"mariadb"}), no_restart=_NO_RESTART, invariants=_REPLICATED,
                positions=positions.MARIADB, stall=_MARIADB_STALL,
                restart_settings=mysql.RESTART_SETTINGS, variables=mariadb.VARIABLES, counters=mariadb.COUNTERS))
register(System("galera", galera.SETTINGS, galera.node_status, galera.readiness,
                galera.reads, frozenset({"mariadb_galera", "pxc"}), no_restart=_NO_RESTART, invariants=_GALERA,
                positions=positions.GALERA, locate=failover.galera_node, stall=_GALERA_STALL,
                restart_settings=mysql.RESTART_SETTINGS, variables=galera.VARIABLES, counters=mariadb.COUNTERS))
register(System("pxc", galera.SETTINGS, galera.node_status, galera.readiness, galera.reads,
                frozenset({"pxc"}), invariants=_GALERA, positions=positions.GALERA, locate=failover.galera_node,
                stall=_GALERA_STALL,
                restart_settings=mysql.RESTART_SETTINGS,
                variables=galera.VARIABLES))
register(System("mysql", mysql.SETTINGS, mysql.node_status, replication.readiness,
                replication.reads, frozenset({"mysql", "percona"}), invariants=_REPLICATED, positions=positions.GTID,
                stall=_MYSQL_STALL,
                restart_settings=mysql.RESTART_SETTINGS, variables=mysql.VARIABLES, counters=mysql.COUNTERS))
register(System("group_replication", group_replication.SETTINGS,
                group_replication.node_status, group_replication.readiness, group_replication.reads,
                frozenset({"mysql", "percona"}), invariants=(inv.group_membership, inv.nodes_answer),
                positions=positions.GTID, locate=failover.gr_primary, stall=_GR_STALL,
                restart_settings=mysql.RESTART_SETTINGS, variables=group_replication.VARIABLES,
                counters=group_replication.COUNTERS))
register(System("aurora", {}, _no_status, reads=aurora.reads, kinds=frozenset({"aurora"}),
                sweeps_nothing="Aurora's parameters are set in its DB cluster parameter group, not from SQL"))
