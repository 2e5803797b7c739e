"""Topologies: how the nodes of one cluster are started, wired, healed, inspected and tuned.

One small base class, one subclass per (system, topology), one registry. A campaign sweeps
runtime settings through ``apply_setting``; ``heal`` restarts killed nodes and waits until
they have rejoined (async: from their GTID position; Galera: IST; Group Replication:
distributed recovery, after which a single-primary group gets its intended primary back).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

import pymysql

from benchlib.errors import LabError, ReplicationError
from benchlib.lab import sql
from benchlib.lab.layout import NodePlan
from benchlib.lab.node import log_tail
from benchlib.systems import get as get_system
from benchlib.systems import semisync
from benchlib.systems.settings import ClusterTarget, NodeRef, SettingRules, apply_setting

__all__ = ["REGISTRY", "RESTART_ONLY", "ClusterContext", "Topology", "for_cluster", "recover_position"]

REGISTRY: dict[tuple[str, str], type["Topology"]] = {}  # (system, topology) -> how to run it
#: spec fields a DBA may try to change on a running lab: they need a new lab.
RESTART_ONLY = {"binlog", "nodes", "replicas", "buffer_pool", "redo_log", "gcache", "performance_schema",
                "max_connections", "wait_point", "timeout_ms", "topology"}


def register(cls: type["Topology"]) -> type["Topology"]:
    REGISTRY[(cls.system, cls.name)] = cls
    return cls


@dataclass
class ClusterContext:
    """What a topology needs of its lab: one cluster's nodes and spec, connections, its settings, passwords."""

    cluster: str
    spec: Any  # the cluster's spec (benchlib.lab.spec)
    nodes: list[NodePlan]
    connect: Callable[[NodePlan], Any]
    settings: Callable[[], dict[str, Any]]
    password: Callable[[str], str]
    rules: SettingRules
    restart: Callable[[list[NodePlan]], None] = lambda nodes: None  # start stopped nodes, wait until connectable


def for_cluster(ctx: ClusterContext) -> "Topology":
    return REGISTRY[(ctx.rules.system, ctx.spec.topology)](ctx)


class Topology:
    name: ClassVar[str]
    system: ClassVar[str] = "mariadb"

    def __init__(self, ctx: ClusterContext):
        self.ctx = ctx
        self.cluster = ctx.cluster
        self.spec = ctx.spec
        self.nodes: list[NodePlan] = ctx.nodes
        self.connect = ctx.connect

    # -- bring-up -----------------------------------------------------------------
    def prepare(self) -> None:
        """Called after datadirs are copied from the seed, before any node starts."""

    def group_port(self, node: NodePlan) -> int | None:
        """The port a node's peers dial to form the group (None: nodes start independently)."""
        return None

    def start_args(self, node: NodePlan, run_as: str | None) -> tuple[str, ...]:
        """Extra mariadbd arguments for (re)starting ``node`` now."""
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

    def after_group(self, group: list[NodePlan], timeout: float) -> None:
        """Called after each restart group is connectable, before the next group starts."""

    def after_heal(self, restarted: list[NodePlan], timeout: float) -> None:
        self.wait_ready(timeout)

    # -- inspection ---------------------------------------------------------------
    def node_status(self, node: NodePlan, conn) -> dict[str, Any]:
        """What ``lab status`` shows of ``node``: its system's view of a node in its role."""
        role = "primary" if node.index == 1 else "replica"
        return get_system(self.system).node_status(conn, role)

    # -- runtime settings -----------------------------------------------------------
    def target(self) -> ClusterTarget:
        return ClusterTarget(self.cluster, [NodeRef(n.name, "primary" if n.index == 1 else "replica")
                                            for n in self.nodes],
                             lambda name: self.connect(next(n for n in self.nodes if n.name == name)),
                             hint="benchlib lab status shows the nodes' state; benchlib lab heal restarts nodes "
                                  "that are down")

    def apply_setting(self, key: str, value: Any, nodes: list[NodePlan]) -> None:
        """Apply an already parsed setting to the running ``nodes`` of this cluster."""
        names = {n.name for n in nodes}
        target = self.target()
        apply_setting(target, self.ctx.rules.settings[key], value, [r for r in target.nodes if r.name in names])

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


