"""A remote lab: real servers benchlib connects to but does not start, and client hosts reached over SSH.

``RemoteLab`` offers what a campaign needs of a lab (the local ``benchlib.lab.lab.Lab`` offers the
same): connections to nodes, the nodes of a cluster (writer first), settings applied and recorded,
a check that every node answers. It never starts, stops or heals a server: a node that stops
answering fails the run and the campaign stops with the node named. Passwords are read from the
environment variables the spec names, when a connection is opened; they are kept in memory only
(the run store refuses to write them).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import pymysql
import pymysql.cursors

from benchlib.errors import BenchlibError, SettingError
from benchlib.remote.spec import RemoteLabSpec, RemoteNode, load_remote_spec


class RemoteLabError(BenchlibError):
    """A remote lab that cannot be used as asked (a node down, a variable unset)."""


def password_from(env: str, who: str) -> str:
    value = os.environ.get(env)
    if not value:
        raise RemoteLabError(f"environment variable {env} is not set (the password of {who})",
                             hint=f"export {env}=... in the shell that runs benchlib (it is never written anywhere)")
    return value


@dataclass
class _Creds:
    passwords: dict[str, str]


class _Layout:
    """The part of a local lab's layout a campaign run uses: a cluster's nodes, writer first."""

    def __init__(self, spec: RemoteLabSpec):
        self.spec = spec

    def cluster_nodes(self, cluster: str) -> list[RemoteNode]:
        nodes = self.spec.clusters[cluster].nodes
        return sorted(nodes, key=lambda n: n.role not in ("primary", "writer"))


class RemoteLab:
    remote = True

    def __init__(self, spec: RemoteLabSpec):
        self.spec = spec
        self.name = spec.name
        self.layout = _Layout(spec)
        self._nodes = {n.name: (c, n) for c, cl in spec.clusters.items() for n in cl.nodes}
        self._settings: dict[str, dict[str, Any]] = {c: {} for c in spec.clusters}
        self._ssh = None
        self._client_facts: dict[str, dict[str, Any]] | None = None
        self._watch: dict[str, Any] = {}
        self._watch_lock = threading.Lock()
        self.creds = _Creds({})

    @classmethod
    def open(cls, spec: RemoteLabSpec | str) -> "RemoteLab":
        return cls(load_remote_spec(spec) if not isinstance(spec, RemoteLabSpec) else spec)

    # -- nodes -----------------------------------------------------------------------
    def node(self, name: str) -> RemoteNode:
        if name not in self._nodes:
            raise RemoteLabError(f"no node {name!r} in remote lab {self.name}",
                                 hint=f"nodes: {', '.join(self._nodes)}")
        return self._nodes[name][1]

    def cluster_of(self, name: str) -> str:
        return self._nodes[name][0]

    def password(self, cluster: str) -> tuple[str, str]:
        """(user, password) for ``cluster``, the password read from its environment variable."""
        creds = self.spec.credentials_of(cluster)
        pw = password_from(creds.password_env, f"{creds.user} on cluster {cluster}")
        self.creds.passwords[creds.password_env] = pw
        return creds.user, pw

    def connect(self, node: RemoteNode | str, *, timeout: float = 5.0, database: str | None = None):
        n = self.node(node if isinstance(node, str) else node.name)
        user, pw = self.password(self.cluster_of(n.name))
        return pymysql.connect(host=n.host, port=n.port, user=user, password=pw, connect_timeout=timeout,
                               read_timeout=60, write_timeout=60, autocommit=True, database=database,
                               cursorclass=pymysql.cursors.DictCursor)

    def pid(self, node) -> None:
        return None  # not a process of this machine

    def is_up(self, node: RemoteNode | str) -> bool:
        """Whether the node answers (one kept connection per node, pinged; reconnects once)."""
        name = node if isinstance(node, str) else node.name
        with self._watch_lock:
            conn = self._watch.get(name)
            if conn is not None:
                try:
                    conn.ping(reconnect=False)
                    return True
                except (pymysql.MySQLError, OSError):
                    self._watch.pop(name, None)
            try:  # no connection yet, or it broke: one fresh attempt decides
                self._watch[name] = self.connect(name, timeout=3)
                return True
            except (pymysql.MySQLError, OSError):
                return False

    def refresh(self) -> None:
        pass

    def broken(self) -> list[str]:
        return [n for n in self._nodes if not self.is_up(n)]

    def heal(self, **_: Any) -> list[str]:
        down = self.broken()
        if down:
            raise RemoteLabError(f"{', '.join(down)} of remote lab {self.name} do not answer; benchlib does not "
                                 "restart remote servers", hint="bring them back, check with benchlib lab check "
                                                                "REMOTE_SPEC, then rerun the campaign (it resumes)")
        return []

    # -- settings ---------------------------------------------------------------------
    def settings(self, cluster: str) -> dict[str, Any]:
        return dict(self._settings[cluster])

    def set(self, settings: dict[str, Any], *, cluster: str | None = None) -> dict[str, dict[str, Any]]:
        """Apply settings with SET GLOBAL on the nodes of ``cluster`` (every cluster having them when None),
        read them back, record them. Restart-only settings follow ``allow_restart`` (remote.settings)."""
        from benchlib.remote import settings as rs

        clusters = [cluster] if cluster else list(self.spec.clusters)
        done: dict[str, dict[str, Any]] = {}
        for c in clusters:
            rules = self.spec.rules(c)
            system = self.spec.clusters[c].system
            for key, raw in settings.items():
                if cluster is None and key not in rules.SETTINGS:
                    continue
                value = rules.parse_setting(key, raw)
                for n in self.layout.cluster_nodes(c):
                    role = "primary" if n.role in ("primary", "writer") else "replica"
                    with self.connect(n) as conn:
                        with conn.cursor() as cur:
                            cur.execute("SHOW GLOBAL VARIABLES")
                            variables = {r["Variable_name"].lower(): r["Value"] for r in cur.fetchall()}
                            stmts = rs.statements(system, key, value, role=role, variables=variables)
                            try:
                                for stmt in stmts:
                                    cur.execute(stmt)
                            except pymysql.MySQLError as exc:
                                raise SettingError(f"{n.name}: {key}={value!r} failed: {exc.args[-1]}",
                                                   hint="the account needs SUPER (MariaDB) or SYSTEM_VARIABLES_ADMIN "
                                                        "(MySQL 8) to change global variables") from None
                            if "RESTART" in stmts:
                                self._wait_back(n.name)
                                continue
                            for var, want in rs.read_back(key, value).items():
                                cur.execute(f"SELECT @@GLOBAL.{var} AS v")
                                got = cur.fetchone()["v"]
                                if str(got) != str(want):
                                    raise SettingError(f"{n.name}: {var} is {got!r} after setting {want!r}")
                self._settings[c][key] = value
                done.setdefault(c, {})[key] = value
        return done

    def _wait_back(self, node: str, timeout: float = 300) -> None:
        time.sleep(2)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.is_up(node):
                return
            time.sleep(1)
        raise RemoteLabError(f"{node} did not come back within {timeout:g} s after RESTART",
                             hint="RESTART needs a supervisor (systemd, mysqld_safe) that starts the server again")

    # -- client hosts ------------------------------------------------------------------
    @property
    def ssh(self):
        """Connections to the client hosts (opened on first use)."""
        if self._ssh is None:
            from benchlib.remote.ssh import SSHClients

            self._ssh = SSHClients(self.spec.clients).open()
        return self._ssh

    def client_facts(self) -> dict[str, dict[str, Any]]:
        """Each client host's sysbench version, kernel and CPU count (read once, for every run's manifest)."""
        if self._client_facts is None:
            facts = {}
            for name, client in self.spec.clients.items():
                rc, out, _ = self.ssh.run(name, f"{client.sysbench} --version; uname -r; nproc; hostname")
                lines = out.splitlines() + [""] * 4
                facts[name] = {"sysbench": lines[0] or None, "kernel": lines[1] or None,
                               "cpus": int(lines[2]) if lines[2].isdigit() else None, "hostname": lines[3] or None}
            self._client_facts = facts
        return self._client_facts

    def down(self) -> None:
        """Close the SSH connections and the watch connections; the servers are left as they are."""
        if self._ssh is not None:
            self._ssh.close()
            self._ssh = None
        with self._watch_lock:
            for conn in self._watch.values():
                try:
                    conn.close()
                except Exception:  # noqa: BLE001 - closing a dead connection
                    pass
            self._watch.clear()
