"""Topologies: how the nodes of one cluster are started, wired, healed, inspected and tuned.

One small base class, one subclass per topology, one registry keyed by topology name. What differs between
servers (MariaDB's ``CHANGE MASTER`` against MySQL's ``CHANGE REPLICATION SOURCE``, their semi-sync names) is
the cluster's flavour's data (``benchlib.lab.flavors``), so one ``Async`` runs either. A campaign sweeps runtime
settings through ``apply_setting``; ``heal`` restarts killed nodes and waits until they have rejoined (async:
from their GTID position; Galera: IST; Group Replication, in ``benchlib.lab.group_replication``: distributed
recovery, after which a single-primary group gets its intended primary back).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

import pymysql

from benchlib.errors import LabError, ReplicationError
from benchlib.lab import sql
from benchlib.lab.flavors import Flavor
from benchlib.lab.layout import NodePlan
from benchlib.lab.mycnf import GALERA_PROVIDER
from benchlib.lab.node import log_tail
from benchlib.servers import Server
from benchlib.systems.base import get as get_system
from benchlib.systems import semisync
from benchlib.systems.replication import threads_running as replication_threads
from benchlib.systems.settings import ClusterTarget, NodeRef, SettingRules, apply_setting
from benchlib.plugin import Registry
from benchlib.schema import Cell

__all__ = ["REGISTRY", "ClusterContext", "Topology", "for_cluster", "recover_position", "register"]

REGISTRY: Registry[type["Topology"]] = Registry("topology")  # topology name -> how to run it


def register(cls: type["Topology"]) -> type["Topology"]:
    return REGISTRY.register(cls)


@dataclass
class ClusterContext:
    """What a topology needs of its lab: one cluster's nodes, spec, flavour and server, connections, its settings,
    passwords."""

    cluster: str
    spec: Any  # the cluster's spec (benchlib.lab.spec)
    nodes: list[NodePlan]
    connect: Callable[..., Any]
    settings: Callable[[], dict[str, Cell]]
    secret_of: Callable[[str], str]  # account -> its generated password (benchlib.lab.secrets)
    rules: SettingRules
    flavor: Flavor
    server: Server
    restart: Callable[[list[NodePlan]], None] = lambda nodes: None  # start stopped nodes, wait until connectable
    #: give a stopped node a fresh datadir (as the lab's build did) and start it; None: this lab cannot
    renew: Callable[[NodePlan], None] | None = None


def for_cluster(ctx: ClusterContext) -> "Topology":
    return REGISTRY[ctx.spec.topology](ctx)


class Topology:
    name: ClassVar[str]
    #: programs a node of this topology needs beyond its server (checked before a lab comes up) -> their package
    tools: ClassVar[dict[str, str]] = {}
    files: ClassVar[dict[str, str]] = {}  # files it needs (a provider library) -> their package
    #: its nodes start from a seed of the cluster's own, made as a one-node group on this port of node 1 (Galera:
    #: one history UUID and seqno for every node); None: a seed shared by every cluster of the same server
    @staticmethod
    def seed_group_port(first: NodePlan) -> int | None:
        return None

    def __init__(self, ctx: ClusterContext):
        self.ctx = ctx
        self.cluster = ctx.cluster
        self.spec = ctx.spec
        self.nodes: list[NodePlan] = ctx.nodes
        self.connect = ctx.connect
        self.flavor = ctx.flavor

    # -- bring-up -----------------------------------------------------------------
    def prepare(self) -> None:
        """Called after datadirs are copied from the seed, before any node starts."""

    def group_port(self, node: NodePlan) -> int | None:
        """The port a node's peers dial to form the group (None: nodes start independently)."""
        return None

    def start_args(self, node: NodePlan, run_as: str | None) -> tuple[str, ...]:
        """Extra server arguments for (re)starting ``node`` now."""
        return ()

    def form(self, timeout: float) -> None:
        """Wire freshly started nodes together and wait until the cluster is ready."""
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float) -> None:
        """Wait until every node is up and in sync."""

    # -- heal ---------------------------------------------------------------------
    def restart_order(self, dead: list[NodePlan]) -> list[list[NodePlan]]:
        """Groups of nodes to start together, in order."""
        return [dead]

    def before_restart(self, dead: list[NodePlan], timeout: float) -> None:
        """Called once before the dead nodes start again (nothing by default)."""

    def after_group(self, group: list[NodePlan], timeout: float) -> None:
        """Called after each restart group is connectable, before the next group starts."""

    def after_heal(self, restarted: list[NodePlan], timeout: float) -> None:
        self.wait_ready(timeout)

    def ensure_front(self, timeout: float) -> str | None:
        """A heal with no node to restart: whatever the topology keeps in front of its nodes (GR: MySQL Router)
        running again; returns what was done (None: nothing)."""
        return None

    def force_full_transfer(self, node: NodePlan, survivors: list[NodePlan]) -> str:
        """Before ``node`` rejoins: make sure it cannot catch up incrementally (its cluster's full path, the one a
        node that was gone too long takes); returns what was done. Default: nothing to force."""
        return ""

    def before_rejoin(self, node: NodePlan, survivors: list[NodePlan], timeout: float) -> None:
        """Before ``node`` starts again under load: wait for what must happen first (nothing by default)."""

    def after_rejoin(self, node: NodePlan, timeout: float) -> None:
        """A node restarted while the cluster works on: wait until it is back in its role (never move roles)."""
        self.after_group([node], timeout)
        self.wait_ready(timeout)

    def heartbeat_triggers(self) -> bool:
        """Whether the heartbeat's apply-time trigger fires on this cluster's replicas (row events)."""
        return False

    def rejoin_path(self, restarted: list[NodePlan]) -> str:
        """How restarted nodes came back, in words, from what their error logs say since their last start."""
        return "rejoined"

    @staticmethod
    def since_start(node: NodePlan, size: int = 262144) -> str:
        """The error log of ``node`` since it last started."""
        try:
            with open(node.error_log, "rb") as f:
                f.seek(max(0, f.seek(0, 2) - size))
                text = f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""
        cut = max(text.rfind("starting as process"), text.rfind("Starting MariaDB"), text.rfind("mysqld (mysqld "))
        return text[cut:] if cut >= 0 else text

    # -- inspection ---------------------------------------------------------------
    def node_status(self, node: NodePlan, conn) -> dict[str, object]:
        """What ``lab status`` shows of ``node``: its system's view of a node in its role."""
        return get_system(self.ctx.rules.system).node_status(conn, "primary" if node.index == 1 else "replica")

    # -- runtime settings -----------------------------------------------------------
    #: how long a settings statement may keep its connection waiting (None: the connection's default); a topology
    #: whose settings restart something (a group member leaving and joining again) waits longer
    SETTINGS_READ_S: float | None = None

    def target(self) -> ClusterTarget:
        """The cluster's nodes for settings: node 1 takes the writes."""
        wait = {"read_timeout": self.SETTINGS_READ_S} if self.SETTINGS_READ_S else {}
        return ClusterTarget.of(self.cluster, [n.name for n in self.nodes],
                                lambda name: self.connect(next(n for n in self.nodes if n.name == name), **wait),
                                hint="benchlib lab status shows the nodes' state; benchlib lab heal restarts "
                                     "nodes that are down")

    def apply_setting(self, key: str, value: Any, nodes: list[NodePlan]) -> None:
        """Apply an already parsed setting to the running ``nodes`` of this cluster."""
        names = {n.name for n in nodes}
        target = self.target()
        setting = self.ctx.rules.settings[key]
        apply_setting(target, setting, value, [r for r in target.nodes if r.name in names])
        if setting.rejoins:  # a member left and joined again: back in the cluster (recovered) before anything goes on
            self.wait_ready(self.SETTINGS_READ_S or 120.0)

    # -- helpers ------------------------------------------------------------------
    def _poll(self, timeout: float, check: Callable[[], tuple[bool, str]], what: str) -> None:
        deadline = time.monotonic() + timeout
        why = ""
        while True:
            ok, why = check()
            if ok:
                return
            if time.monotonic() > deadline:
                raise ReplicationError(f"{self.cluster}: {what} not reached within {timeout:.0f} s: {why}",
                                       detail=self._logs_detail())
            time.sleep(0.02)

    def _logs_detail(self) -> str:
        return "\n".join(f"  last lines of {n.error_log}:\n{log_tail(n.error_log, 6)}" for n in self.nodes)


