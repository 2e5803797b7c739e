"""Faults the embedded lab injects, and the failover a lab performs where the system has none of its own.

What each fault does on the embedded lab (``benchlib.lab.capabilities.LocalHosts``, through the fault layer both
kinds of lab share, ``benchlib.lab.node_hosts``):

- ``kill``: SIGKILL to the node's server (the pid checked against its command line first); it stays down until heal.
- ``freeze``: SIGSTOP, released by SIGCONT: the process keeps its sockets, so peers and clients see a node that
  accepts connections and answers nothing (the hardest failure to detect).
- ``cut``: the link of a WAN site goes down (``ip link set ... down`` in the site's namespace), released by bringing
  it up again; the nodes there run on, unreachable. Nodes on loopback have no link to cut: refused.
- ``isolate``: the node is cut off from the other nodes of its cluster while its clients still reach it (routes in the
  sites' namespaces: ``benchlib.lab.isolation``), released by removing them; a node killed meanwhile (a lost host)
  first has its namespace's sockets closed, so nothing it had queued arrives after the cut.

Promotion (async and semi-sync clusters, ``promote``) is what orchestrator does on a dead primary: every surviving
replica applies what it had received, the one that applied the most becomes the primary (replication reset, writes
allowed, semi-sync's primary side switched on where the cluster runs it) and the others follow it by GTID.
``switchover`` is the planned change of primary (see its docstring). ``errant`` counts what the old primary holds that the promoted one lacks (a committed tail no replica received:
errant transactions once it is back), before ``restore`` gives the original write node its role back after the run: the promoted node is stopped cleanly, its
datadir copied over the old primary's (what the old primary held that never reached a replica is discarded, as a
rebuilt node's would be), both start, and every replica follows the original write node again.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from typing import TYPE_CHECKING, Callable

import pymysql

from benchlib.errors import LabError
from benchlib.lab import sql
from benchlib.lab.base import Promotion
from benchlib.lab.layout import Layout, NodePlan

if TYPE_CHECKING:
    from benchlib.lab.topology import Async

__all__ = ["copy_data", "errant", "gtid_set_count", "promote", "restore", "set_site_link", "switchover"]

#: files of a datadir that belong to the node, not to its data (a copy leaves them out)
NODE_FILES = ("auto.cnf", "master.info", "relay-log.info", "multi-master.info", "mysqld-auto.cnf")
NODE_PREFIXES = ("relay-bin", "master-", "relay-log-")


def set_site_link(layout: Layout, site: str, up: bool) -> None:
    """Take a site's link down or up again (the routes a link-down removed are put back)."""
    s = layout.sites[site]
    res = subprocess.run(["ip", "-n", s.netns, "link", "set", s.tun, "up" if up else "down"], capture_output=True,
                         text=True)
    if res.returncode != 0:
        raise LabError(f"could not take site {site}'s link {'up' if up else 'down'}: {res.stderr.strip()}",
                       hint="benchlib lab heal restores the WAN links")
    if up and layout.hub_address:  # the route to the other sites, when the shaper added one (netem)
        subprocess.run(["ip", "-n", s.netns, "route", "add", f"{layout.hub_address.rsplit('.', 1)[0]}.0/24", "via",
                        layout.hub_address, "dev", s.tun, "src", s.address], capture_output=True, text=True)


def _status(topo: "Async", conn) -> dict:
    rows = sql.query(conn, topo.flavor.replication.status)
    return rows[0] if rows else {}


def _applied_all(row: dict) -> bool:
    """The replica's applier has executed everything its receiver got (MariaDB's and MySQL's column names)."""
    read = row.get("Read_Master_Log_Pos", row.get("Read_Source_Log_Pos"))
    done = row.get("Exec_Master_Log_Pos", row.get("Exec_Source_Log_Pos"))
    log_read = row.get("Master_Log_File", row.get("Source_Log_File"))
    log_done = row.get("Relay_Master_Log_File", row.get("Relay_Source_Log_File"))
    return read == done and log_read == log_done


def gtid_set_count(text: str) -> int:
    """The number of transactions in a MySQL GTID set ("uuid:1-5:7,uuid2:3")."""
    total = 0
    for part in "".join((text or "").split()).split(","):
        for rng in part.split(":")[1:]:
            if rng and rng[0].isdigit():
                lo, _, hi = rng.partition("-")
                total += int(hi or lo) - int(lo) + 1
    return total


