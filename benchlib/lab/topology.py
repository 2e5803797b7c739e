"""Topologies: how the nodes of one cluster are started, wired, healed, inspected and tuned.

One small base class, one subclass per topology, one registry. A campaign sweeps
runtime settings through ``apply_setting``; ``heal`` restarts killed nodes and
waits until they have rejoined (async: from their GTID position; Galera: IST).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, ClassVar

import pymysql

from benchlib.errors import ReplicationError, SettingError
from benchlib.lab import sql
from benchlib.lab.layout import NodePlan
from benchlib.lab.node import log_tail
from benchlib.lab.spec import DURABILITY

if TYPE_CHECKING:
    from benchlib.lab.lab import Lab

REGISTRY: dict[str, type["Topology"]] = {}
#: spec fields a DBA may try to change on a running lab: they need a new lab.
RESTART_ONLY = {"binlog", "nodes", "replicas", "buffer_pool", "redo_log", "gcache", "performance_schema",
                "max_connections", "wait_point", "timeout_ms", "topology"}


def register(cls: type["Topology"]) -> type["Topology"]:
    REGISTRY[cls.name] = cls
    return cls


def for_cluster(lab: "Lab", cluster: str) -> "Topology":
    return REGISTRY[lab.spec.clusters[cluster].topology](lab, cluster)


def _bool(value: Any) -> bool:
    text = str(value).strip().lower()
    if text in {"1", "on", "yes", "true"}:
        return True
    if text in {"0", "off", "no", "false"}:
        return False
    raise ValueError("expects on or off")


def _number(cast: type, lo: float, hi: float) -> Callable[[Any], Any]:
    what = f"{'an integer' if cast is int else 'a number'} from {lo:,} to {hi:,}".replace(",", "")

    def parse(value: Any):
        try:
            x = cast(str(value))
        except ValueError:
            raise ValueError(f"expects {what}") from None
        if not lo <= x <= hi:
            raise ValueError(f"expects {what}")
        return x

    return parse


def _int(lo: int, hi: int) -> Callable[[Any], int]:
    return _number(int, lo, hi)


def _choice(*options: str) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        text = str(value).strip()
        for option in options:
            if text.lower() == option.lower():
                return option
        raise ValueError(f"expects one of {', '.join(options)}")

    return parse


def _float(lo: float, hi: float) -> Callable[[Any], float]:
    return _number(float, lo, hi)


class Topology:
    name: ClassVar[str]
    #: runtime settings: name -> (parser, help)
    SETTINGS: ClassVar[dict[str, tuple[Callable[[Any], Any], str]]] = {
        "durability": (_choice("durable", "relaxed"), "sync_binlog and innodb_flush_log_at_trx_commit together"),
        "sync_binlog": (_int(0, 1_000_000), "binary log fsync every N commits (0: leave it to the OS)"),
        "innodb_flush_log_at_trx_commit": (_int(0, 2), "redo log flush policy (1: fsync at every commit)"),
    }

    def __init__(self, lab: "Lab", cluster: str):
        self.lab = lab
        self.cluster = cluster
        self.spec = lab.spec.clusters[cluster]
        self.nodes: list[NodePlan] = lab.layout.cluster_nodes(cluster)

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
        return {}

    # -- runtime settings -----------------------------------------------------------
    @classmethod
    def parse_setting(cls, key: str, value: Any) -> Any:
        if key not in cls.SETTINGS:
            raise SettingError(
                f"{key!r} is not a runtime setting of a {cls.name} cluster",
                hint=f"settings of {cls.name}: {', '.join(sorted(cls.SETTINGS))}",
            )
        parser, _ = cls.SETTINGS[key]
        try:
            return parser(value)
        except ValueError as exc:
            raise SettingError(f"{key}={value!r}: {exc}", hint=f"{key}: {cls.SETTINGS[key][1]}") from None

    def apply_setting(self, key: str, value: Any, nodes: list[NodePlan]) -> None:
        """Apply an already parsed setting to the running ``nodes`` of this cluster."""
        if key == "durability":
            for var, v in DURABILITY[value].items():
                self._set_global(nodes, var, v)
        elif key in {"sync_binlog", "innodb_flush_log_at_trx_commit"}:
            self._set_global(nodes, key, value)
        else:  # pragma: no cover - guarded by parse_setting
            raise SettingError(f"{key!r} has no applier")

    def _set_global(self, nodes: list[NodePlan], var: str, value: Any) -> None:
        for node in nodes:
            with self.lab.connect(node) as conn:
                sql.execute(conn, f"SET GLOBAL {var} = {sql_literal(value)}")
                got = sql.scalar(conn, f"SELECT @@GLOBAL.{var}")
                if str(got).lower() != str(value).lower() and not (isinstance(value, bool) and int(got) == int(value)):
                    raise SettingError(f"{node.name}: {var} is {got!r} after setting {value!r}")

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


def sql_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    if isinstance(value, (int, float)):
        return str(value)
    return "'" + str(value).replace("\\", "\\\\").replace("'", "''") + "'"


@register
class Single(Topology):
    name = "single"

    def wait_ready(self, timeout: float) -> None:
        for node in self.nodes:
            with self.lab.connect(node) as conn:
                sql.scalar(conn, "SELECT 1")

    def node_status(self, node, conn):
        return {"gtid_binlog_pos": sql.scalar(conn, "SELECT @@GLOBAL.gtid_binlog_pos") or ""}


@register
class Async(Topology):
    name = "async"
    SETTINGS = {
        **Topology.SETTINGS,
        "parallel_threads": (_int(0, 256), "slave_parallel_threads on replicas (0: serial apply)"),
        "parallel_mode": (_choice("optimistic", "conservative", "aggressive", "minimal", "none"), "slave_parallel_mode"),
        "semisync": (_bool, "semi-synchronous replication on or off"),
        "semisync_wait_point": (_choice("AFTER_SYNC", "AFTER_COMMIT"), "rpl_semi_sync_master_wait_point"),
        "semisync_timeout_ms": (_int(1, 3_600_000), "rpl_semi_sync_master_timeout in ms"),
    }
    semisync_default = False

    @property
    def primary(self) -> NodePlan:
        return self.nodes[0]

    @property
    def replicas(self) -> list[NodePlan]:
        return self.nodes[1:]

    def semisync_wanted(self) -> bool:
        return bool(self.lab.settings(self.cluster).get("semisync", self.semisync_default))

    def form(self, timeout: float) -> None:
        primary = self.primary
        for replica in self.replicas:
            with self.lab.connect(replica) as conn:
                sql.execute(conn, "STOP SLAVE")
                with conn.cursor() as cur:
                    cur.execute(
                        "CHANGE MASTER TO MASTER_HOST=%s, MASTER_PORT=%s, MASTER_USER='repl', MASTER_PASSWORD=%s, "
                        "MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1",
                        (primary.listen_host, primary.port, self.lab.creds.password("repl")),
                    )
                sql.execute(conn, "START SLAVE")
        self.wait_ready(timeout)

    def _replica_threads(self, conn) -> tuple[bool, str]:
        st = sql.slave_status(conn)
        if st is None:
            return False, "replication not configured"
        if st["Slave_IO_Running"] != "Yes" or st["Slave_SQL_Running"] != "Yes":
            err = st.get("Last_IO_Error") or st.get("Last_SQL_Error") or ""
            return False, f"IO={st['Slave_IO_Running']} SQL={st['Slave_SQL_Running']} {err}".strip()
        return True, ""

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        conns = {r.name: self.lab.connect(r) for r in self.replicas}
        try:
            for replica in self.replicas:
                self._poll(deadline - time.monotonic(), lambda: self._replica_threads(conns[replica.name]),
                           f"{replica.name} replicating")
            if self.semisync_wanted():
                self._enable_semisync(deadline - time.monotonic())
            with self.lab.connect(self.primary) as pconn:
                target = sql.scalar(pconn, "SELECT @@GLOBAL.gtid_binlog_pos") or ""
            for replica in self.replicas:
                left = max(1.0, deadline - time.monotonic())
                rc = sql.scalar(conns[replica.name], "SELECT MASTER_GTID_WAIT(%s, %s)", (target, left))
                if rc != 0:
                    raise ReplicationError(
                        f"{replica.name} did not catch up with {self.primary.name} (GTID {target}) within {timeout:.0f} s",
                        detail=self._logs_detail(),
                    )
        finally:
            for c in conns.values():
                c.close()

    def _enable_semisync(self, timeout: float) -> None:
        """Master side on only once replicas are attached; wait until all are semi-sync clients."""
        with self.lab.connect(self.primary) as conn:
            sql.execute(conn, "SET GLOBAL rpl_semi_sync_master_enabled = ON")
            want = len(self.replicas)

            def clients() -> tuple[bool, str]:
                st = sql.global_status(conn, "Rpl_semi_sync_master_")
                n = int(st.get("rpl_semi_sync_master_clients", 0))
                return n >= want and st.get("rpl_semi_sync_master_status") == "ON", f"{n}/{want} semi-sync clients"

            deadline = time.monotonic() + timeout
            ok, _ = clients()
            if not ok:
                # replicas that attached before the master side was on reconnect as semi-sync clients
                for replica in self.replicas:
                    with self.lab.connect(replica) as rconn:
                        sql.execute(rconn, "SET GLOBAL rpl_semi_sync_slave_enabled = ON",
                                    "STOP SLAVE IO_THREAD", "START SLAVE IO_THREAD")
            self._poll(max(1.0, deadline - time.monotonic()), clients, "semi-sync clients attached")

    def restart_order(self, dead):
        # the primary first, so restarted replicas find it
        return [[n for n in dead if n.role == "primary"], [n for n in dead if n.role == "replica"]]

    def node_status(self, node, conn):
        if node.role == "primary":
            out: dict[str, Any] = {"gtid_binlog_pos": sql.scalar(conn, "SELECT @@GLOBAL.gtid_binlog_pos") or ""}
            st = sql.global_status(conn, "Rpl_semi_sync_master_")
            out["semisync"] = st.get("rpl_semi_sync_master_status", "OFF")
            out["semisync_clients"] = int(st.get("rpl_semi_sync_master_clients", 0))
            return out
        st = sql.slave_status(conn) or {}
        return {
            "io_running": st.get("Slave_IO_Running", "-"),
            "sql_running": st.get("Slave_SQL_Running", "-"),
            "gtid_slave_pos": sql.scalar(conn, "SELECT @@GLOBAL.gtid_slave_pos") or "",
            "gtid_io_pos": st.get("Gtid_IO_Pos", ""),
            "seconds_behind_master": st.get("Seconds_Behind_Master"),
            "parallel_threads": int(sql.scalar(conn, "SELECT @@GLOBAL.slave_parallel_threads")),
            "last_error": st.get("Last_IO_Error") or st.get("Last_SQL_Error") or "",
        }

    def apply_setting(self, key, value, nodes):
        replicas = [n for n in nodes if n.role == "replica"]
        if key in {"parallel_threads", "parallel_mode"}:
            var = {"parallel_threads": "slave_parallel_threads", "parallel_mode": "slave_parallel_mode"}[key]
            for node in replicas:
                with self.lab.connect(node) as conn:
                    sql.execute(conn, "STOP SLAVE", f"SET GLOBAL {var} = {sql_literal(value)}", "START SLAVE")
                    got = sql.scalar(conn, f"SELECT @@GLOBAL.{var}")
                    if str(got) != str(value):
                        raise SettingError(f"{node.name}: {var} is {got!r} after setting {value!r}")
        elif key == "semisync":
            self._set_semisync(bool(value), replicas)
        elif key == "semisync_wait_point":
            self._set_global([n for n in nodes if n.role == "primary"], "rpl_semi_sync_master_wait_point", value)
        elif key == "semisync_timeout_ms":
            self._set_global([n for n in nodes if n.role == "primary"], "rpl_semi_sync_master_timeout", value)
        else:
            super().apply_setting(key, value, nodes)

    def _set_semisync(self, on: bool, replicas: list[NodePlan]) -> None:
        if on:
            for node in replicas:
                with self.lab.connect(node) as conn:
                    sql.execute(conn, "SET GLOBAL rpl_semi_sync_slave_enabled = ON",
                                "STOP SLAVE IO_THREAD", "START SLAVE IO_THREAD")
            self._enable_semisync(60)
        else:
            with self.lab.connect(self.primary) as conn:
                sql.execute(conn, "SET GLOBAL rpl_semi_sync_master_enabled = OFF")
            for node in replicas:
                with self.lab.connect(node) as conn:
                    sql.execute(conn, "SET GLOBAL rpl_semi_sync_slave_enabled = OFF",
                                "STOP SLAVE IO_THREAD", "START SLAVE IO_THREAD")


@register
class Semisync(Async):
    name = "semisync"
    semisync_default = True


@register
class Galera(Topology):
    name = "galera"
    SETTINGS = {
        **Topology.SETTINGS,
        "fc_limit": (_int(1, 2_147_483_647), "gcs.fc_limit: receive queue length that triggers flow control"),
        "fc_factor": (_float(0.0, 1.0), "gcs.fc_factor: fraction of fc_limit at which flow control is released"),
        "applier_threads": (_int(1, 512), "wsrep_slave_threads: parallel appliers per node"),
    }

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
            with self.lab.connect(node) as conn:
                self._poll(max(0.5, deadline - time.monotonic()), lambda: self._synced(conn, len(self.nodes)),
                           f"{node.name} Synced in a primary cluster of {len(self.nodes)}")

    def after_group(self, group, timeout):
        self.wait_ready(timeout)  # a joiner is Synced before the next one asks for IST

    def restart_order(self, dead):
        alive = [n for n in self.nodes if n not in dead]
        if alive:
            return [[n] for n in dead]  # joiners one at a time (IST from a donor)
        return [dead]  # whole cluster down: all together, primary view recovered from gvwstate.dat

    def node_status(self, node, conn):
        st = sql.global_status(conn, "wsrep_")
        return {
            "wsrep_state": st.get("wsrep_local_state_comment", "?"),
            "cluster_status": st.get("wsrep_cluster_status", "?"),
            "cluster_size": int(st.get("wsrep_cluster_size", 0) or 0),
            "ready": st.get("wsrep_ready", "OFF"),
            "last_committed": int(st.get("wsrep_last_committed", -1) or -1),
        }

    def apply_setting(self, key, value, nodes):
        if key in {"fc_limit", "fc_factor"}:
            opt = {"fc_limit": "gcs.fc_limit", "fc_factor": "gcs.fc_factor"}[key]
            for node in nodes:
                with self.lab.connect(node) as conn:
                    sql.execute(conn, f"SET GLOBAL wsrep_provider_options = '{opt}={value}'")
                    got = provider_option(sql.scalar(conn, "SELECT @@GLOBAL.wsrep_provider_options"), opt)
                    if got is None or galera_number(got) != float(value):
                        raise SettingError(f"{node.name}: {opt} is {got!r} after setting {value!r}")
        elif key == "applier_threads":
            self._set_global(nodes, "wsrep_slave_threads", value)
        else:
            super().apply_setting(key, value, nodes)


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


def galera_number(text: str) -> float:
    """A number as wsrep_provider_options shows it: 4096 reads back as "4K" (binary multiples)."""
    t = text.strip()
    power = "KMGT".find(t[-1:].upper()) + 1 if t and t[-1:].isalpha() else 0
    return float(t[:-1] if power else t) * 1024**power


def provider_option(options: str, name: str) -> str | None:
    """Value of one option in a ``wsrep_provider_options`` string."""
    for part in (options or "").split(";"):
        k, _, v = part.partition("=")
        if k.strip() == name:
            return v.strip()
    return None
