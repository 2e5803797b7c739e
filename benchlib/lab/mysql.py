"""The MySQL flavour (8.0.30+ and 9.x): ``mysqld`` with ``[mysqld]`` options, templates made by
``--initialize-insecure``, nodes that set the lab's passwords at their first start.

Single servers, asynchronous and semi-synchronous replication (GTID auto-positioning, ``replica_*``,
``rpl_semi_sync_source_*``) and Group Replication (system ``group_replication``, its options as ``loose-``
options so the file also serves ``--initialize``). The server need not be installed where it was built to be:
its base, plugin and message directories are given (``paths``).
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
from pathlib import Path

from benchlib.errors import NodeStartError
from benchlib.lab.flavors import Flavor, Options, register
from benchlib.lab.layout import ACCOUNT_HOSTS, NET_PREFIX, Layout, NodePlan
from benchlib.lab.mycnf import common_options, group_name, option_file
from benchlib.lab.node import chown_tree, log_tail
from benchlib.lab.secrets import ACCOUNTS, Credentials, account_statements
from benchlib.lab.spec import AsyncCluster, GroupReplicationCluster, SemisyncCluster, SingleCluster, parse_size
from benchlib.servers import Server
from benchlib.systems import replication, semisync

__all__ = ["GR_FLOW_CONTROL_STATS", "MYSQL", "paths"]

GR_FLOW_CONTROL_STATS = "component_group_replication_flow_control_stats"


def paths(server: Server, tmpdir) -> Options:
    """Where a MySQL server finds its own files (it is not installed where it was built to be)."""
    o: Options = {"basedir": server.mysqld.parent.parent, "secure_file_priv": tmpdir, "mysqlx": False}
    if server.plugin_dir:
        o["plugin_dir"] = server.plugin_dir
    if server.share_dir:
        o["lc_messages_dir"] = server.share_dir
    return o


def options(layout: Layout, node: NodePlan, server: Server) -> Options:
    spec = layout.spec
    cluster = spec.clusters[node.cluster]
    s = spec.settings_for(node.cluster)
    o: Options = {
        **common_options(node, s), "report_host": node.listen_host, "report_port": node.port,
        **paths(server, node.tmpdir),
        "performance_schema": s.performance_schema or isinstance(cluster, GroupReplicationCluster),
        "log_bin": "binlog", "gtid_mode": "ON", "enforce_gtid_consistency": True,
        "log_replica_updates": True, "relay_log": "relay-bin", "relay_log_recovery": True,
        "replica_net_timeout": 10, "skip_replica_start": False,
    }
    if server.version_tuple >= (8, 0, 30):
        o["innodb_redo_log_capacity"] = parse_size(s.redo_log)
    else:
        o["innodb_log_file_size"] = parse_size(s.redo_log) // 2
    if isinstance(cluster, SingleCluster) and not cluster.binlog:
        o.pop("log_bin")
        o["disable_log_bin"] = True
    if isinstance(cluster, AsyncCluster):
        if node.role == "replica":
            threads, _ = cluster.replica_parallel(node.index - 1)
            o.update(read_only=True, replica_parallel_workers=threads,
                     replica_preserve_commit_order=cluster.preserve_commit_order)
        if isinstance(cluster, SemisyncCluster):
            # both plugins on every node (a replica may be promoted); the source side is switched on at
            # runtime once replicas are attached, as on MariaDB
            o["plugin_load_add"] = "semisync_source.so;semisync_replica.so"
            o.update({"loose-rpl_semi_sync_source_wait_point": cluster.wait_point,
                      "loose-rpl_semi_sync_source_timeout": cluster.timeout_ms,
                      "loose-rpl_semi_sync_source_wait_for_replica_count": cluster.replica_count})
            if node.role == "replica":
                o["loose-rpl_semi_sync_replica_enabled"] = True
    elif isinstance(cluster, GroupReplicationCluster):
        o.update(_group_replication(layout, node, cluster, server))
    o.update(s.server)  # the spec's raw options win
    return o


def _group_replication(layout: Layout, node: NodePlan, cluster: GroupReplicationCluster,
                       server: Server) -> Options:
    # the MYSQL stack talks over the server's own port (bound to bind_address); XCom has a port of its own
    # that it opens on every address (allowed only inside a site's namespace: LabSpec checks)
    port = (lambda n: n.port) if cluster.communication_stack == "MYSQL" else (lambda n: n.gr_port)
    seeds = ",".join(f"{n.listen_host}:{port(n)}" for n in layout.cluster_nodes(node.cluster))
    gr: Options = {
        "group_name": group_name(layout, node.cluster),
        "start_on_boot": False, "bootstrap_group": False,
        "local_address": f"{node.listen_host}:{port(node)}", "group_seeds": seeds,
        "ip_allowlist": layout.allowlist or f"127.0.0.1/8,{NET_PREFIX}.0.0/15",
        "single_primary_mode": cluster.single_primary,
        "enforce_update_everywhere_checks": not cluster.single_primary,
        "communication_stack": cluster.communication_stack,
        "paxos_single_leader": cluster.paxos_single_leader,
        "recovery_get_public_key": True,
        # TLS between members (the server's own generated certificates): the MYSQL stack authenticates
        # as the recovery account, whose caching_sha2_password exchange needs TLS or an RSA key; without
        # either, the first joins fail and retry after about 10 s
        "recovery_use_ssl": True, "ssl_mode": "REQUIRED",
        "member_expel_timeout": 5,  # a lab: a killed member leaves the group within seconds
        "autorejoin_tries": 0,
    }
    # clone: distributed recovery of a member whose missing transactions no donor has in its binlog
    o: Options = {"plugin_load_add": "group_replication.so" + (
        ";mysql_clone.so" if server.has_plugin("mysql_clone") else "")}
    o.update({f"loose-group_replication_{k}": v for k, v in gr.items()})
    o.update(replica_parallel_workers=cluster.applier_threads, replica_preserve_commit_order=True,
             disabled_storage_engines="MyISAM,BLACKHOLE,FEDERATED,ARCHIVE,MEMORY")
    return o


def seed_options(server: Server, datadir, socket, pid_file, log_error, tmpdir,
                 galera_port: int | None = None) -> Options:
    """Options of the short-lived server that gives a template its accounts: socket only, binary log off (Group
    Replication's plugin loaded, not started, where the server has it: its stats component needs it)."""
    o = {"datadir": datadir, "tmpdir": tmpdir, "socket": socket, "pid_file": pid_file, "log_error": log_error,
         "skip_networking": True, "disable_log_bin": True, "innodb_buffer_pool_size": 32 << 20,
         "performance_schema": False, **paths(server, tmpdir)}
    if server.has_plugin("group_replication"):
        o.update({"plugin_load_add": "group_replication.so", "loose-group_replication_start_on_boot": False})
    return o


def initialize(work: Path, run_as: str | None, server: Server) -> None:
    """``mysqld --initialize-insecure``, then at once (socket only, no TCP listener) the lab accounts with
    passwords nobody knows: a lab's node sets its own at its first start, from an init file."""
    from benchlib.lab.seed import set_up_accounts  # the seed procedure runs the flavour's own hooks

    log = work / "initialize.log"
    cnf = work / "my.cnf"
    cnf.write_text(option_file("mysqld", {"datadir": work / "data", "tmpdir": work / "tmp", "log_error": log,
                                          "disable_log_bin": True, **paths(server, work / "tmp")}))
    chown_tree(work, run_as)
    cmd = server.argv(f"--defaults-file={cnf}", "--initialize-insecure", *([f"--user={run_as}"] if run_as else []))
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise NodeStartError(f"mysqld --initialize-insecure ({server.label}) failed while preparing the datadir "
                             "template", detail=log_tail(log) if log.exists() else res.stderr[-2000:])
    unknown = Credentials({user: secrets.token_urlsafe(24) for user in ACCOUNTS})
    set_up_accounts(MYSQL, server, work / "seed", work / "data", unknown, run_as)
    shutil.rmtree(work / "seed")


def host_initialize(server: Server, node: NodePlan) -> list[str]:
    """A node's datadir on a provisioned host (``--initialize-insecure``: root@localhost has no password until the
    node's first start sets it from its init file, before the server listens)."""
    return server.argv("--no-defaults", "--initialize-insecure", f"--datadir={node.datadir}",
                       f"--tmpdir={node.tmpdir}", f"--basedir={server.mysqld.parent.parent}",
                       f"--lc-messages-dir={server.share_dir}", f"--plugin-dir={server.plugin_dir}", "--user=mysql",
                       f"--log-error={node.dir}/initialize.log")


def accounts(creds, hosts: tuple[str, ...] = ACCOUNT_HOSTS) -> list[tuple[str, tuple]]:
    """root with its password; ``bench`` and ``repl`` per lab address (``hosts``) (``repl`` also serves Group Replication's
    recovery, clone and the MYSQL communication stack)."""
    return account_statements(creds, hosts, "PROCESS, REPLICATION CLIENT",
                              "REPLICATION SLAVE, BACKUP_ADMIN, CLONE_ADMIN, GROUP_REPLICATION_STREAM, CONNECTION_ADMIN",
                              ("GRANT SELECT ON `performance_schema`.* TO 'bench'@%s",))


def seed_statements(server: Server) -> list[str]:
    """Group Replication's throttling counters (Gr_flow_control_throttle_*): installed once, in the template,
    because a group's secondaries are read-only."""
    return [f"INSTALL COMPONENT 'file://{GR_FLOW_CONTROL_STATS}'"] if server.has_plugin(GR_FLOW_CONTROL_STATS) else []


MYSQL = register(Flavor(
    name="mysql", title="MySQL", server="mysql",
    systems={"single": "mysql", "async": "mysql", "semisync": "mysql", "group_replication": "group_replication"},
    section="mysqld", client="mysql", options=options, seed_options=seed_options, initialize=initialize,
    template_done="mysql.ibd", accounts=accounts, replication=replication.MYSQL, semisync=semisync.MYSQL,
    passwords_at_first_start=True, seed_statements=seed_statements, parallel_threads_max=1024,
    refuses={"parallel_mode": ("optimistic", "parallel_mode is MariaDB's (slave_parallel_mode); MySQL's parallel "
                                             "apply is parallel_threads with preserve_commit_order")},
    why_not={"galera": "Galera runs on MariaDB here (Percona XtraDB Cluster: a remote lab)"},
    set_global="SYSTEM_VARIABLES_ADMIN", host_initialize=host_initialize,
))