@register
class Async(Topology):
    name = "async"
    semisync_default = False
    semisync_names = semisync.MARIADB

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

    def _point_at_primary(self, conn) -> None:
        sql.execute(conn, "STOP SLAVE")
        with conn.cursor() as cur:
            cur.execute(
                "CHANGE MASTER TO MASTER_HOST=%s, MASTER_PORT=%s, MASTER_USER='repl', MASTER_PASSWORD=%s, "
                "MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1",
                (self.primary.listen_host, self.primary.port, self.ctx.password("repl")),
            )
        sql.execute(conn, "START SLAVE")

    def _replica_threads(self, conn) -> tuple[bool, str]:
        st = sql.slave_status(conn)
        if st is None:
            return False, "replication not configured"
        if st["Slave_IO_Running"] != "Yes" or st["Slave_SQL_Running"] != "Yes":
            err = st.get("Last_IO_Error") or st.get("Last_SQL_Error") or ""
            return False, f"IO={st['Slave_IO_Running']} SQL={st['Slave_SQL_Running']} {err}".strip()
        return True, ""

    def _position(self, conn) -> str:
        """The primary's GTID position."""
        return sql.scalar(conn, "SELECT @@GLOBAL.gtid_binlog_pos") or ""

    def _wait_position(self, conn, position: str, timeout: float) -> bool:
        """Wait until a replica has applied ``position``; False when ``timeout`` passed first."""
        return sql.scalar(conn, "SELECT MASTER_GTID_WAIT(%s, %s)", (position, timeout)) == 0

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        conns = {r.name: self.connect(r) for r in self.replicas}
        try:
            for replica in self.replicas:
                self._poll(deadline - time.monotonic(), lambda: self._replica_threads(conns[replica.name]),
                           f"{replica.name} replicating")
            if self.semisync_wanted():
                semisync.enable(self.target(), self.semisync_names, deadline - time.monotonic())
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

    def restart_order(self, dead):
        # the primary first, so restarted replicas find it
        return [[n for n in dead if n.role == "primary"], [n for n in dead if n.role == "replica"]]


@register
class Semisync(Async):
    name = "semisync"
    semisync_default = True


@register
class MySQLSingle(Single):
    system = "mysql"


@register
class MySQLAsync(Async):
    """MySQL 8/9 asynchronous replication: GTID auto-positioning, MySQL's statement names."""

    system = "mysql"
    semisync_names = semisync.MYSQL

    def _point_at_primary(self, conn) -> None:
        sql.execute(conn, "STOP REPLICA")
        with conn.cursor() as cur:
            cur.execute(
                "CHANGE REPLICATION SOURCE TO SOURCE_HOST=%s, SOURCE_PORT=%s, SOURCE_USER='repl', SOURCE_PASSWORD=%s, "
                "SOURCE_AUTO_POSITION=1, GET_SOURCE_PUBLIC_KEY=1, SOURCE_CONNECT_RETRY=1",
                (self.primary.listen_host, self.primary.port, self.ctx.password("repl")),
            )
        sql.execute(conn, "START REPLICA")

    def _replica_threads(self, conn) -> tuple[bool, str]:
        rows = sql.query(conn, "SHOW REPLICA STATUS")
        if not rows:
            return False, "replication not configured"
        st = rows[0]
        if st["Replica_IO_Running"] != "Yes" or st["Replica_SQL_Running"] != "Yes":
            err = st.get("Last_IO_Error") or st.get("Last_SQL_Error") or ""
            return False, f"IO={st['Replica_IO_Running']} SQL={st['Replica_SQL_Running']} {err}".strip()
        return True, ""

    def _position(self, conn) -> str:
        return sql.scalar(conn, "SELECT @@GLOBAL.gtid_executed") or ""

    def _wait_position(self, conn, position: str, timeout: float) -> bool:
        return sql.scalar(conn, "SELECT WAIT_FOR_EXECUTED_GTID_SET(%s, %s)", (position, timeout)) == 0


@register
class MySQLSemisync(MySQLAsync):
    name = "semisync"
    semisync_default = True


