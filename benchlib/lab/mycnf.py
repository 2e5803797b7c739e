"""Render each node's my.cnf from the spec: the one place server options are decided.

MariaDB nodes get ``[mariadbd]`` with MariaDB's names; MySQL nodes get ``[mysqld]`` with
MySQL's (GTID auto-positioning, ``replica_*``, ``rpl_semi_sync_source_*``, Group
Replication as ``loose-`` options so the file also serves ``--initialize``).
"""

from __future__ import annotations

import uuid
from typing import Any

from benchlib.lab.layout import NET_PREFIX, Layout, NodePlan
from benchlib.lab.spec import (AsyncCluster, GaleraCluster, GroupReplicationCluster, SemisyncCluster, SingleCluster,
                               parse_size)
from benchlib.servers import Server
from benchlib.systems.settings import DURABILITY

GALERA_PROVIDER = "/usr/lib/galera/libgalera_smm.so"


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    return str(value)


def option_file(section: str, options: dict[str, Any]) -> str:
    """``[section]`` and one ``name = value`` line per option (booleans as ON/OFF)."""
    return f"[{section}]\n" + "".join(f"{k} = {_fmt(v)}\n" for k, v in options.items())


def galera_provider_options(layout: Layout, node: NodePlan) -> dict[str, Any]:
    cluster = layout.spec.clusters[node.cluster]
    assert isinstance(cluster, GaleraCluster)
    # Membership timers tuned for a lab (measured on 2 cores: 3 nodes Synced 0.7 s
    # after start, max 0.9 s, instead of 1-2 s with multi-second outliers): a
    # forgotten joiner may reconnect after 0.5 s instead of 5 s; join messages are
    # retransmitted every 100 ms (or twice the longest RTT of the lab); peers are
    # checked every 100 ms and an idle link carries a keepalive every 250 ms
    # (keepalives are only sent when nothing else is: no cost under load).
    max_rtt = max((s.rtt_ms for s in layout.sites.values()), default=0.0)
    join_retrans_ms = max(100, int(2 * max_rtt))
    opts: dict[str, Any] = {
        "gmcast.listen_addr": f"tcp://{node.listen_host}:{node.galera_port}",
        "ist.recv_addr": f"{node.listen_host}:{node.ist_port}",
        "gcache.size": cluster.gcache,
        "gcs.fc_limit": cluster.fc_limit,
        "gcs.fc_factor": cluster.fc_factor,
        "gmcast.time_wait": "PT0.5S",
        "evs.join_retrans_period": f"PT{join_retrans_ms / 1000:g}S",
        "evs.inactive_check_period": "PT0.1S",
        "evs.keepalive_period": "PT0.25S",
    }
    opts.update(cluster.provider_options)
    return opts


def server_options(layout: Layout, node: NodePlan, server: Server | None = None) -> dict[str, Any]:
    if node.server == "mysql":
        assert server is not None, "a MySQL node's options need its server"
        return mysql_options(layout, node, server)
    spec = layout.spec
    cluster = spec.clusters[node.cluster]
    s = spec.settings_for(node.cluster)
    o: dict[str, Any] = {
        "datadir": node.datadir,
        "tmpdir": node.tmpdir,
        "socket": node.socket,
        "pid_file": node.pid_file,
        "log_error": node.error_log,
        "port": node.port,
        "bind_address": ",".join(node.bind_hosts),
        "server_id": node.server_id,
        "skip_name_resolve": True,
        "max_connect_errors": 1_000_000,
        "max_connections": s.max_connections,
        "performance_schema": s.performance_schema,
        "innodb_buffer_pool_size": parse_size(s.buffer_pool),
        "innodb_log_file_size": parse_size(s.redo_log),
        **DURABILITY[s.durability],
        "binlog_format": "ROW",
    }
    if isinstance(cluster, SingleCluster):
        if cluster.binlog:
            o.update(log_bin="binlog", gtid_strict_mode=True)
    elif isinstance(cluster, AsyncCluster):
        o.update(
            log_bin="binlog",
            log_slave_updates=True,
            gtid_strict_mode=True,
            relay_log="relay-bin",
            relay_log_recovery=True,
            slave_net_timeout=10,
        )
        if node.role == "replica":
            threads, mode = cluster.replica_parallel(node.index - 1)
            o.update(read_only=True, slave_parallel_threads=threads, slave_parallel_mode=mode)
        if isinstance(cluster, SemisyncCluster):
            # The master side is switched on at runtime once replicas are attached:
            # switched on in the file, the first write would block for the whole timeout.
            o.update(
                rpl_semi_sync_master_wait_point=cluster.wait_point,
                rpl_semi_sync_master_timeout=cluster.timeout_ms,
            )
            if node.role == "replica":
                o.update(rpl_semi_sync_slave_enabled=True)
    elif isinstance(cluster, GaleraCluster):
        members = ",".join(f"{n.listen_host}:{n.galera_port}" for n in layout.cluster_nodes(node.cluster))
        provider = ";".join(f"{k}={_fmt(v)}" for k, v in galera_provider_options(layout, node).items())
        o.update(
            wsrep_on=True,
            wsrep_provider=GALERA_PROVIDER,
            wsrep_cluster_name=f"{spec.name}-{node.cluster}",
            wsrep_cluster_address=f"gcomm://{members}",
            wsrep_node_name=node.name,
            wsrep_node_address=f"{node.listen_host}:{node.galera_port}",
            wsrep_node_incoming_address=f"{node.listen_host}:{node.port}",
            wsrep_provider_options=f'"{provider}"',
            wsrep_sst_method="rsync",
            wsrep_sst_receive_address=f"{node.listen_host}:{node.sst_port}",
            wsrep_slave_threads=cluster.applier_threads,
            innodb_autoinc_lock_mode=2,
        )
        if cluster.binlog:
            o.update(log_bin="binlog", log_slave_updates=True)
    o.update(s.server)  # the spec's raw options win
    return o


