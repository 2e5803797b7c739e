"""Prepared datadirs: the fast and safe way to give every node the same starting state.

1. A *template* per server, made once by its flavour (``mariadb-install-db``) and cached
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

A flavour with ``passwords_at_first_start`` (MySQL) is faster still: its template is made by
``mysqld --initialize-insecure`` and then, socket only and with the binary log off, given the lab
accounts with passwords nobody knows (the empty root password is gone before any server of it
listens on TCP) and the flavour's ``seed_statements`` (Group Replication's stats component); it is
cached per server. Every node starts from a copy of it with ``--init-file``: SQL that sets the
lab's passwords before the server serves any connection (``init_file``; the file is mode 600 and
removed once the node is up). No per-lab seed server runs at all. ``auto.cnf`` is removed so
every node makes its own UUID.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

from benchlib.errors import NodeStartError
from benchlib.lab import procs, sql
from benchlib.lab.flavors import Flavor
from benchlib.lab.layout import ACCOUNT_HOSTS, NodePlan
from benchlib.lab.mycnf import option_file
from benchlib.lab.node import chown_tree, log_tail
from benchlib.lab.secrets import Credentials
from benchlib.lab.state import locked
from benchlib.servers import Server
from benchlib.systems.values import sql_literal

__all__ = ["init_file", "make_seed", "set_up_accounts", "template", "write_gvwstate"]

TEMPLATE_FORMAT = "2"


def template(flavor: Flavor, server: Server, root: Path, run_as: str | None) -> Path:
    """A datadir initialised by ``flavor`` for ``server`` (cached under ``root/.cache``, made once, by one process
    at a time)."""
    key = hashlib.sha256(f"{TEMPLATE_FORMAT}|{flavor.name}|{server.version_text}|{server.mysqld}|{run_as}"
                         .encode()).hexdigest()[:12]
    cache = root / ".cache"
    final = cache / f"template-{flavor.name}-{key}"
    done = final / "data" / flavor.template_done  # the last thing initialisation writes
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
        flavor.initialize(work, run_as, server)
        os.replace(work, final)
    return final / "data"


def make_seed(flavor: Flavor, server: Server, template_data: Path, dest: Path, creds: Credentials,
              run_as: str | None, galera_port: int | None) -> Path:
    """Prepare ``dest/data``: the template with the lab's accounts (and a Galera state if asked)."""
    dest.mkdir(parents=True)
    data = dest / "data"
    subprocess.run(["cp", "-a", "--sparse=always", str(template_data), str(data)], check=True)
    return set_up_accounts(flavor, server, dest, data, creds, run_as, galera_port)


def init_file(creds: Credentials) -> str:
    """SQL a node runs at its first start, before it serves any connection: the lab's passwords on the
    template's accounts (binary log off: no GTID of its own)."""
    lines = ["SET SESSION sql_log_bin = 0;",
             f"ALTER USER 'root'@'localhost' IDENTIFIED BY {sql_literal(creds.password('root'))};"]
    for host in ACCOUNT_HOSTS:
        for user in ("bench", "repl"):
            lines.append(f"ALTER USER '{user}'@{sql_literal(host)} IDENTIFIED BY {sql_literal(creds.password(user))};")
    return "\n".join(lines) + "\n"


def set_up_accounts(flavor: Flavor, server: Server, dest: Path, data: Path, creds: Credentials,
                    run_as: str | None, galera_port: int | None = None) -> Path:
    """Start the server on ``data`` (socket only), give it exactly the lab's accounts, shut it down cleanly."""
    (dest / "tmp").mkdir(parents=True, exist_ok=True)
    cnf = dest / "my.cnf"
    socket = dest / "s.sock"
    log = dest / "error.log"
    cnf.write_text(option_file(flavor.section, flavor.seed_options(server, data, socket, dest / "pid", log,
                                                                   dest / "tmp", galera_port)))
    chown_tree(dest, run_as)
    marker = f"--defaults-file={cnf}"
    cmd = server.argv(marker, *([f"--user={run_as}"] if run_as else []),
                      *(["--wsrep-new-cluster"] if galera_port else []))
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
            for stmt, params in flavor.accounts(creds):
                cur.execute(stmt, params)
            for stmt in flavor.seed_statements(server):
                cur.execute(stmt)
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