@register
class GroupReplication(Topology):
    """A MySQL group: node 1 bootstraps it, the others join (distributed recovery from a donor); in a
    single-primary group node 1 is the intended primary, and heal gives it the role back."""

    name = "group_replication"
    system = "group_replication"

    MEMBERS = ("SELECT MEMBER_ID, MEMBER_HOST, MEMBER_PORT, MEMBER_STATE, MEMBER_ROLE "
               "FROM performance_schema.replication_group_members")
    START_S = 150.0  # START GROUP_REPLICATION waits up to 60 s for its view: let the server say why it failed

    def _recovery_account(self, conn) -> None:
        with conn.cursor() as cur:
            cur.execute("CHANGE REPLICATION SOURCE TO SOURCE_USER='repl', SOURCE_PASSWORD=%s "
                        "FOR CHANNEL 'group_replication_recovery'", (self.ctx.password("repl"),))

    def _address(self, node: NodePlan) -> str:
        """Where the group reaches ``node`` (its group_replication_local_address)."""
        return f"{node.listen_host}:{node.port if self.spec.communication_stack == 'MYSQL' else node.gr_port}"

    def _start(self, node: NodePlan, bootstrap: bool, members: list[NodePlan] = (), retries: int = 1) -> None:
        """START GROUP_REPLICATION on ``node``: it bootstraps the group, or joins through ``members`` only (the
        nodes ONLINE now: a joiner that asks another joiner to add it waits 10 s for nothing) and recovers."""
        failed = None
        with self.connect(node, read_timeout=self.START_S) as conn:
            self._recovery_account(conn)
            if members:
                with conn.cursor() as cur:
                    cur.execute("SET GLOBAL group_replication_group_seeds = %s",
                                (",".join(self._address(m) for m in members),))
            if bootstrap:
                sql.execute(conn, "SET GLOBAL group_replication_bootstrap_group = ON")
            try:
                sql.execute(conn, "START GROUP_REPLICATION")
            except pymysql.err.MySQLError as exc:
                failed = exc.args[-1] if exc.args else str(exc)
                if bootstrap:
                    raise self._failure(node, f"START GROUP_REPLICATION failed: {failed}") from None
            finally:
                if bootstrap:
                    sql.execute(conn, "SET GLOBAL group_replication_bootstrap_group = OFF")
        if not bootstrap:
            self._until_recovered(node, members, failed, retries)

    CLONE_DONE = "Clone shutting down server as RESTART failed"  # MY-013462: no supervisor to restart it

    @staticmethod
    def _failure(node: NodePlan, what: str) -> ReplicationError:
        return ReplicationError(f"{node.name}: {what}",
                                detail=f"  last lines of {node.error_log}:\n{log_tail(node.error_log, 8)}")

    def _cloned(self, node: NodePlan) -> bool:
        """Did distributed recovery clone ``node`` and shut it down since it last started (mysqld cannot
        restart itself without a supervisor)?"""
        try:
            with open(node.error_log, "rb") as f:
                f.seek(max(0, f.seek(0, 2) - 65536))
                tail = f.read().decode(errors="replace")
        except FileNotFoundError:
            return False
        return tail.rfind(self.CLONE_DONE) > tail.rfind("ready for connections")

    def _until_recovered(self, node: NodePlan, members: list[NodePlan], failed: str | None, retries: int,
                         timeout: float = 600.0) -> None:
        """Wait while a joining ``node`` recovers until ONLINE. A member cloned from a donor shuts down (nothing
        restarts it): it is started again and joins again, incrementally. A join that failed (on a loaded
        machine the view change can time out) is tried ``retries`` more times."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with self.connect(node) as conn:
                    state = sql.scalar(conn, "SELECT MEMBER_STATE FROM performance_schema.replication_group_members "
                                             "WHERE MEMBER_ID = @@server_uuid") or "OFFLINE"
            except (LabError, pymysql.err.MySQLError):
                state = None  # down, or shutting down
            if state == "ONLINE":
                return
            if state is None and self._cloned(node):
                self.ctx.restart([node])
                return self._start(node, False, members, retries)
            if state in ("ERROR", "OFFLINE") and (failed or state == "ERROR"):
                if retries:
                    with self.connect(node) as conn:
                        sql.execute(conn, "STOP GROUP_REPLICATION")
                    return self._start(node, False, members, retries - 1)
                raise self._failure(node, f"could not join the group ({failed or 'member state ERROR'})")
            time.sleep(0.1)
        raise self._failure(node, f"not ONLINE within {timeout:.0f} s of joining")

    def form(self, timeout: float) -> None:
        """Node 1 bootstraps the group; the others join together (the group admits them one by one) as soon as
        node 1 is ONLINE: its START GROUP_REPLICATION returns about a second later."""
        first = self.nodes[0]
        with ThreadPoolExecutor(max_workers=1) as pool:
            boot = pool.submit(self._start, first, True)
            with self.connect(first) as conn:
                self._poll(timeout, lambda: self._online(conn, 1) if not boot.done() else (True, ""),
                           f"{first.name} bootstrapping the group")
            if boot.done():
                boot.result()  # raises what failed
            self._join(self.nodes[1:], [first])
            boot.result()
        self.wait_ready(timeout)

    def _join(self, nodes: list[NodePlan], members: list[NodePlan]) -> None:
        with ThreadPoolExecutor(max_workers=max(1, len(nodes))) as pool:
            for f in [pool.submit(self._start, n, False, members) for n in nodes]:
                f.result()

    def members(self, conn) -> list[dict[str, Any]]:
        return sql.query(conn, self.MEMBERS)

    def _online(self, conn, want: int) -> tuple[bool, str]:
        try:
            rows = self.members(conn)
        except pymysql.err.MySQLError as exc:
            return False, str(exc)
        online = [r for r in rows if r["MEMBER_STATE"] == "ONLINE"]
        states = ", ".join(f"{r['MEMBER_HOST']}:{r['MEMBER_PORT']} {r['MEMBER_STATE']}" for r in rows)
        return len(online) == want, states or "not in a group"

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for node in self.nodes:
            with self.connect(node) as conn:
                self._poll(max(0.5, deadline - time.monotonic()), lambda: self._online(conn, len(self.nodes)),
                           f"{node.name} seeing {len(self.nodes)} members ONLINE")

    def restart_order(self, dead):
        alive = [n for n in self.nodes if n not in dead]
        if alive:
            return [dead]
        return [[self.nodes[0]], [n for n in dead if n is not self.nodes[0]]]  # the whole group: bootstrap again

    def after_group(self, group, timeout):
        members = [n for n in self.nodes if n not in group and self._is_member(n)]
        if not members and self.nodes[0] in group:
            self._start(self.nodes[0], bootstrap=True)  # the whole group was down: node 1 bootstraps it again
            group, members = [n for n in group if n is not self.nodes[0]], [self.nodes[0]]
        else:
            self._drop_old_incarnations(group, members, timeout)
        self._join(group, members)

    @staticmethod
    def _where(row: dict[str, Any]) -> tuple[str, int]:
        return row["MEMBER_HOST"], int(row["MEMBER_PORT"])

    def _drop_old_incarnations(self, restarted: list[NodePlan], members: list[NodePlan], timeout: float) -> None:
        """Before a restarted member joins again, the group must have expelled its killed incarnation (a join
        while the group still lists it times out waiting for its view). The survivors expel it once they have
        suspected it for ``group_replication_member_expel_timeout``; survivors left without a majority cannot,
        so they are forced to a group of themselves (``group_replication_force_members``, as an operator would)."""
        if not members:
            return
        gone = {(n.listen_host, n.port) for n in restarted}
        survivor = members[0]

        def expelled() -> tuple[bool, str]:
            rows = self.members(conn)
            stale = [r for r in rows if self._where(r) in gone]
            unreachable = [r for r in rows if r["MEMBER_STATE"] == "UNREACHABLE"]
            if stale and len(unreachable) * 2 >= len(rows) and all(r in unreachable for r in stale):
                with conn.cursor() as cur:  # no majority left: the survivors form the group on their own
                    cur.execute("SET GLOBAL group_replication_force_members = %s",
                                (",".join(self._address(m) for m in members),))
                sql.execute(conn, "SET GLOBAL group_replication_force_members = ''")
            states = ", ".join(f"{h}:{p} {r['MEMBER_STATE']}" for r in stale for h, p in [self._where(r)])
            return not stale, f"{survivor.name} still lists {states}"

        with self.connect(survivor) as conn:
            self._poll(timeout, expelled, f"the group expelling the killed {', '.join(n.name for n in restarted)}")

    def _is_member(self, node: NodePlan) -> bool:
        try:
            with self.connect(node) as conn:
                return sql.scalar(conn, "SELECT MEMBER_STATE FROM performance_schema.replication_group_members "
                                        "WHERE MEMBER_ID = @@server_uuid") == "ONLINE"
        except (LabError, pymysql.err.MySQLError):  # down, or not answering: not a member to join through
            return False

    def after_heal(self, restarted, timeout):
        self.wait_ready(timeout)
        if self.spec.single_primary:
            self.restore_primary(timeout)

    def primary_name(self) -> str | None:
        """The node that is the group's primary now (None: no primary, or a multi-primary group)."""
        with self.connect(self.nodes[0]) as conn:
            rows = [r for r in self.members(conn) if r["MEMBER_ROLE"] == "PRIMARY"]
        if len(rows) != 1:
            return None
        return next((n.name for n in self.nodes if n.port == int(rows[0]["MEMBER_PORT"])
                     and n.listen_host == rows[0]["MEMBER_HOST"]), None)

    def restore_primary(self, timeout: float) -> None:
        """Give node 1 (the spec's writer) the primary role back after a failover."""
        if self.primary_name() == self.nodes[0].name:
            return
        with self.connect(self.nodes[0]) as conn:
            uuid = sql.scalar(conn, "SELECT @@server_uuid")
            sql.scalar(conn, "SELECT group_replication_set_as_primary(%s)", (uuid,))
        self._poll(timeout, lambda: (self.primary_name() == self.nodes[0].name, f"primary is {self.primary_name()}"),
                   f"{self.nodes[0].name} primary again")