@register
class Single(Topology):
    name = "single"

    def wait_ready(self, timeout: float) -> None:
        for node in self.nodes:
            with self.connect(node) as conn:
                sql.scalar(conn, "SELECT 1")

    def heartbeat_triggers(self) -> bool:
        return self.flavor.replica_triggers


@register
class Async(Topology):
    """A primary and its replicas: GTID positioning, each replica's threads and position waited for, semi-sync
    switched on where wanted; every statement in the cluster's flavour's names."""

    name = "async"
    semisync_default = False

    @property
    def primary(self) -> NodePlan:
        return self.nodes[0]

    @property
    def replicas(self) -> list[NodePlan]:
        return self.nodes[1:]

    def semisync_wanted(self) -> bool:
        return bool(self.ctx.settings().get("semisync", self.semisync_default))

    def form(self, timeout: float) -> None:
        for replica in self.replicas:
            with self.connect(replica) as conn:
                self._point_at_primary(conn)
        self.wait_ready(timeout)

    def heartbeat_triggers(self) -> bool:
        return self.flavor.replica_triggers

    def _point_at_primary(self, conn) -> None:
        self.point_at(conn, self.primary)

    def point_at(self, conn, source: NodePlan) -> None:
        """Make the replica on ``conn`` replicate from ``source`` (GTID positioning)."""
        names = self.flavor.replication
        sql.execute(conn, names.stop)
        with conn.cursor() as cur:
            cur.execute(names.change_source, (source.listen_host, source.port, self.ctx.secret_of("repl")))
        sql.execute(conn, names.start)

    def semisync_on(self, primary: NodePlan, replicas: list[NodePlan], timeout: float) -> None:
        """Semi-sync with ``primary`` as its primary (after a promotion), with the cluster's semi-sync settings."""
        target = ClusterTarget(self.cluster, [NodeRef(primary.name, "primary")]
                               + [NodeRef(r.name, "replica") for r in replicas],
                               lambda name: self.connect(next(n for n in self.nodes if n.name == name)))
        semisync.enable(target, self.flavor.semisync, timeout)
        for key, value in self.ctx.settings().items():
            if self.ctx.rules.settings[key].only_with == "semisync":
                apply_setting(target, self.ctx.rules.settings[key], value, target.nodes)

    def _replica_threads(self, conn) -> tuple[bool, str]:
        rows = sql.query(conn, self.flavor.replication.status)
        return replication_threads(rows[0] if rows else None)

    def _position(self, conn) -> str:
        """The primary's GTID position."""
        return sql.scalar(conn, self.flavor.replication.position) or ""

    def _wait_position(self, conn, position: str, timeout: float) -> bool:
        """Wait until a replica has applied ``position``; False when ``timeout`` passed first."""
        return sql.scalar(conn, self.flavor.replication.wait, (position, timeout)) == 0

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        conns = {r.name: self.connect(r) for r in self.replicas}
        try:
            for replica in self.replicas:
                self._poll(deadline - time.monotonic(), lambda: self._replica_threads(conns[replica.name]),
                           f"{replica.name} replicating")
            if self.semisync_wanted():
                semisync.enable(self.target(), self.flavor.semisync, deadline - time.monotonic())
            with self.connect(self.primary) as pconn:
                target = self._position(pconn)
            for replica in self.replicas:
                left = max(1.0, deadline - time.monotonic())
                if not self._wait_position(conns[replica.name], target, left):
                    raise ReplicationError(
                        f"{replica.name} did not catch up with {self.primary.name} (GTID {target}) within {timeout:.0f} s",
                        detail=self._logs_detail(),
                    )
        finally:
            for c in conns.values():
                c.close()

    def rejoin_path(self, restarted):
        return "caught up from their GTID position (async catch-up)"

    def restart_order(self, dead):
        # the primary first, so restarted replicas find it
        return [[n for n in dead if n.role == "primary"], [n for n in dead if n.role == "replica"]]


