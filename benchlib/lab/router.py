"""MySQL Router in front of a Group Replication cluster, as InnoDB Cluster deploys it, with metadata benchlib writes.

Router learns a group from the InnoDB Cluster metadata schema (``mysql_innodb_cluster_metadata``), which MySQL
Shell writes and which is not available here. The schema is plain SQL, so benchlib writes it itself (written for
benchlib, not copied from MySQL Shell): the objects Router 8.x/9.x reads at metadata version 2.0.0 (the cluster
row with the group's name, one instance row per member keyed by the member's own ``server_uuid`` with its classic
endpoint, the views ``v2_*`` and ``schema_version``, and the ``routers`` table Router registers itself in), on
the group's primary, so the group replicates them to every member. Router's own ``--bootstrap`` then runs as
it does against an InnoDB Cluster: it creates its account (``router`` in the lab's password file; bootstrap reads
the passwords on its standard input, never on a command line), registers itself, writes its configuration and
keyring (mode 600) into ``<lab>/router-<cluster>/``. Its verification of that account over the unix socket
fails harmlessly (it passes the socket path as a database name); Router itself connects over TCP.

The running Router, per its configuration:
- read-write port: the group's PRIMARY (``first-available``);
- read-only port: the SECONDARY members (``round-robin-with-fallback``);
- read-write split port: reads to secondaries, writes and transactions to the primary (``access_mode=auto``).
It learns who is primary by asking a member every ``ttl`` (0.5 s, bootstrap's default; no GR notifications here:
they need the X protocol, which the lab's servers do not open). A failover through Router takes Group
Replication's own detection and election, then up to one TTL until Router routes to the new primary.

Its ports are node 1's spare ports (node ports + 5, + 6, + 9; the X protocol's + 7 and + 8 are not used), on
127.0.0.1. It is started in a session of its own (it outlives ``benchlib lab up``); ``lab down`` kills it with
the lab's other processes (its command line names the lab's directory).
"""

from __future__ import annotations

import configparser
import getpass
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import pymysql

from benchlib.errors import LabError
from benchlib.lab import sql
from benchlib.servers.router import RouterProgram

__all__ = ["ACCOUNT", "METADATA_VERSION", "Member", "RouterFront", "RouterLease", "ensure", "front_of",
           "metadata_statements"]

SCHEMA = "mysql_innodb_cluster_metadata"
METADATA_VERSION = (2, 0, 0)  # Router 8.x/9.x accept any 2.x; 2.0 spares it the ClusterSet and router-options queries
ACCOUNT = "router"  # the lab's password file's name for it; the server account is benchlib_router
SERVER_ACCOUNT = "benchlib_router"
#: node 1's port + these: Router's read-write, read-only and read-write split ports (bootstrap's base port + 0, 1, 4)
PORT_OFFSET = 5
RW, RO, SPLIT = 0, 1, 4
TTL_S = 0.5  # Router's metadata refresh (bootstrap's default)


@dataclass(frozen=True)
class Member:
    """A group member as the metadata names it."""

    name: str
    host: str
    port: int
    server_uuid: str
    server_id: int
    local_address: str  # group_replication_local_address

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.port}"