def _seq_count(topo: "Async", conn) -> int:
    """How far a node has applied, as one comparable number: the number of transactions in its executed GTID
    set (MySQL) or the sum of its GTID position's sequence numbers (MariaDB: one per domain)."""
    if topo.flavor.replication.stop == "STOP REPLICA":
        return gtid_set_count(sql.scalar(conn, "SELECT @@GLOBAL.gtid_executed") or "")
    text = sql.scalar(conn, "SELECT @@GLOBAL.gtid_current_pos") or ""
    return sum(int(p.rsplit("-", 1)[1]) for p in text.split(",") if p.strip())


def _binlog_state(text: str) -> dict[tuple[int, int], int]:
    """MariaDB's gtid_binlog_state ("0-1-500,0-2-520"): (domain, server_id) -> the last sequence number logged."""
    out = {}
    for p in (text or "").split(","):
        if p.strip():
            d, sid, n = (int(x) for x in p.strip().split("-"))
            out[(d, sid)] = n
    return out


def errant(topo: "Async", old_conn, new_conn) -> tuple[int, str]:
    """The transactions the old primary (``old_conn``) holds that the new one (``new_conn``) lacks, errant once the
    old primary is back: how many, and which in GTID words. MySQL: ``GTID_SUBTRACT`` of the executed sets; MariaDB:
    per domain and server, the sequence numbers the old one logged beyond the new one's (a single writer's are
    consecutive)."""
    if topo.flavor.replication.stop == "STOP REPLICA":
        held = sql.scalar(old_conn, "SELECT @@GLOBAL.gtid_executed") or ""
        diff = sql.scalar(new_conn, "SELECT GTID_SUBTRACT(%s, @@GLOBAL.gtid_executed)", (held,)) or ""
        return gtid_set_count(diff), "".join(diff.split())
    old = _binlog_state(sql.scalar(old_conn, "SELECT @@GLOBAL.gtid_binlog_state") or "")
    new = _binlog_state(sql.scalar(new_conn, "SELECT @@GLOBAL.gtid_binlog_state") or "")
    ranges = [(d, sid, new.get((d, sid), 0) + 1, n) for (d, sid), n in sorted(old.items()) if n > new.get((d, sid), 0)]
    return (sum(n - lo + 1 for _, _, lo, n in ranges),
            ",".join(f"{d}-{sid}-{lo}" + (f"..{n}" if n > lo else "") for d, sid, lo, n in ranges))


def promote(topo: "Async", failed: NodePlan, alive: Callable[[NodePlan], bool], timeout: float, *,
            discard: bool = False) -> Promotion:
    """Promote the most advanced surviving replica of ``topo`` (see the module docstring); with ``discard``, the one
    that has applied the most at once, without waiting for the replicas to apply their relay logs: ``RESET REPLICA
    ALL`` throws away what it had received and not applied (what a hasty failover tool does: a semi-sync replica
    acknowledged those writes once they were in its relay log)."""
    t0 = time.monotonic()
    steps: list[tuple[str, float]] = []
    names = topo.flavor.replication
    survivors = [n for n in topo.nodes if n is not failed and alive(n)]
    if not survivors:
        raise LabError(f"{topo.cluster}: no replica is running to promote after {failed.name} failed")
    conns = {n.name: topo.connect(n) for n in survivors}
    try:
        if not discard:  # an applier that was stopped (an error, an operator) runs again to apply it all, started
            # before its receiver stops: a MariaDB replica by GTID whose two threads are both stopped discards its
            # relay log when it starts again (it fetches again from the primary, which is gone)
            for n in survivors:
                sql.execute(conns[n.name], names.start.replace("START SLAVE", "START SLAVE SQL_THREAD")
                            .replace("START REPLICA", "START REPLICA SQL_THREAD"))
        for n in survivors:
            sql.execute(conns[n.name], names.stop.replace("STOP SLAVE", "STOP SLAVE IO_THREAD")
                        .replace("STOP REPLICA", "STOP REPLICA IO_THREAD"))
        steps.append(("receivers stopped", time.monotonic() - t0))
        deadline = time.monotonic() + timeout
        unapplied = {}
        if discard:  # the appliers stopped where they are: what the relay logs hold beyond is never applied
            for n in survivors:
                row = _status(topo, conns[n.name])
                unapplied[n.name] = not _applied_all(row)
                sql.execute(conns[n.name], names.stop)
        else:
            for n in survivors:
                while not _applied_all(_status(topo, conns[n.name])):
                    if time.monotonic() > deadline:
                        raise LabError(f"{topo.cluster}: {n.name} did not apply its relay log within {timeout:g} s")
                    time.sleep(0.02)
            steps.append(("relay logs applied", time.monotonic() - t0))
        ahead = {n.name: _seq_count(topo, conns[n.name]) for n in survivors}
        new = max(survivors, key=lambda n: (ahead[n.name], -n.index))
        c = conns[new.name]
        sql.execute(c, names.stop, "RESET SLAVE ALL" if names.stop == "STOP SLAVE" else "RESET REPLICA ALL",
                    "SET GLOBAL read_only = OFF")
        if discard:
            steps.append((f"{new.name}'s relay log discarded" + (" with events it had not applied"
                                                                  if unapplied.get(new.name) else ""),
                          time.monotonic() - t0))
        steps.append((f"{new.name} takes writes", time.monotonic() - t0))
        _hand_over(topo, conns, new, [n for n in survivors if n is not new], "replicas follow it", steps, t0,
                   deadline - time.monotonic())
    except pymysql.MySQLError as exc:
        raise LabError(f"{topo.cluster}: promotion after {failed.name} failed: {exc.args[-1] if exc.args else exc}",
                       hint="benchlib lab heal rebuilds the cluster's original roles") from None
    finally:
        for conn in conns.values():
            conn.close()
    return Promotion(new.name, tuple(steps), f"{ahead[new.name]} transactions applied on {new.name}")


