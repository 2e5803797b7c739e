"""The MariaDB flavour: ``mariadbd`` with ``[mariadbd]`` options, ``mariadb-install-db`` templates, a seed per lab.

Single servers, asynchronous and semi-synchronous replication (GTID, ``slave_parallel_*`` apply) and Galera
clusters (system ``galera``: wsrep options, the provider's options, rsync SST).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from benchlib.errors import NodeStartError
from benchlib.lab.flavors import Flavor, Options, register
from benchlib.lab.layout import ACCOUNT_HOSTS, Layout, NodePlan
from benchlib.lab.mycnf import GALERA_PROVIDER, common_options, fmt, galera_provider_options, option_file
from benchlib.lab.node import chown_tree
from benchlib.lab.secrets import account_statements
from benchlib.lab.spec import AsyncCluster, GaleraCluster, SemisyncCluster, SingleCluster, parse_size
from benchlib.servers import Server
from benchlib.systems import replication, semisync

__all__ = ["MARIADB"]


def options(layout: Layout, node: NodePlan, server: Server) -> Options:
    spec = layout.spec
    cluster = spec.clusters[node.cluster]
    s = spec.settings_for(node.cluster)
    o: Options = {**common_options(node, s), "innodb_log_file_size": parse_size(s.redo_log)}
    if isinstance(cluster, SingleCluster):
        if cluster.binlog:
            o.update(log_bin="binlog", gtid_strict_mode=True)
    elif isinstance(cluster, AsyncCluster):
        o.update(log_bin="binlog", log_slave_updates=True, gtid_strict_mode=True, relay_log="relay-bin",
                 relay_log_recovery=True, slave_net_timeout=10)
        if node.role == "replica":
            threads, mode = cluster.replica_parallel(node.index - 1)
            o.update(read_only=True, slave_parallel_threads=threads, slave_parallel_mode=mode)
        if isinstance(cluster, SemisyncCluster):
            # The master side is switched on at runtime once replicas are attached:
            # switched on in the file, the first write would block for the whole timeout.
            o.update(rpl_semi_sync_master_wait_point=cluster.wait_point,
                     rpl_semi_sync_master_timeout=cluster.timeout_ms)
            if node.role == "replica":
                o.update(rpl_semi_sync_slave_enabled=True)
    elif isinstance(cluster, GaleraCluster):
        members = ",".join(f"{n.listen_host}:{n.galera_port}" for n in layout.cluster_nodes(node.cluster))
        provider = ";".join(f"{k}={fmt(v)}" for k, v in galera_provider_options(layout, node).items())
        o.update(
            wsrep_on=True, wsrep_provider=GALERA_PROVIDER, wsrep_cluster_name=f"{spec.name}-{node.cluster}",
            wsrep_cluster_address=f"gcomm://{members}", wsrep_node_name=node.name,
            wsrep_node_address=f"{node.listen_host}:{node.galera_port}",
            wsrep_node_incoming_address=f"{node.listen_host}:{node.port}",
            wsrep_provider_options=f'"{provider}"', wsrep_sst_method="rsync",
            wsrep_sst_receive_address=f"{node.listen_host}:{node.sst_port}",
            wsrep_slave_threads=cluster.applier_threads, innodb_autoinc_lock_mode=2,
        )
        if cluster.binlog:
            o.update(log_bin="binlog", log_slave_updates=True)
    o.update(s.server)  # the spec's raw options win
    return o


def seed_options(server: Server, datadir, socket, pid_file, log_error, tmpdir,
                 galera_port: int | None = None) -> Options:
    """Options of the short-lived server that prepares a lab's seed datadir (socket only; a Galera seed is a
    one-node cluster, so its grastate.dat and InnoDB share one history)."""
    o: Options = {"datadir": datadir, "tmpdir": tmpdir, "socket": socket, "pid_file": pid_file,
                         "log_error": log_error, "skip_networking": True, "innodb_buffer_pool_size": 32 << 20,
                         "performance_schema": False, "binlog_format": "ROW"}
    if galera_port is not None:
        o.update(wsrep_on=True, wsrep_provider=GALERA_PROVIDER, wsrep_cluster_address="gcomm://",
                 wsrep_provider_options=f'"gmcast.listen_addr=tcp://127.0.0.1:{galera_port};gcache.size=1M"',
                 innodb_autoinc_lock_mode=2)
    return o


def install_db(work: Path, run_as: str | None, server: Server) -> None:
    """``mariadb-install-db`` into ``work/data`` (the one next to the server, else the system's)."""
    cnf = work / "my.cnf"
    cnf.write_text(option_file("mariadbd", {"datadir": work / "data", "tmpdir": work / "tmp"}))
    chown_tree(work, run_as)
    cmd = [server.program("mariadb-install-db"), f"--defaults-file={cnf}", "--auth-root-authentication-method=normal",
           "--skip-test-db", *([f"--user={run_as}"] if run_as else [])]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise NodeStartError("mariadb-install-db failed while preparing the datadir template",
                             detail="\n".join("    " + line for line in (res.stdout + res.stderr).splitlines()[-12:]))


def host_initialize(server: Server, node: NodePlan) -> list[str]:
    """A node's datadir on a provisioned host: root@localhost without a password, reachable over the socket only
    until the node's first start sets it (its init file)."""
    return ["mariadb-install-db", "--no-defaults", f"--datadir={node.datadir}", f"--tmpdir={node.tmpdir}", "--user=mysql",
            "--auth-root-authentication-method=normal", "--skip-test-db"]


def accounts(creds, hosts: tuple[str, ...] = ACCOUNT_HOSTS) -> list[tuple[str, tuple]]:
    """root with its password; ``bench`` (the load and the probes) and ``repl`` (replication) per lab address
    (``hosts``)."""
    return account_statements(creds, hosts, "PROCESS, REPLICATION CLIENT, SLAVE MONITOR, BINLOG MONITOR",
                              "REPLICATION SLAVE")


MARIADB = register(Flavor(
    name="mariadb", title="MariaDB", server="mariadb",
    systems={"single": "mariadb", "async": "mariadb", "semisync": "mariadb", "galera": "galera"},
    section="mariadbd", client="mariadb", options=options, seed_options=seed_options, initialize=install_db,
    template_done="mysql", accounts=accounts, replication=replication.MARIADB, semisync=semisync.MARIADB,
    tools={"mariadb-install-db": "mariadb-server"}, replica_triggers=True, parallel_threads_max=16383,
    refuses={"preserve_commit_order": (True, "preserve_commit_order is MySQL's; MariaDB keeps commit order in every "
                                             "parallel_mode"),
             "replica_count": (1, "replica_count is MySQL's (MariaDB 10.11 waits for one replica's ack)")},
    why_not={"group_replication": "Group Replication is MySQL's"},
    host_program="/usr/sbin/mariadbd", host_initialize=host_initialize,
))