def metadata_statements(cluster: str, group_name: str, members: Sequence[Member], *,
                        multi_primary: bool = False) -> list[tuple[str, tuple]]:
    """The statements that (re)create the metadata of one group: schema, tables, views, one cluster row (its id the
    group's name) and one instance row per member."""
    s = SCHEMA
    ddl = [
        f"DROP DATABASE IF EXISTS {s}",
        f"CREATE DATABASE {s}",
        f"CREATE TABLE {s}.clusters (cluster_id CHAR(36) CHARACTER SET ascii NOT NULL PRIMARY KEY, "
        "cluster_name VARCHAR(63) NOT NULL UNIQUE, description TEXT, options JSON, attributes JSON, "
        "cluster_type ENUM('gr', 'ar') NOT NULL, primary_mode ENUM('pm', 'mm') NOT NULL DEFAULT 'pm', "
        "router_options JSON, clusterset_id VARCHAR(36) CHARACTER SET ascii NULL)",
        f"CREATE TABLE {s}.instances (instance_id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, "
        "cluster_id CHAR(36) CHARACTER SET ascii NOT NULL, address VARCHAR(265) CHARACTER SET ascii, "
        "mysql_server_uuid CHAR(36) CHARACTER SET ascii NOT NULL UNIQUE, instance_name VARCHAR(265) NOT NULL, "
        "addresses JSON NOT NULL, attributes JSON, description TEXT)",
        f"CREATE TABLE {s}.routers (router_id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, "
        "router_name VARCHAR(265) NOT NULL, product_name VARCHAR(128) NOT NULL, address VARCHAR(256) CHARACTER SET "
        "ascii, version VARCHAR(12), last_check_in TIMESTAMP NULL, attributes JSON, cluster_id CHAR(36) CHARACTER "
        "SET ascii NULL, options JSON, UNIQUE KEY (address, router_name))",
        f"CREATE SQL SECURITY INVOKER VIEW {s}.schema_version (major, minor, patch) AS SELECT "
        + ", ".join(str(v) for v in METADATA_VERSION),
        f"CREATE SQL SECURITY INVOKER VIEW {s}.v2_clusters AS SELECT cluster_type, primary_mode, cluster_id, "
        f"cluster_name, router_options FROM {s}.clusters",
        f"CREATE SQL SECURITY INVOKER VIEW {s}.v2_gr_clusters AS SELECT cluster_type, primary_mode, cluster_id, "
        "cluster_name, attributes->>'$.group_replication_group_name' AS group_name, attributes, options, "
        f"router_options, description, clusterset_id FROM {s}.clusters WHERE cluster_type = 'gr'",
        f"CREATE SQL SECURITY INVOKER VIEW {s}.v2_instances AS SELECT instance_id, cluster_id, instance_name AS "
        "label, mysql_server_uuid, address, addresses->>'$.mysqlClassic' AS endpoint, addresses->>'$.mysqlX' AS "
        f"xendpoint, attributes FROM {s}.instances",
        # a view may not read @@server_uuid: the member's own uuid from performance_schema
        f"CREATE SQL SECURITY INVOKER VIEW {s}.v2_this_instance AS SELECT i.cluster_id, i.instance_id, "
        f"c.cluster_name, c.cluster_type FROM {s}.v2_instances i JOIN {s}.clusters c ON i.cluster_id = c.cluster_id "
        "WHERE i.mysql_server_uuid = (SELECT variable_value FROM performance_schema.global_variables "
        "WHERE variable_name = 'server_uuid')",
        f"CREATE SQL SECURITY INVOKER VIEW {s}.v2_routers AS SELECT router_id, cluster_id, router_name, "
        f"product_name, address, version, last_check_in, attributes, options FROM {s}.routers",
    ]
    out: list[tuple[str, tuple]] = [(stmt, ()) for stmt in ddl]
    out.append((f"INSERT INTO {s}.clusters (cluster_id, cluster_name, description, cluster_type, primary_mode, "
                "attributes) VALUES (%s, %s, 'written by benchlib, not by MySQL Shell', 'gr', %s, "
                "JSON_OBJECT('adopted', 0, 'group_replication_group_name', %s))",
                (group_name, cluster, "mm" if multi_primary else "pm", group_name)))
    for m in members:
        out.append((f"INSERT INTO {s}.instances (cluster_id, address, mysql_server_uuid, instance_name, addresses, "
                    "attributes) VALUES (%s, %s, %s, %s, JSON_OBJECT('mysqlClassic', %s, 'grLocal', %s), "
                    "JSON_OBJECT('server_id', %s))",
                    (group_name, m.endpoint, m.server_uuid, m.endpoint, m.endpoint, m.local_address, m.server_id)))
    return out