def group_name(layout: Layout, cluster: str) -> str:
    """The group's UUID: stable for a lab and cluster, different between them."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"benchlib:{layout.dir}:{cluster}"))


def mysql_paths(server: Server, tmpdir) -> dict[str, Any]:
    """Where a MySQL server finds its own files (it is not installed where it was built to be)."""
    o: dict[str, Any] = {"basedir": server.mysqld.parent.parent, "secure_file_priv": tmpdir, "mysqlx": False}
    if server.plugin_dir:
        o["plugin_dir"] = server.plugin_dir
    if server.share_dir:
        o["lc_messages_dir"] = server.share_dir
    return o


def mysql_options(layout: Layout, node: NodePlan, server: Server) -> dict[str, Any]:
    spec = layout.spec
    cluster = spec.clusters[node.cluster]
    s = spec.settings_for(node.cluster)
    o: dict[str, Any] = {
        "datadir": node.datadir, "tmpdir": node.tmpdir, "socket": node.socket, "pid_file": node.pid_file,
        "log_error": node.error_log, "port": node.port, "bind_address": ",".join(node.bind_hosts),
        "report_host": node.listen_host, "report_port": node.port, "server_id": node.server_id,
        **mysql_paths(server, node.tmpdir),
        "skip_name_resolve": True, "max_connect_errors": 1_000_000, "max_connections": s.max_connections,
        "performance_schema": s.performance_schema or isinstance(cluster, GroupReplicationCluster),
        "innodb_buffer_pool_size": parse_size(s.buffer_pool),
        **DURABILITY[s.durability],
        "log_bin": "binlog", "binlog_format": "ROW", "gtid_mode": "ON", "enforce_gtid_consistency": True,
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
        # the MYSQL stack talks over the server's own port (bound to bind_address); XCom has a port of its own
        # that it opens on every address (allowed only inside a site's namespace: LabSpec checks)
        port = (lambda n: n.port) if cluster.communication_stack == "MYSQL" else (lambda n: n.gr_port)
        seeds = ",".join(f"{n.listen_host}:{port(n)}" for n in layout.cluster_nodes(node.cluster))
        gr = {
            "group_name": group_name(layout, node.cluster),
            "start_on_boot": False, "bootstrap_group": False,
            "local_address": f"{node.listen_host}:{port(node)}", "group_seeds": seeds,
            "ip_allowlist": f"127.0.0.1/8,{NET_PREFIX}.0.0/15",
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
        o["plugin_load_add"] = "group_replication.so" + (";mysql_clone.so" if server.has_plugin("mysql_clone") else "")
        o.update({f"loose-group_replication_{k}": v for k, v in gr.items()})
        o.update(replica_parallel_workers=cluster.applier_threads, replica_preserve_commit_order=True,
                 disabled_storage_engines="MyISAM,BLACKHOLE,FEDERATED,ARCHIVE,MEMORY")
    o.update(s.server)  # the spec's raw options win
    return o


def render(layout: Layout, node: NodePlan, server: Server | None = None) -> str:
    section = "[mysqld]" if node.server == "mysql" else "[mariadbd]"
    lines = [f"# {node.name}: generated by benchlib for lab {layout.spec.name}; do not edit", section]
    lines += [f"{k} = {_fmt(v)}" for k, v in server_options(layout, node, server).items()]
    return "\n".join(lines) + "\n"


def mysql_seed_options(server: Server, datadir, socket, pid_file, log_error, tmpdir) -> str:
    """Options of the short-lived MySQL server that prepares a seed: socket only, binary log off (Group
    Replication's plugin loaded, not started, where the server has it: its stats component needs it)."""
    o = {"datadir": datadir, "tmpdir": tmpdir, "socket": socket, "pid_file": pid_file, "log_error": log_error,
         "skip_networking": True, "disable_log_bin": True, "innodb_buffer_pool_size": 32 << 20,
         "performance_schema": False, **mysql_paths(server, tmpdir)}
    if server.has_plugin("group_replication"):
        o.update({"plugin_load_add": "group_replication.so", "loose-group_replication_start_on_boot": False})
    return option_file("mysqld", o)


def seed_options(datadir, socket, pid_file, log_error, tmpdir, galera_port: int | None) -> str:
    """Options of the short-lived server that prepares a lab's seed datadir (socket only)."""
    o: dict[str, Any] = {
        "datadir": datadir,
        "tmpdir": tmpdir,
        "socket": socket,
        "pid_file": pid_file,
        "log_error": log_error,
        "skip_networking": True,
        "innodb_buffer_pool_size": 32 << 20,
        "performance_schema": False,
        "binlog_format": "ROW",
    }
    if galera_port is not None:
        o.update(
            wsrep_on=True,
            wsrep_provider=GALERA_PROVIDER,
            wsrep_cluster_address="gcomm://",
            wsrep_provider_options=f'"gmcast.listen_addr=tcp://127.0.0.1:{galera_port};gcache.size=1M"',
            innodb_autoinc_lock_mode=2,
        )
    return option_file("mariadbd", o)
