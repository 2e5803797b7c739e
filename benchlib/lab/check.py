"""Health check of a running lab: every node up and ready, and a write seen everywhere.

Every node that is up is checked by its system's ``readiness`` (``benchlib.systems``: a replica's threads, a
Galera node Synced in a full primary component, a group member ONLINE in a full group), the same check a
remote lab's runs. For each cluster, one row is written on its writer (node 1) and the time until it is visible on
every other node is measured from this process's clock (polling every millisecond); in a cluster that takes writes
on every node (Galera, a multi-primary group), one row is written on each node in turn and looked for on all the
others. A group fronted by MySQL Router (``router = true``) has its routing proved: a write through Router's
read-write port lands on the group's primary, and a read through its read-only port on a secondary.
Problems are listed, each with what to do.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field

import pymysql

from benchlib import catalogue
from benchlib.errors import BenchlibError
from benchlib.lab import router, sql
from benchlib.systems.base import get as get_system

TABLE = "benchlib.lab_check"


@dataclass
class CheckResult:
    problems: list[str] = field(default_factory=list)
    visible_ms: dict[str, dict[str, float]] = field(default_factory=dict)  # cluster -> node -> ms
    #: a cluster that takes writes everywhere: cluster -> the node written on (node 1's: ``visible_ms``) -> node -> ms
    elsewhere_ms: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    routes: dict[str, str] = field(default_factory=dict)  # cluster -> where its Router sent a write and a read

    @property
    def ok(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        return format_check(self)


def check(lab, timeout: float = 10.0) -> CheckResult:
    """Check a ``benchlib.lab.lab.LocalLab`` (see the module docstring)."""
    result = CheckResult()
    status = {s.name: s for s in lab.health.status()}
    for cluster in list(lab.spec.clusters):
        nodes = lab.cluster_nodes(cluster)
        system = get_system(lab.spec.system_of(cluster))
        for i, n in enumerate(nodes):
            s = status[n.name]
            if not s.up:
                result.problems.append(f"{s.name} is down (benchlib lab heal restarts it)")
                continue
            try:
                with lab.connect(n.name, read_timeout=5) as conn:
                    result.problems += system.readiness(conn, i == 0, len(nodes), n.name)
            except (BenchlibError, pymysql.err.MySQLError) as exc:
                result.problems.append(f"{s.name}: {exc.message if isinstance(exc, BenchlibError) else exc.args[-1]}")
    for cluster in lab.spec.clusters:
        nodes = lab.layout.cluster_nodes(cluster)
        if len(nodes) < 2 or not all(status[n.name].up for n in nodes):
            continue
        everywhere = catalogue.writes_everywhere(lab.spec.clusters[cluster])
        for writer in nodes if everywhere else nodes[:1]:
            readers = [n for n in nodes if n.name != writer.name]
            seen = _written_and_seen(lab, cluster, writer, readers, timeout, result)
            if seen is None:
                break
            if writer.name == nodes[0].name:
                result.visible_ms[cluster] = seen
            else:
                result.elsewhere_ms.setdefault(cluster, {})[writer.name] = seen
    for cluster in lab.spec.clusters:
        front = router.front_of(lab.topology(cluster)) if all(status[n.name].up for n in lab.layout.cluster_nodes(
            cluster)) else None
        if front is not None:
            _check_routes(lab, cluster, front, result)
    return result


def _written_and_seen(lab, cluster: str, writer, readers: list, timeout: float,
                      result: CheckResult) -> dict[str, float] | None:
    """Write one row on ``writer``; ms until each of ``readers`` sees it (None: the write failed, as ``result``
    says)."""
    token = str(uuid.uuid4())
    try:
        with lab.connect(writer) as conn:
            sql.execute(conn, "CREATE DATABASE IF NOT EXISTS benchlib",
                        f"CREATE TABLE IF NOT EXISTS {TABLE} (id BIGINT AUTO_INCREMENT PRIMARY KEY, "
                        "token CHAR(36) NOT NULL, KEY (token))")
            conns = {r.name: lab.connect(r) for r in readers}  # connected before the write: not timed
            try:
                with conn.cursor() as cur:
                    t0 = time.perf_counter()
                    cur.execute(f"INSERT INTO {TABLE} (token) VALUES (%s)", (token,))
                seen = _wait_visible(conns, token, t0, timeout)
            finally:
                for c in conns.values():
                    c.close()
    except pymysql.err.MySQLError as exc:
        result.problems.append(f"{cluster}: test write on {writer.name} failed: {exc.args[-1] if exc.args else exc}")
        return None
    for reader in readers:
        if reader.name not in seen:
            result.problems.append(f"{reader.name}: a row written on {writer.name} was not visible after "
                                   f"{timeout:.0f} s")
    return seen


def _check_routes(lab, cluster: str, front: "router.RouterFront", result: CheckResult) -> None:
    """A write through Router's read-write port is on the primary; a read through its read-only port is served by a
    secondary."""
    if not front.running():
        result.problems.append(f"{cluster}: MySQL Router is not running (benchlib lab heal starts it again)")
        return
    topo = lab.topology(cluster)
    by_uuid = {}
    for n in lab.layout.cluster_nodes(cluster):
        with lab.connect(n) as conn:
            by_uuid[sql.scalar(conn, "SELECT @@server_uuid")] = n.name
    primary = by_uuid.get(router.primary_uuid(topo) or "")
    token = str(uuid.uuid4())
    try:
        with front.connect(2.0) as conn:
            sql.execute(conn, "CREATE DATABASE IF NOT EXISTS benchlib",
                        f"CREATE TABLE IF NOT EXISTS {TABLE} (id BIGINT AUTO_INCREMENT PRIMARY KEY, "
                        "token CHAR(36) NOT NULL, KEY (token))")
            with conn.cursor() as cur:
                cur.execute(f"INSERT INTO {TABLE} (token) VALUES (%s)", (token,))
            wrote = by_uuid.get(sql.scalar(conn, "SELECT @@server_uuid"), "?")
        with front.connect(2.0, port="ro") as conn:
            read = by_uuid.get(sql.scalar(conn, "SELECT @@server_uuid"), "?")
    except pymysql.err.MySQLError as exc:
        result.problems.append(f"{cluster}: through MySQL Router: {exc.args[-1] if exc.args else exc}")
        return
    if primary is None or wrote != primary:
        result.problems.append(f"{cluster}: MySQL Router sent a write to {wrote}, the primary is {primary} "
                               f"(see {front.log})")
    elif read == primary:
        result.problems.append(f"{cluster}: MySQL Router's read-only port reached the primary {read}")
    else:
        ports = front.ports
        result.routes[cluster] = (f"{cluster}: {front.program.label} (metadata written by benchlib) sent a write on "
                                  f"{front.host}:{ports['rw']} to {wrote}, the primary, and a read on "
                                  f":{ports['ro']} to {read}, a secondary")


def _wait_visible(conns: dict, token: str, t0: float, timeout: float) -> dict[str, float]:
    """Poll every reader about once a millisecond; ms after ``t0`` at which each first saw ``token``."""
    seen: dict[str, float] = {}
    while len(seen) < len(conns) and time.perf_counter() - t0 < timeout:
        for name, conn in conns.items():
            if name in seen:
                continue
            try:
                if sql.query(conn, f"SELECT 1 FROM {TABLE} WHERE token = %s", (token,)):
                    seen[name] = (time.perf_counter() - t0) * 1000
            except pymysql.err.ProgrammingError:
                pass  # the table has not reached this node yet
        time.sleep(0.001)
    return seen


def format_check(result: CheckResult) -> list[str]:
    lines = []
    for cluster, seen in result.visible_ms.items():
        lines.append(f"{cluster}: a write on node 1 became visible on " +
                     ", ".join(f"{n} after {ms:.1f} ms" for n, ms in seen.items()))
        for writer, there in result.elsewhere_ms.get(cluster, {}).items():
            lines.append(f"{cluster}: a write on {writer} became visible on " +
                         ", ".join(f"{n} after {ms:.1f} ms" for n, ms in there.items()))
    lines += list(result.routes.values())
    lines += [f"PROBLEM {p}" for p in result.problems]
    lines.append("check: ok" if result.ok else f"check: {len(result.problems)} problem(s)")
    return lines