class RouterFront:
    """One MySQL Router in front of one group (see the module docstring)."""

    def __init__(self, directory: Path, cluster: str, program: RouterProgram, base_port: int,
                 connect_as: Callable[..., Any]):
        """``connect_as(port, timeout)``: a connection to ``127.0.0.1:port`` with the load's account."""
        self.dir, self.cluster, self.program = directory, cluster, program
        self.host, self.base_port, self._connect_as = "127.0.0.1", base_port, connect_as

    # -- where it is ------------------------------------------------------------------------------------------------
    @property
    def conf(self) -> Path:
        return self.dir / "mysqlrouter.conf"

    @property
    def pid_file(self) -> Path:
        return self.dir / "router.pid"

    @property
    def log(self) -> Path:
        return self.dir / "log" / "mysqlrouter.log"

    @property
    def ports(self) -> dict[str, int]:
        """Its ports as its configuration says (``rw``, ``ro``, ``split``)."""
        cfg = configparser.ConfigParser(strict=False, interpolation=None)
        cfg.read(self.conf)
        names = {"routing:bootstrap_rw": "rw", "routing:bootstrap_ro": "ro", "routing:bootstrap_rw_split": "split"}
        return {names[s]: int(cfg[s]["bind_port"]) for s in names if s in cfg}

    @property
    def port(self) -> int:
        return self.ports["rw"]

    def pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return None
        return pid if str(self.conf).encode() in cmdline else None

    def running(self) -> bool:
        return self.pid() is not None

    def connect(self, timeout: float = 1.0, port: str = "rw"):
        """A connection through Router's ``port`` (rw, ro, split) with the load's account."""
        return self._connect_as(self.ports[port], timeout)

    # -- setting it up ----------------------------------------------------------------------------------------------
    def register(self, conn: Any, group_name: str, members: Sequence[Member], *, multi_primary: bool = False) -> None:
        """(Re)write the group's metadata on ``conn`` (the primary's root connection)."""
        for stmt, args in metadata_statements(self.cluster, group_name, members, multi_primary=multi_primary):
            with conn.cursor() as cur:
                cur.execute(stmt, args or None)

    def registered(self, conn: Any) -> set[str]:
        """The members' uuids the metadata lists (empty: none written)."""
        try:
            return {r["mysql_server_uuid"] for r in sql.query(conn, f"SELECT mysql_server_uuid FROM {SCHEMA}.instances")}
        except pymysql.err.MySQLError:
            return set()

    def bootstrap(self, socket: Path, root_password: str, router_password: str, account_hosts: Sequence[str]) -> None:
        """Router's ``--bootstrap`` through ``socket`` as root: its account, its registration, its configuration."""
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o700)
        argv = self.program.argv(
            "--bootstrap", "root@localhost", f"--bootstrap-socket={socket}", "--directory", str(self.dir),
            "--force", "--name", f"benchlib-{self.cluster}", "--user", getpass.getuser(),
            "--conf-bind-address", self.host, "--conf-base-port", str(self.base_port), "--report-host", self.host,
            "--account", SERVER_ACCOUNT, "--account-create", "if-not-exists",
            *(a for h in account_hosts for a in ("--account-host", h)),
            "--disable-rest", "--conf-skip-x-protocol", "--connect-timeout", "5")
        if self.program.plugin_folder is not None:
            argv.append(f"--conf-set-option=DEFAULT.plugin_folder={self.program.plugin_folder}")
        res = subprocess.run(argv, input=f"{root_password}\n{router_password}\n", capture_output=True, text=True,
                             timeout=120)
        out = res.stdout + res.stderr
        if res.returncode != 0 or not self.conf.exists():
            tail = "\n".join("    " + line for line in out.strip().splitlines()[-8:])
            raise LabError(f"{self.cluster}: MySQL Router's bootstrap failed (exit {res.returncode})",
                           hint=f"its output is kept in {self.dir / 'bootstrap.log'}", detail=tail)
        fd = os.open(self.dir / "bootstrap.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(out)

    def start(self, timeout: float = 30.0, expect: Callable[[], str | None] | None = None) -> "RouterFront":
        """Start Router unless it runs; return once its read-write port routes to the node ``expect()`` names (the
        primary's ``server_uuid``; None: any node)."""
        if not self.running():
            self.pid_file.unlink(missing_ok=True)
            log = open(self.dir / "stdout.log", "ab")
            subprocess.Popen(self.program.argv("-c", str(self.conf), "--pid-file", str(self.pid_file)),
                             stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
            log.close()
        self.wait_routing(timeout, expect)
        return self

    def wait_routing(self, timeout: float, expect: Callable[[], str | None] | None = None) -> str:
        """Until a connection through the read-write port lands on the node whose uuid ``expect()`` gives; returns
        the uuid it landed on."""
        deadline, last = time.monotonic() + timeout, "no answer"
        while time.monotonic() < deadline:
            try:
                with self.connect(1.0) as conn:
                    uuid = sql.scalar(conn, "SELECT @@server_uuid")
                want = expect() if expect else None
                if want is None or uuid == want:
                    return uuid
                last = f"its read-write port reached {uuid}, not the primary {want}"
            except pymysql.err.MySQLError as exc:
                last = str(exc.args[-1] if exc.args else exc)
            time.sleep(0.1)
        raise LabError(f"{self.cluster}: MySQL Router did not route writes to the primary within {timeout:.0f} s "
                       f"({last})", hint=f"see {self.log}")

    def stop(self) -> None:
        pid = self.pid()
        if pid is not None:
            os.kill(pid, 9)
            for _ in range(100):  # gone, or a zombie of this process (no command line)
                if self.pid() is None:
                    break
                time.sleep(0.05)


class RouterLease:
    """A fault run's use of the lab's Router (``ProxyControl.front``): its read-write port; stopping the lease leaves
    Router running with the lab."""

    def __init__(self, front: RouterFront):
        self.front, self.host, self.port = front, front.host, front.port
        self.ttl_s = TTL_S

    def connect(self, timeout: float = 1.0, port: str = "rw"):
        return self.front.connect(timeout, port=port)

    def stop(self) -> None:
        pass


# -- a group's Router, as its topology (benchlib.lab.group_replication) keeps it ---------------------------------------
def front_of(topo: Any) -> RouterFront | None:
    """The Router in front of ``topo``'s group (None: its spec puts none there)."""
    if not getattr(topo.spec, "router", False):
        return None
    from benchlib.servers.router import find_router

    first = topo.nodes[0]
    password = topo.ctx.secret_of("bench")

    def connect_as(port: int, timeout: float):
        return pymysql.connect(host="127.0.0.1", port=port, user="bench", password=password, connect_timeout=timeout,
                               read_timeout=60, write_timeout=60, autocommit=True,
                               cursorclass=pymysql.cursors.DictCursor)

    return RouterFront(first.dir.parent / f"router-{topo.cluster}", topo.cluster, find_router(topo.ctx.server),
                       first.port + PORT_OFFSET, connect_as)


def primary_uuid(topo: Any) -> str | None:
    """The ``server_uuid`` of ``topo``'s primary (None: none, or several)."""
    with topo.connect(topo.nodes[0]) as conn:
        rows = [r for r in topo.members(conn) if r["MEMBER_ROLE"] == "PRIMARY"]
    return rows[0]["MEMBER_ID"] if len(rows) == 1 else None


def ensure(topo: Any, timeout: float) -> str | None:
    """For a group fronted by Router: metadata listing every member as it is now, Router bootstrapped and running,
    routing writes to the primary; returns what had to be done (None: nothing)."""
    front = front_of(topo)
    if front is None:
        return None
    done = []
    from benchlib.lab.layout import ACCOUNT_HOSTS

    members, group = [], ""
    for n in topo.nodes:
        with topo.connect(n) as conn:
            row = sql.query(conn, "SELECT @@server_uuid AS u, @@server_id AS i, "
                                  "@@group_replication_local_address AS a, @@group_replication_group_name AS g")[0]
        members.append(Member(n.name, n.listen_host, n.port, row["u"], int(row["i"]), row["a"]))
        group = row["g"]
    primary = topo.primary_name() or topo.nodes[0].name
    node = next(n for n in topo.nodes if n.name == primary)
    with topo.connect(node) as conn:
        if front.registered(conn) != {m.server_uuid for m in members}:
            front.register(conn, group, members, multi_primary=not topo.spec.single_primary)
            done.append("MySQL Router's metadata written")
    if not front.conf.exists():
        front.bootstrap(node.socket, topo.ctx.secret_of("root"), topo.ctx.secret_of(ACCOUNT), ACCOUNT_HOSTS)
        done.append("MySQL Router bootstrapped")
    if not front.running():
        done.append("MySQL Router started")
    front.start(timeout, expect=(lambda: primary_uuid(topo)) if topo.spec.single_primary else None)
    return ", ".join(done) or None


def status_lines(lab: Any) -> list[str]:
    """A line per group of a local lab fronted by Router: its ports and whether it runs (``benchlib lab status``)."""
    if not hasattr(lab, "topology"):
        return []
    out = []
    for cluster in lab.spec.clusters:
        front = front_of(lab.topology(cluster))
        if front is None:
            continue
        if not front.conf.exists():
            out.append(f"  {cluster}: MySQL Router not bootstrapped yet (benchlib lab heal)")
            continue
        p, pid = front.ports, front.pid()
        out.append(f"  {cluster}: {front.program.label} on {front.host}: read-write {p['rw']}, read-only {p['ro']}, "
                   f"read-write split {p['split']}; " + (f"pid {pid}" if pid else "NOT RUNNING (benchlib lab heal)"))
    return out
