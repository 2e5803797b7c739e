"""``benchlib lab check REMOTE_SPEC``: is a remote lab ready for a campaign?

Checked in order, every problem one line naming the node or host and how to fix it:

1. connectivity and login on every node (a refused password names the variable to check);
2. what each server is (``dialect.detect``) against what the spec says;
3. the privileges the campaign uses, by running the very statements the sampler and the load
   run (a refusal names the grant to add): replica status, performance_schema tables, group
   member stats, Aurora's replica_host_status, the benchlib and sbtest schemas on the writer;
   changing global variables (needed only when a campaign sweeps settings) is a note;
4. replication health: replica threads running without error, semi-sync ON with every replica a client where the
   spec says semisync, Galera nodes Synced in a primary component of the declared size, Group Replication members
   ONLINE;
5. clock offsets of every server and client host from this machine (lowest round trip); each node of a [sites]
   entry, its round trip from here (a provisioned lab, which emulates it, fails when it is well below rtt_ms);
6. the client hosts: SSH login and sysbench's version.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pymysql

from benchlib import catalogue
from benchlib.errors import BenchlibError
from benchlib.lab.wan import handshake_rtt
from benchlib.sampling.clock import server_offset
from benchlib.systems.base import get as get_system
from benchlib.systems import dialect, semisync
from benchlib.systems.privileges import ACCESS_DENIED, GRANTS, WRONG_PASSWORD, privilege_message

if TYPE_CHECKING:
    from benchlib.lab.base import Lab as RemoteLab  # a remote lab (benchlib.remote.lab), typed by the protocol

@dataclass
class Finding:
    where: str
    ok: bool
    message: str
    severity: str = "error"  # error | note (notes never fail the check)


@dataclass
class RemoteCheck:
    findings: list[Finding] = field(default_factory=list)
    offsets: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(f.ok or f.severity == "note" for f in self.findings)

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.findings if not f.ok and f.severity == "error"]

    def add(self, where: str, ok: bool, message: str, severity: str = "error") -> None:
        self.findings.append(Finding(where, ok, message, severity))

    def lines(self) -> list[str]:
        return format_remote_check(self)


def _denied(exc: pymysql.MySQLError) -> tuple[int, str]:
    return (exc.args[0], str(exc.args[-1])) if exc.args else (0, str(exc))


def _probe(result: RemoteCheck, conn, node: str, user: str, probe: str, sql: str, args: Any = None,
           **names: str) -> list[dict] | None:
    """Run one statement the campaign relies on; a refusal becomes the grant to add."""
    try:
        with conn.cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())
    except pymysql.MySQLError as exc:
        errno, text = _denied(exc)
        if errno in ACCESS_DENIED and probe == "performance_schema" and "table '" in text:
            names.setdefault("table", text.split("table '")[1].split("'")[0])
        result.add(node, False, privilege_message(errno, text, node=node, probe=probe, user=user, **names))
        return None


def _check_node(lab: "RemoteLab", result: RemoteCheck, cluster: str, node, conn, user: str) -> None:
    spec = lab.spec.clusters[cluster]
    system = get_system(spec.system)
    with conn.cursor() as cur:
        cur.execute("SHOW GLOBAL VARIABLES WHERE Variable_name IN ('version', 'version_comment', 'wsrep_on', "
                    "'aurora_version', 'group_replication_group_name')")
        variables = {r["Variable_name"].lower(): r["Value"] for r in cur.fetchall()}
    kind = dialect.detect(variables)
    if kind.system not in system.kinds:
        result.add(node.name, False, f"{node.name}: the spec says {spec.system}, the server is {kind.system} "
                                     f"{'.'.join(map(str, kind.version))} ({variables.get('version')})")
        return
    result.add(node.name, True, f"{node.name}: {variables.get('version')} ({spec.system}, {node.role})")
    writer = node.role == spec.facts.writer_role
    if writer:
        for stmt in ("CREATE DATABASE IF NOT EXISTS benchlib", "CREATE DATABASE IF NOT EXISTS sbtest",
                     "CREATE TABLE IF NOT EXISTS benchlib.check_write (id INT PRIMARY KEY) ENGINE=InnoDB",
                     "REPLACE INTO benchlib.check_write VALUES (1)"):
            if _probe(result, conn, node.name, user, "schemas", stmt) is None:
                return
    readable = all([_probe(result, conn, node.name, user, probe, sql, args) is not None
                    for probe, sql, args in system.reads(kind, writer)])
    if readable:  # what the sampler reads, it may read: is the node ready? (the check every lab runs)
        for problem in system.readiness(conn, writer, len(spec.nodes), node.name):
            result.add(node.name, False, problem)
    if writer and catalogue.TOPOLOGIES[spec.topology].semisync_acks:
        _check_semisync(result, conn, node.name, len(spec.nodes) - 1)
    _can_set_global(result, conn, node.name, kind)


def _check_semisync(result: RemoteCheck, conn, node: str, replicas: int) -> None:
    """A cluster the spec calls semi-sync must be one: its primary's semi-sync ON with every replica a client (a
    benchmark of an async pair labelled semi-sync is the mistake this catches)."""
    with conn.cursor() as cur:
        cur.execute("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_%'")
        status = semisync.status_of({r["Variable_name"]: r["Value"] for r in cur.fetchall()})
    on, clients = status.get("status") == 1.0, int(status.get("clients", 0))
    if not status:
        result.add(node, False, f"{node}: the spec says semisync, but the server has no semi-sync (its status "
                                "variables are missing): load the semi-sync plugin (MySQL) and switch it on, or "
                                "remove topology = \"semisync\" from the cluster")
    elif not on or clients < replicas:
        result.add(node, False, f"{node}: the spec says semisync, but semi-sync is {'ON' if on else 'OFF'} on the "
                                f"primary with {clients} of {replicas} replicas as semi-sync clients: switch it on "
                                "(primary and replicas, then restart the replicas' IO threads), or remove "
                                "topology = \"semisync\" from the cluster")
    else:
        result.add(node, True, f"{node}: semi-sync ON, {clients} of {replicas} replicas as clients")


def _can_set_global(result: RemoteCheck, conn, node: str, kind: dialect.ServerKind) -> None:
    with conn.cursor() as cur:
        cur.execute("SHOW GRANTS")
        grants = " ".join(str(next(iter(r.values()))) for r in cur.fetchall()).upper()
    if not any(p in grants for p in ("ALL PRIVILEGES ON *.*", "SUPER", "SYSTEM_VARIABLES_ADMIN")):
        result.add(node, False, f"{node}: the account cannot change global variables, so campaigns that sweep "
                                f"settings will fail here; {GRANTS['set_global'].format(user='the account')}",
                   severity="note")


def check_remote(lab: "RemoteLab", *, clients: bool = True) -> RemoteCheck:
    """Check a remote lab; every problem is a finding, nothing raises for a lab that is not ready."""
    spec = lab.spec
    result = RemoteCheck()
    refused: set[tuple[str, str]] = set()  # credentials refused once: said once, not for every node
    try:
        for cname, cluster in spec.clusters.items():
            creds = spec.credentials_of(cname)
            for node in cluster.nodes:
                if (creds.user, creds.source) in refused:
                    break
                try:
                    conn = lab.connect(node.name, timeout=5)
                except BenchlibError as exc:  # the password variable is not set
                    refused.add((creds.user, creds.source))
                    result.add(node.name, False, exc.message + (f"; {exc.hint}" if exc.hint else ""))
                    break
                except pymysql.MySQLError as exc:
                    errno, text = _denied(exc)
                    if errno == WRONG_PASSWORD:
                        refused.add((creds.user, creds.source))
                        msg = (f"{node.name}: the server refused the login of {creds.user!r} (wrong password, or no "
                               f"such account for this host): check the password in {creds.source}")
                    else:
                        msg = (f"{node.name}: cannot connect to {node.host}:{node.port} ({text}): check the "
                               "address, the port, and that the server runs")
                    result.add(node.name, False, msg)
                    continue
                with conn:
                    _check_node(lab, result, cname, node, conn, creds.user)
                    result.offsets[node.name] = server_offset(conn).as_dict()
        if spec.sites:
            _check_sites(lab, result)
        if clients and spec.clients:
            _check_clients(lab, result)
    finally:
        lab.close()
    return result


def _check_sites(lab: "RemoteLab", result: RemoteCheck) -> None:
    """Each node of a site, its round trip from here against the site's. A provisioned lab emulates it (benchlib's
    machine is as far as the site's rtt_ms), so a round trip well below is an error there; elsewhere benchlib's
    machine may sit anywhere, and the round trip is a note."""
    spec = lab.spec
    emulated = spec.provisioned is not None
    for cluster in spec.clusters.values():
        for node in cluster.nodes:
            site = spec.site_of(node.name)
            if site is None:
                continue
            declared = spec.sites[site].rtt_ms
            try:
                ms = handshake_rtt(node.host, node.port, samples=5, timeout=5)["median_ms"]
            except OSError:
                continue  # said already: the node does not answer
            words = f"{node.name}: {ms:.1f} ms round trip from here (site {site}: rtt_ms = {declared:g})"
            if emulated and ms < 0.8 * declared:
                result.add(node.name, False, f"{words}: the WAN delay of its host is not on; provision again "
                                             "(python3 /usr/local/lib/benchlib/wanhost.py status on the host says)")
            elif emulated:
                result.add(node.name, True, words)
            else:
                result.add(node.name, False, words, severity="note")  # said, never failing the check


def _check_clients(lab: "RemoteLab", result: RemoteCheck) -> None:
    from benchlib.remote.ssh import SSHClients

    try:
        ssh = SSHClients(lab.spec.clients).open()
    except BenchlibError as exc:
        result.add("clients", False, exc.message + (f"; {exc.hint}" if exc.hint else ""))
        return
    try:
        for name, client in lab.spec.clients.items():
            rc, out, err = ssh.run(name, f"{client.sysbench} --version")
            if rc != 0 or not out.startswith("sysbench "):
                result.add(name, False, f"client host {name}: {client.sysbench} does not run there "
                                        f"({(err or out).strip()[:120]}): install sysbench 1.0 on {client.host}")
                continue
            result.add(name, True, f"client host {name}: {out.strip()}")
            result.offsets[name] = ssh.clock_offset(name).as_dict()
    finally:
        ssh.close()


def format_remote_check(result: RemoteCheck) -> list[str]:
    lines = []
    for f in result.findings:
        mark = "ok  " if f.ok else ("note" if f.severity == "note" else "FAIL")
        lines.append(f"{mark} {f.message}")
    for where, o in result.offsets.items():
        lines.append(f"clock {where}: offset {o['offset_s'] * 1000:+.2f} ms ± {o['error_s'] * 1000:.2f} ms")
    lines.append("ready for a campaign" if result.ok else f"{len(result.problems)} problem(s): not ready")
    return lines