def _hand_over(topo: "Async", conns: dict, new: NodePlan, followers: list[NodePlan], words: str,
               steps: list[tuple[str, float]], t0: float, left_s: float) -> None:
    """The new primary takes its followers: each replicates from it by GTID, then semi-sync is on where the
    cluster runs it (promotion and switchover alike)."""
    for n in followers:
        topo.point_at(conns[n.name], new)
    steps.append((words, time.monotonic() - t0))
    if topo.semisync_wanted() and followers:
        topo.semisync_on(new, followers, max(1.0, left_s))
        steps.append(("semi-sync on", time.monotonic() - t0))


def _read_only(topo: "Async", conn, on: bool, wait_s: float) -> int:
    """Make the node on ``conn`` read-only (``on``) or writable. A server makes a client that holds an open transaction
    block ``read_only = ON`` until it ends (MySQL says so; MariaDB too, for one that wrote): after ``wait_s``, the
    connections holding one are disconnected, as Group Replication's switchover does after its timeout, and it is set
    then. Returns how many were disconnected."""
    var = "super_read_only" if topo.flavor.replication.stop == "STOP REPLICA" else "read_only"
    if not on:
        sql.execute(conn, f"SET GLOBAL {var} = OFF", "SET GLOBAL read_only = OFF")
        return 0
    sql.execute(conn, f"SET SESSION lock_wait_timeout = {max(1, int(round(wait_s)))}")
    try:
        sql.execute(conn, f"SET GLOBAL {var} = ON")
        return 0
    except pymysql.MySQLError as exc:
        if exc.args and exc.args[0] != 1205:  # not a lock wait timeout
            raise
    me = sql.scalar(conn, "SELECT CONNECTION_ID()")
    holders = [r["id"] for r in sql.query(conn, "SELECT trx_mysql_thread_id AS id FROM information_schema.innodb_trx")
               if r["id"] != me]
    for tid in holders:
        try:
            sql.execute(conn, f"KILL CONNECTION {int(tid)}")
        except pymysql.MySQLError:
            pass  # gone meanwhile
    sql.execute(conn, f"SET GLOBAL {var} = ON")
    return len(holders)