@register
class Semisync(Async):
    name = "semisync"
    semisync_default = True


@register
class Galera(Topology):
    """Galera: nodes that start together from one seed history, a saved primary view, rejoins by IST."""

    name = "galera"
    tools = {"rsync": "rsync", "wsrep_sst_rsync": "mariadb-server"}  # rsync SST (a joiner too far behind)
    files = {GALERA_PROVIDER: "galera-4"}

    @staticmethod
    def seed_group_port(first: NodePlan) -> int | None:
        return first.galera_port

    def group_port(self, node):
        return node.galera_port

    def start_args(self, node, run_as):
        """A node that crashed (grastate seqno -1) starts from the position InnoDB recovers, as
        MariaDB's own galera_recovery does: without it every restarted node has an undefined
        position, and one that had not applied the last write-sets rejoins without IST."""
        grastate = node.datadir / "grastate.dat"
        if not grastate.exists() or "seqno:   -1" not in grastate.read_text():
            return ()
        return (f"--wsrep_start_position={recover_position(node, self.ctx.server, run_as)}",)

    def prepare(self) -> None:
        from benchlib.lab.seed import write_gvwstate

        write_gvwstate(self.nodes)

    def _synced(self, conn, want: int) -> tuple[bool, str]:
        try:
            st = sql.global_status(conn, "wsrep_")
        except pymysql.err.MySQLError as exc:
            return False, str(exc)
        state = st.get("wsrep_local_state_comment", "?")
        size = int(st.get("wsrep_cluster_size", 0) or 0)
        ok = (
            st.get("wsrep_ready") == "ON"
            and state == "Synced"
            and st.get("wsrep_cluster_status") == "Primary"
            and size == want
        )
        return ok, f"{state}, {st.get('wsrep_cluster_status')}, size {size}/{want}"

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for node in self.nodes:
            while True:
                # a joiner just restarted may drop a connection while it receives its state transfer (lost
                # connection during the handshake): connect again until the deadline, not give up on the first
                try:
                    with self.connect(node) as conn:
                        self._poll(max(0.5, deadline - time.monotonic()), lambda: self._synced(conn, len(self.nodes)),
                                   f"{node.name} Synced in a primary cluster of {len(self.nodes)}")
                    break
                except (LabError, pymysql.err.OperationalError):
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)

    def after_group(self, group, timeout):
        self.wait_ready(timeout)  # a joiner is Synced before the next one asks for IST

    def force_full_transfer(self, node, survivors):
        """Without its grastate.dat a node's position is unknown: it asks for a full state transfer (SST)."""
        (node.datadir / "grastate.dat").unlink(missing_ok=True)
        return f"{node.name}'s grastate.dat removed (its position unknown: SST)"

    def rejoin_path(self, restarted):
        paths = []
        if len(restarted) == len(self.nodes):  # the whole cluster: no node bootstraps, the saved view comes back
            at = {n.name: recovered_seqno(n) for n in restarted}
            known = {k: v for k, v in at.items() if v is not None}
            if known:
                top = max(known.values())
                paths.append("the whole cluster restarted together, its primary component restored from the saved "
                             "view (pc.recovery: no node bootstrapped it); recovered positions "
                             + ", ".join(f"{k} seqno {v}" for k, v in known.items())
                             + f" (most advanced: {', '.join(k for k, v in known.items() if v == top)})")
        for n in restarted:
            log = self.since_start(n)
            # the joiner always runs the SST script; it says which transfer the donor chose ("rsync IST completed on
            # joiner" when the donor's gcache held what was missing, "rsync SST completed on joiner" otherwise)
            if re.search(r"\bSST completed on joiner", log):
                paths.append(f"{n.name} by SST" + (" (then IST)" if "Receiving IST" in log else ""))
            elif re.search(r"\bIST completed on joiner", log) or "IST received" in log:
                paths.append(f"{n.name} by IST")
            else:
                paths.append(f"{n.name} without a state transfer")
        return "; ".join(paths)

    def restart_order(self, dead):
        alive = [n for n in self.nodes if n not in dead]
        if alive:
            return [[n] for n in dead]  # joiners one at a time (IST from a donor)
        return [dead]  # whole cluster down: all together, primary view recovered from gvwstate.dat


def recovered_seqno(node: NodePlan) -> int | None:
    """The seqno the node's last ``--wsrep-recover`` found (None: it was not recovered since it last ran)."""
    log = node.dir / "wsrep-recover.log"
    if not log.exists():
        return None
    found = re.findall(r"WSREP: Recovered position: [0-9a-f-]+:(-?\d+)", log.read_text(errors="replace"))
    return int(found[-1]) if found else None


def recover_position(node: NodePlan, server: Server, run_as: str | None) -> str:
    """``uuid:seqno`` of the last transaction a stopped Galera node committed (the server's ``--wsrep-recover``)."""
    import subprocess

    log = node.dir / "wsrep-recover.log"
    log.unlink(missing_ok=True)
    cmd = server.argv(node.marker, *([f"--user={run_as}"] if run_as else []), "--wsrep-recover", f"--log-error={log}")
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    text = log.read_text(errors="replace") if log.exists() else res.stderr
    for line in text.splitlines():
        if "WSREP: Recovered position:" in line:
            return line.rsplit("Recovered position:", 1)[1].strip()
    raise ReplicationError(f"{node.name}: {server.mysqld.name} --wsrep-recover found no position",
                           detail="\n".join("    " + line for line in text.splitlines()[-8:]))
