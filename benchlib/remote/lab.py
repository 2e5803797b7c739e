"""A remote lab: real servers benchlib connects to but does not start, and client hosts reached over SSH.

``RemoteLab`` offers what a campaign needs of a lab (the local ``benchlib.lab.lab.LocalLab`` offers the
same): connections to nodes, the nodes of a cluster (writer first), and its capabilities
(``benchlib.remote.capabilities``): settings applied and recorded, a check that every node answers. It never starts, stops or heals a server: a node that stops
answering fails the run and the campaign stops with the node named. Passwords are read from the
environment variables the spec names, when a connection is opened; they are kept in memory only
(the run store refuses to write them).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pymysql
import pymysql.cursors

from benchlib.remote.capabilities import RemoteHealth, RemoteHooks, RemoteTuning
from benchlib.remote.errors import RemoteLabError
from benchlib.lab.base import FaultControl, NodeInfo, ProxyControl
from benchlib.remote.spec import RemoteLabSpec, RemoteNode

__all__ = ["RemoteLab", "RemoteLabError", "password_from"]


def password_from(env: str, who: str) -> str:
    value = os.environ.get(env)
    if not value:
        raise RemoteLabError(f"environment variable {env} is not set (the password of {who})",
                             hint=f"export {env}=... in the shell that runs benchlib (it is never written anywhere)")
    return value


def password_in(path: Path, who: str) -> str:
    """The password in a file only its owner may read (mode 600)."""
    try:
        mode = path.stat().st_mode & 0o777
        text = path.read_text().strip()
    except OSError as exc:
        raise RemoteLabError(f"cannot read {path}, the password file of {who} ({exc.strerror})",
                             hint="provision the lab again, or name the password by environment variable "
                                  "(password_env)") from None
    if mode & 0o077:
        raise RemoteLabError(f"{path} (the password of {who}) is readable by others (mode {mode:o})",
                             hint=f"chmod 600 {path}")
    if not text:
        raise RemoteLabError(f"{path} (the password of {who}) is empty")
    return text


class RemoteLab:
    """Servers benchlib connects to (a ``benchlib.lab.base.Lab``); see the module docstring."""

    health: RemoteHealth
    tuning: RemoteTuning
    hooks: RemoteHooks

    def __init__(self, spec: RemoteLabSpec):
        self.spec = spec
        self.name = spec.name
        self._nodes = {n.name: (c, n) for c, cl in spec.clusters.items() for n in cl.nodes}
        self._ssh = None
        self._client_facts: dict[str, dict[str, Any]] | None = None
        self._watch: dict[str, Any] = {}
        self._watch_lock = threading.Lock()
        self.health = RemoteHealth(self)
        self.tuning = RemoteTuning(self)
        self.hooks = RemoteHooks(self)

    # -- nodes -----------------------------------------------------------------------
    def node(self, name: str) -> RemoteNode:
        if name not in self._nodes:
            raise RemoteLabError(f"no node {name!r} in remote lab {self.name}",
                                 hint=f"nodes: {', '.join(self._nodes)}")
        return self._nodes[name][1]

    def cluster_of(self, name: str) -> str:
        return self._nodes[name][0]

    def cluster_nodes(self, cluster: str) -> list[NodeInfo]:
        """The nodes of ``cluster``, the one that takes the writes first."""
        system = self.spec.clusters[cluster].system
        nodes = sorted(self.spec.clusters[cluster].nodes, key=lambda n: n.role != self.spec.clusters[cluster].facts.writer_role)
        return [NodeInfo(n.name, cluster, n.role, system, n.host, n.port) for n in nodes]

    def password(self, cluster: str) -> tuple[str, str]:
        """(user, password) for ``cluster``, the password read from its environment variable."""
        creds = self.spec.credentials_of(cluster)
        if creds.password_file:
            return creds.user, password_in(Path(creds.password_file), f"{creds.user} on cluster {cluster}")
        assert creds.password_env is not None
        return creds.user, password_from(creds.password_env, f"{creds.user} on cluster {cluster}")

    def endpoint(self, node: str):
        from benchlib.sysbench.driver import Endpoint

        n = self.node(node)
        user, pw = self.password(self.cluster_of(node))
        return Endpoint(n.host, n.port, user, pw)

    def connect(self, node: RemoteNode | NodeInfo | str, *, timeout: float = 5.0, database: str | None = None):
        n = self.node(node if isinstance(node, str) else node.name)
        user, pw = self.password(self.cluster_of(n.name))
        return pymysql.connect(host=n.host, port=n.port, user=user, password=pw, connect_timeout=timeout,
                               read_timeout=60, write_timeout=60, autocommit=True, database=database,
                               cursorclass=pymysql.cursors.DictCursor)

    def is_up(self, node: RemoteNode | NodeInfo | str) -> bool:
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

    # -- capabilities: a remote lab's servers are not benchlib's to kill, promote or put a proxy in front of ----------
    def faults(self) -> FaultControl | None:
        return None

    def proxy(self) -> ProxyControl | None:
        return None

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

    def close(self, *, down: bool = False) -> None:
        """Close the SSH connections and the watch connections; the servers are left as they are (a remote lab is
        never taken down: ``down`` changes nothing)."""
        if self._ssh is not None:
            self._ssh.close()
        self._ssh = None
        self.hooks.close()
        with self._watch_lock:
            for conn in self._watch.values():
                try:
                    conn.close()
                except Exception:  # noqa: BLE001 - closing a dead connection
                    pass
            self._watch.clear()