def switchover(topo: "Async", timeout: float, *, wait_s: float = 15.0) -> Promotion:
    """A planned change of primary, as an operator (or orchestrator's graceful takeover) does it: the primary made
    read-only (a client's open transaction waited for up to ``wait_s``, then disconnected), every replica waits until it
    has applied everything the primary logged, the first replica takes the writes, and the others and the old primary
    follow it. Nothing acknowledged can be lost; what clients wait is the measure."""
    t0 = time.monotonic()
    steps: list[tuple[str, float]] = []
    names = topo.flavor.replication
    old, replicas = topo.primary, topo.replicas
    if not replicas:
        raise LabError(f"{topo.cluster}: a switchover needs a replica to hand the writes to")
    new = replicas[0]
    mysql = names.stop == "STOP REPLICA"
    conns = {n.name: topo.connect(n, read_timeout=max(60.0, timeout)) for n in topo.nodes}
    try:
        cut = _read_only(topo, conns[old.name], True, wait_s)
        steps.append((f"{old.name} read-only" + (f" ({cut} connection{'s' if cut != 1 else ''} with an open "
                                                   f"transaction disconnected after {wait_s:g} s)" if cut else ""),
                      time.monotonic() - t0))
        if mysql:
            pos = sql.scalar(conns[old.name], "SELECT @@GLOBAL.gtid_executed")
            for r in replicas:
                if sql.scalar(conns[r.name], "SELECT WAIT_FOR_EXECUTED_GTID_SET(%s, %s)", (pos, timeout)) != 0:
                    raise LabError(f"{topo.cluster}: {r.name} did not apply {old.name}'s transactions within "
                                   f"{timeout:g} s")
        else:
            pos = sql.scalar(conns[old.name], "SELECT @@GLOBAL.gtid_binlog_pos")
            for r in replicas:
                if sql.scalar(conns[r.name], "SELECT MASTER_GTID_WAIT(%s, %s)", (pos, timeout)) != 0:
                    raise LabError(f"{topo.cluster}: {r.name} did not apply {old.name}'s transactions within "
                                   f"{timeout:g} s")
        steps.append(("replicas caught up", time.monotonic() - t0))
        c = conns[new.name]
        sql.execute(c, names.stop, "RESET SLAVE ALL" if not mysql else "RESET REPLICA ALL")
        _read_only(topo, c, False, wait_s)
        steps.append((f"{new.name} takes writes", time.monotonic() - t0))
        if not mysql:  # the old primary replicates from where its own binary log ends
            sql.execute(conns[old.name], "SET GLOBAL gtid_slave_pos = @@GLOBAL.gtid_binlog_pos")
        _hand_over(topo, conns, new, [*replicas[1:], old], "the others follow it", steps, t0, timeout)
    except pymysql.MySQLError as exc:
        raise LabError(f"{topo.cluster}: switchover from {old.name} failed: {exc.args[-1] if exc.args else exc}",
                       hint="benchlib lab heal gives the original write node its role back") from None
    finally:
        for conn in conns.values():
            conn.close()
    return Promotion(new.name, tuple(steps), "")


def copy_data(src: NodePlan, dst: NodePlan, owner: str | None) -> None:
    """Replace ``dst``'s datadir by a copy of ``src``'s (both stopped), without the files that are ``src``'s own."""
    shutil.rmtree(dst.datadir, ignore_errors=True)
    shutil.copytree(src.datadir, dst.datadir, symlinks=True,
                    ignore=lambda d, names: [n for n in names if n in NODE_FILES or n.startswith(NODE_PREFIXES)
                                             or n.endswith(".pid")])
    if owner:
        shutil.chown(dst.datadir, owner, owner)
        for root, dirs, files in os.walk(dst.datadir):
            for name in dirs + files:
                shutil.chown(os.path.join(root, name), owner, owner)


def restore(topo: "Async", promoted: NodePlan, stop: Callable[[list[NodePlan]], None],
            start: Callable[[list[NodePlan]], None], copy: Callable[[NodePlan, NodePlan], None], timeout: float) -> str:
    """Give the original write node its role back after a promotion (see the module docstring): ``stop`` and
    ``start`` nodes, ``copy`` one stopped node's data over another's (``copy_data`` here; a provisioned lab copies
    between hosts); returns how."""
    old = topo.primary
    stop([old, promoted])
    copy(promoted, old)
    start([old, promoted])
    with topo.connect(old) as conn:
        sql.execute(conn, "SET SESSION sql_log_bin = 0", "DROP TRIGGER IF EXISTS benchlib.heartbeat_applied",
                    topo.flavor.replication.stop,
                    "RESET SLAVE ALL" if topo.flavor.replication.stop == "STOP SLAVE" else "RESET REPLICA ALL",
                    "SET GLOBAL read_only = OFF")
    for n in topo.replicas:
        with topo.connect(n) as conn:
            sql.execute(conn, topo.flavor.replication.stop)
            if topo.semisync_wanted():  # a replica whose primary side is on would wait for acks on every apply
                try:
                    sql.execute(conn, f"SET GLOBAL {topo.flavor.semisync.var('enabled')} = OFF")
                except pymysql.MySQLError:
                    pass  # the primary side's plugin is not there: nothing to switch off
            if topo.flavor.replication.stop == "STOP SLAVE":  # the same data everywhere now: start from here
                sql.execute(conn, "SET GLOBAL gtid_slave_pos = @@GLOBAL.gtid_binlog_pos")
            topo.point_at(conn, old)
    topo.wait_ready(timeout)
    return f"{old.name} rebuilt from a copy of {promoted.name}'s data (what it held that no replica had is gone), " \
           f"primary again; every replica follows it"
