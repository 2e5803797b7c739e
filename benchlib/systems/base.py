"""What acts on a system's servers, one ``System`` per system, found beside its facts.

A ``System`` owns its settings vocabulary (``benchlib.systems.settings``), what ``lab status`` shows of a node, when
a node is ready (``readiness``: the same check on local and remote labs), what the sampler reads of it (``reads``: a
remote lab's check runs them to find missing privileges), which servers can be it (``kinds``, as
``dialect.detect`` names them), its read-consistency settings (``read_settings``, what the stale-read probe's
sessions apply) and how one of its replicas stalls. Local and remote labs look systems up alike.

What a system *is* (title, failover promise, roles, colour, its topologies) is pure data, its package's ``facts.py``
(``benchlib.catalogue``, which analysis may import). What acts on its servers is its package's ``system.py``
(``SYSTEM``), found here the first time a lab-side caller asks: a system is one package,
``benchlib/systems/<name>/``, and one entry point (of its facts), nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import importlib

from benchlib import catalogue
from benchlib.plugin import Registry
from benchlib.systems import failover
from benchlib.systems.positions import Positions
from benchlib.systems import invariants as inv
from benchlib.systems.settings import Setting, SettingRules

__all__ = ["COMMON_COUNTERS", "COMMON_VARIABLES", "GAUGES", "NO_RESTART", "SYSTEMS", "ReadSetting", "Stall", "System",
           "failover_of", "get", "register", "rules"]


@dataclass(frozen=True)
class ReadSetting:
    """One read-consistency setting of a system, as the stale-read probe applies it to its sessions
    (``benchlib.systems.consistency`` has the common ones and what they do)."""

    name: str  # as a campaign names it
    doc: str
    reader: tuple[str, ...] = ()  # run once on each reader's session
    writer: tuple[str, ...] = ()  # run once on the writer's session
    #: the writer, after each commit: a token naming what it committed (its GTID), None: no causal wait
    token: Callable[[Any], str] | None = None
    #: the reader, before each read: wait until the node has applied ``token``; (connection, token, timeout s) -> done
    wait: Callable[[Any, str, float], bool] | None = None
    #: settings (``benchlib.systems`` vocabulary) the sysbench load runs under as well, so that its throughput shows
    #: the price (GR's AFTER levels); a campaign applies them with the run's other settings
    load: dict[str, str] | None = None
    #: a read under it may wait (a causal wait, or the server holding it until the node has caught up): its reader
    #: needs a thread of its own; readers that never wait share one and read together (one wake-up a tick)
    waits: bool = True


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
    node_status: Callable[[Any, str], dict[str, object]]  # (connection, role) -> what lab status shows
    #: (connection, takes the writes, nodes in the cluster, node name) -> what keeps the node from being ready
    readiness: Callable[[Any, bool, int, str], list[str]] = lambda conn, writer, size, node: []
    #: (server kind, takes the writes) -> (privilege probe, SQL, parameters) the sampler runs on such a node
    reads: Callable[[Any, bool], list[tuple[str, str, Any]]] = lambda kind, writer: []
    kinds: frozenset[str] = frozenset()  # the servers (dialect.detect's ServerKind.system) that can be this system
    #: what must hold through a run's measured window (benchlib.systems.invariants): a run that breaks one is invalid
    invariants: tuple[inv.Invariant, ...] = (inv.nodes_answer,)
    #: where a node stands and how to wait for a position (the consistency audit); None: nothing to compare (Aurora)
    positions: Positions | None = None
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
    #: its read-consistency settings by name, the default first (the names are its facts' ``read_settings``)
    read_settings: dict[str, ReadSetting] = field(default_factory=dict)

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


def _beside_their_facts() -> list[System]:
    """The ``SYSTEM`` of each registered system's package (its ``system.py``, beside the ``facts.py`` its entry point
    names); a system whose package has none acts on no server (facts only)."""
    found = []
    for name, origin in list(catalogue.SYSTEMS.origin.items()):
        package = origin.partition(":")[0].rpartition(".")[0]
        try:
            module = importlib.import_module(f"{package}.system")
        except ModuleNotFoundError as exc:
            if exc.name != f"{package}.system":
                raise
            continue
        found.append(module.SYSTEM)
    return found


SYSTEMS: Registry[System] = Registry("system", found=_beside_their_facts,
                                     hint=lambda names: f"systems: {', '.join(sorted(names))}")
SYSTEMS.requires(catalogue.SYSTEMS)

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


#: the server without a RESTART statement: settings read at start cannot be swept remotely
NO_RESTART = "MariaDB"
