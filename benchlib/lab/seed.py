"""Prepared datadirs: the fast and safe way to give every node the same starting state.

1. A *template* per MariaDB version, made once by ``mariadb-install-db`` and cached
   under ``<lab root>/.cache`` (0.4-1.4 s saved per node).
2. A *seed* per cluster of a lab: a copy of the template started once (socket
   only) to replace install-db's passwordless accounts with the lab's accounts,
   then shut down cleanly. A Galera seed is started as a one-node cluster, so its
   ``grastate.dat`` and InnoDB hold the same history UUID and seqno.
3. Every node of the cluster starts from a copy of its seed. Galera nodes start
   together from identical states with a ``gvwstate.dat`` naming all of them (the
   primary-component recovery Galera itself uses after a full-cluster restart), so
   the cluster forms with no state transfer at all: no rsync SST/IST script, no
   joiner waiting in a non-primary view.

MySQL is faster still: its template is made by ``mysqld --initialize-insecure`` and then,
socket only and with the binary log off, given the lab accounts with passwords nobody knows
(the empty root password is gone before any server of it listens on TCP) and the Group
Replication stats component; it is cached per server. Every node starts from a copy of it
with ``--init-file``: SQL that sets the lab's passwords before the server serves any
connection (``mysql_init_file``; the file is mode 600 and removed once the node is up). No
per-lab seed server runs at all. ``auto.cnf`` is removed so every node makes its own UUID.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import subprocess
import time
import uuid
from pathlib import Path

from benchlib.errors import MissingDependencyError, NodeStartError
from benchlib.lab import procs, sql
from benchlib.lab.layout import ACCOUNT_HOSTS, NodePlan
from benchlib.lab.mycnf import mysql_paths, mysql_seed_options, option_file, seed_options
from benchlib.lab.node import chown_tree, log_tail
from benchlib.lab.secrets import ACCOUNTS, Credentials
from benchlib.lab.state import locked
from benchlib.servers import Server
from benchlib.systems.values import sql_literal

TEMPLATE_FORMAT = "1"
GR_FLOW_CONTROL_STATS = "component_group_replication_flow_control_stats"


def server_version() -> str:
    try:
        out = subprocess.run(["mariadbd", "--version"], capture_output=True, text=True, check=True).stdout
    except FileNotFoundError:
        raise MissingDependencyError(
            "mariadbd not found", hint="run ./scripts/demo as root, or: apt-get install -y mariadb-server galera-4"
        ) from None
    return out.strip()


def template(root: Path, run_as: str | None, server: Server | None = None) -> Path:
    """Datadir made by mariadb-install-db (or MySQL's ``--initialize-insecure``) for this server version
    (cached under ``root/.cache``, made once, by one process at a time)."""
    mysql = server is not None and server.flavor == "mysql"
    version = f"{server.version_text}|{server.mysqld}" if mysql else server_version()
    key = hashlib.sha256(f"{TEMPLATE_FORMAT}|{version}|{run_as}".encode()).hexdigest()[:12]
    cache = root / ".cache"
    final = cache / f"template-{'mysql-' if mysql else ''}{key}"
    done = final / "data" / ("mysql.ibd" if mysql else "mysql")  # the last thing each initialisation writes
    if done.exists():
        return final / "data"
    cache.mkdir(parents=True, exist_ok=True)
    with locked(cache / ".lock"):
        if done.exists():
            return final / "data"
        work = final.with_name(f"{final.name}.tmp{os.getpid()}")
        shutil.rmtree(work, ignore_errors=True)
        (work / "tmp").mkdir(parents=True)
        os.chmod(root, 0o755)
        os.chmod(cache, 0o755)
        (_initialize_mysql if mysql else _install_db)(work, run_as, server)
        os.replace(work, final)
    return final / "data"


def _install_db(work: Path, run_as: str | None, server: None) -> None:
    cnf = work / "my.cnf"
    cnf.write_text(f"[mariadbd]\ndatadir = {work / 'data'}\ntmpdir = {work / 'tmp'}\n")
    chown_tree(work, run_as)
    cmd = ["mariadb-install-db", f"--defaults-file={cnf}", "--auth-root-authentication-method=normal", "--skip-test-db"]
    if run_as:
        cmd.append(f"--user={run_as}")
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise NodeStartError(
            "mariadb-install-db failed while preparing the datadir template",
            detail="\n".join("    " + line for line in (res.stdout + res.stderr).splitlines()[-12:]),
        )


def _initialize_mysql(work: Path, run_as: str | None, server: Server) -> None:
    log = work / "initialize.log"
    cnf = work / "my.cnf"
    cnf.write_text(option_file("mysqld", {"datadir": work / "data", "tmpdir": work / "tmp", "log_error": log,
                                          "disable_log_bin": True, **mysql_paths(server, work / "tmp")}))
    chown_tree(work, run_as)
    cmd = server.argv(f"--defaults-file={cnf}", "--initialize-insecure", *([f"--user={run_as}"] if run_as else []))
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise NodeStartError(f"mysqld --initialize-insecure ({server.label}) failed while preparing the datadir "
                             "template", detail=log_tail(log) if log.exists() else res.stderr[-2000:])
    # the empty root password goes at once; every account gets a password nobody knows (a lab's node sets its
    # own at first start, from an init file: mysql_init_file)
    unknown = Credentials({user: secrets.token_urlsafe(24) for user in ACCOUNTS})
    _set_up_accounts(work / "seed", work / "data", unknown, run_as, None, server)
    shutil.rmtree(work / "seed")


def _account_statements(creds: Credentials, flavor: str = "mariadb") -> list[tuple[str, tuple]]:
    stmts: list[tuple[str, tuple]] = [("ALTER USER 'root'@'localhost' IDENTIFIED BY %s", (creds.password("root"),))]
    for host in ACCOUNT_HOSTS:
        if flavor == "mysql":
            stmts += [
                ("CREATE USER 'bench'@%s IDENTIFIED BY %s", (host, creds.password("bench"))),
                ("GRANT ALL PRIVILEGES ON `sbtest`.* TO 'bench'@%s", (host,)),
                ("GRANT ALL PRIVILEGES ON `benchlib`.* TO 'bench'@%s", (host,)),
                ("GRANT PROCESS, REPLICATION CLIENT ON *.* TO 'bench'@%s", (host,)),
                ("GRANT SELECT ON `performance_schema`.* TO 'bench'@%s", (host,)),
                ("CREATE USER 'repl'@%s IDENTIFIED BY %s", (host, creds.password("repl"))),
                # async and Group Replication recovery; clone for a member too far behind; the MYSQL stack
                ("GRANT REPLICATION SLAVE, BACKUP_ADMIN, CLONE_ADMIN, GROUP_REPLICATION_STREAM, CONNECTION_ADMIN "
                 "ON *.* TO 'repl'@%s", (host,)),
            ]
            continue
        stmts += [
            ("CREATE USER 'bench'@%s IDENTIFIED BY %s", (host, creds.password("bench"))),
            ("GRANT ALL PRIVILEGES ON `sbtest`.* TO 'bench'@%s", (host,)),
            ("GRANT ALL PRIVILEGES ON `benchlib`.* TO 'bench'@%s", (host,)),
            ("GRANT PROCESS, REPLICATION CLIENT, SLAVE MONITOR, BINLOG MONITOR ON *.* TO 'bench'@%s", (host,)),
            ("CREATE USER 'repl'@%s IDENTIFIED BY %s", (host, creds.password("repl"))),
            ("GRANT REPLICATION SLAVE ON *.* TO 'repl'@%s", (host,)),
        ]
    return stmts


def make_seed(template_data: Path, dest: Path, creds: Credentials, run_as: str | None,
              galera_port: int | None) -> Path:
    """Prepare ``dest/data``: the MariaDB template with the lab's accounts (and a Galera state if asked)."""
    dest.mkdir(parents=True)
    data = dest / "data"
    subprocess.run(["cp", "-a", "--sparse=always", str(template_data), str(data)], check=True)
    return _set_up_accounts(dest, data, creds, run_as, galera_port, None)


def mysql_init_file(creds: Credentials) -> str:
    """SQL a MySQL node runs at its first start, before it serves any connection: the lab's passwords on the
    seed's accounts (binary log off: no GTID of its own)."""
    lines = ["SET SESSION sql_log_bin = 0;",
             f"ALTER USER 'root'@'localhost' IDENTIFIED BY {sql_literal(creds.password('root'))};"]
    for host in ACCOUNT_HOSTS:
        for user in ("bench", "repl"):
            lines.append(f"ALTER USER '{user}'@{sql_literal(host)} IDENTIFIED BY {sql_literal(creds.password(user))};")
    return "\n".join(lines) + "\n"


def _set_up_accounts(dest: Path, data: Path, creds: Credentials, run_as: str | None, galera_port: int | None,
                     server: Server | None) -> Path:
    """Start the server on ``data`` (socket only), give it exactly the lab's accounts, shut it down cleanly."""
    (dest / "tmp").mkdir(parents=True, exist_ok=True)
    cnf = dest / "my.cnf"
    socket = dest / "s.sock"
    log = dest / "error.log"
    mysql = server is not None and server.flavor == "mysql"
    if mysql:
        cnf.write_text(mysql_seed_options(server, data, socket, dest / "pid", log, dest / "tmp"))
    else:
        cnf.write_text(seed_options(data, socket, dest / "pid", log, dest / "tmp", galera_port))
    chown_tree(dest, run_as)
    marker = f"--defaults-file={cnf}"
    args = [marker] + ([f"--user={run_as}"] if run_as else []) + (["--wsrep-new-cluster"] if galera_port else [])
    cmd = server.argv(*args) if mysql else ["mariadbd", *args]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        conn = _wait_seed(proc.pid, marker, socket, log, galera=galera_port is not None)
        with conn.cursor() as cur:
            # keep root@localhost and the servers' own locked system accounts (mariadb.sys, mysql.session, ...)
            cur.execute("SELECT User, Host FROM mysql.user WHERE NOT (User='root' AND Host='localhost') "
                        "AND User <> 'mariadb.sys' AND User NOT LIKE 'mysql.%'")
            for row in cur.fetchall():
                cur.execute("DROP USER %s@%s", (row["User"], row["Host"]))
            for stmt, params in _account_statements(creds, "mysql" if mysql else "mariadb"):
                cur.execute(stmt, params)
            if mysql and server.has_plugin(GR_FLOW_CONTROL_STATS):
                # Group Replication's throttling counters (Gr_flow_control_throttle_*): installed here, once,
                # because a group's secondaries are read-only
                cur.execute(f"INSTALL COMPONENT 'file://{GR_FLOW_CONTROL_STATS}'")
            cur.execute("SHUTDOWN")
        conn.close()
        if procs.wait_gone([proc.pid], 60):
            raise NodeStartError("the seed server did not shut down within 60 s", detail=log_tail(log))
    finally:
        procs.stop([(proc.pid, marker)], graceful=False)
        proc.wait()
    for leftover in ("galera.cache", "gvwstate.dat", "auto.cnf"):  # auto.cnf: every node makes its own UUID
        (data / leftover).unlink(missing_ok=True)
    return data


def _wait_seed(pid: int, marker: str, socket: Path, log: Path, *, galera: bool):
    """Connect to the seed server once it serves queries (a Galera seed: once wsrep_ready is ON;
    its socket accepts connections earlier, when queries still fail with error 1047)."""
    import pymysql

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if not procs.is_running(pid):
            raise NodeStartError("the seed server exited while starting", detail=f"  {log}:\n{log_tail(log)}")
        if socket.exists():
            try:
                # a fresh datadir's root has no password yet (socket only, no TCP listener): none is sent
                conn = pymysql.connect(unix_socket=str(socket), user="root", autocommit=True,
                                       cursorclass=pymysql.cursors.DictCursor, connect_timeout=2)
            except pymysql.err.OperationalError:
                conn = None
            if conn is not None:
                if not galera or sql.global_status(conn, "wsrep_ready").get("wsrep_ready") == "ON":
                    return conn
                conn.close()
        time.sleep(0.02)
    raise NodeStartError("the seed server did not start within 60 s", detail=f"  {log}:\n{log_tail(log)}")


def write_gvwstate(nodes: list[NodePlan]) -> None:
    """Give every Galera node the same saved primary view so they form a cluster together."""
    ids = [str(uuid.uuid1()) for _ in nodes]
    view = f"view_id: 3 {ids[0]} 1\nbootstrap: 0\n" + "".join(f"member: {i} 0\n" for i in ids)
    for node, my in zip(nodes, ids):
        path = node.datadir / "gvwstate.dat"
        path.write_text(f"my_uuid: {my}\n#vwbeg\n{view}#vwend\n")
        st = node.datadir.stat()
        os.chown(path, st.st_uid, st.st_gid)