@register
class Galera(Topology):
    name = "galera"
    system = "galera"

    def group_port(self, node):
        return node.galera_port

    def start_args(self, node, run_as):
        """A node that crashed (grastate seqno -1) starts from the position InnoDB recovers, as
        MariaDB's own galera_recovery does: without it every restarted node has an undefined
        position, and one that had not applied the last write-sets rejoins without IST."""
        grastate = node.datadir / "grastate.dat"
        if not grastate.exists() or "seqno:   -1" not in grastate.read_text():
            return ()
        return (f"--wsrep_start_position={recover_position(node, run_as)}",)

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
            with self.connect(node) as conn:
                self._poll(max(0.5, deadline - time.monotonic()), lambda: self._synced(conn, len(self.nodes)),
                           f"{node.name} Synced in a primary cluster of {len(self.nodes)}")

    def after_group(self, group, timeout):
        self.wait_ready(timeout)  # a joiner is Synced before the next one asks for IST

    def restart_order(self, dead):
        alive = [n for n in self.nodes if n not in dead]
        if alive:
            return [[n] for n in dead]  # joiners one at a time (IST from a donor)
        return [dead]  # whole cluster down: all together, primary view recovered from gvwstate.dat


def recover_position(node: NodePlan, run_as: str | None) -> str:
    """``uuid:seqno`` of the last transaction a stopped Galera node committed (mariadbd --wsrep-recover)."""
    import subprocess

    log = node.dir / "wsrep-recover.log"
    log.unlink(missing_ok=True)
    cmd = ["mariadbd", node.marker, *([f"--user={run_as}"] if run_as else []), "--wsrep-recover",
           f"--log-error={log}"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    text = log.read_text(errors="replace") if log.exists() else res.stderr
    for line in text.splitlines():
        if "WSREP: Recovered position:" in line:
            return line.rsplit("Recovered position:", 1)[1].strip()
    raise ReplicationError(f"{node.name}: mariadbd --wsrep-recover found no position",
                           detail="\n".join("    " + line for line in text.splitlines()[-8:]))

