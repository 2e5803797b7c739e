"""A remote lab: real servers benchlib connects to but does not start, and client hosts reached over SSH.

``RemoteLab`` offers what a campaign needs of a lab (the local ``benchlib.lab.lab.LocalLab`` offers the
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
from pathlib import Path
from typing import Any, Callable

import pymysql
import pymysql.cursors

from benchlib.errors import LabError
from benchlib.lab.base import NodeInfo, NodeStatus, Progress, quiet
from benchlib.remote.spec import RemoteLabSpec, RemoteNode
from benchlib.systems.base import get as get_system
from benchlib.manifest import ClusterFacts
from benchlib.systems.settings import ClusterTarget, SettingRules, apply_setting, plan_settings

__all__ = ["RemoteLab", "RemoteLabError", "password_from"]


class RemoteLabError(LabError):
    """A remote lab that cannot be used as asked (a node down, a variable unset)."""


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

    kind = "remote"

    def __init__(self, spec: RemoteLabSpec):
        self.spec = spec
        self.name = spec.name
        self._nodes = {n.name: (c, n) for c, cl in spec.clusters.items() for n in cl.nodes}
        self._settings: dict[str, dict[str, Any]] = {c: {} for c in spec.clusters}
        self._ssh = None
        self._server_ssh = None  # connections to the server hosts with ssh access (host metrics only)
        self._server_ssh_failed: dict[str, str] = {}  # host -> why it cannot be reached (tried once per lab)
        self._server_ssh_lock = threading.Lock()
        self._client_facts: dict[str, dict[str, Any]] | None = None
        self._watch: dict[str, Any] = {}
        self._watch_lock = threading.Lock()

    # -- nodes -----------------------------------------------------------------------
    def clusters(self) -> list[str]:
        return list(self.spec.clusters)

    def describe(self) -> str:
        where = (f"{', '.join(self.spec.clients)} as client hosts" if self.spec.clients
                 else "sysbench on this host")
        return f"remote lab {self.name} ({len(self._nodes)} servers, {where})"

    def node(self, name: str) -> RemoteNode:
        if name not in self._nodes:
            raise RemoteLabError(f"no node {name!r} in remote lab {self.name}",
                                 hint=f"nodes: {', '.join(self._nodes)}")
        return self._nodes[name][1]

    def cluster_of(self, name: str) -> str:
        return self._nodes[name][0]

    def cluster_nodes(self, cluster: str) -> list[NodeInfo]:
        """The nodes of ``cluster``, the one that takes the writes first."""
        system = self.system(cluster)
        nodes = sorted(self.spec.clusters[cluster].nodes, key=lambda n: n.role != self.spec.clusters[cluster].facts.writer_role)
        return [NodeInfo(n.name, cluster, n.role, system, n.host, n.port) for n in nodes]

    def system(self, cluster: str) -> str:
        return self.spec.clusters[cluster].system

    def password(self, cluster: str) -> tuple[str, str]:
        """(user, password) for ``cluster``, the password read from its environment variable."""
        creds = self.spec.credentials_of(cluster)
        if creds.password_file:
            return creds.user, password_in(Path(creds.password_file), f"{creds.user} on cluster {cluster}")
        assert creds.password_env is not None
        return creds.user, password_from(creds.password_env, f"{creds.user} on cluster {cluster}")

    def secrets(self) -> list[str]:
        """Every cluster's password, read now from the environment (an unset variable raises here)."""
        return sorted({self.password(c)[1] for c in self.spec.clusters})

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

    def refresh(self) -> None:
        pass

    def broken(self) -> list[str]:
        return [n for n in self._nodes if not self.is_up(n)]

    def heal(self, *, timeout: float = 120.0, progress: Progress = quiet) -> list[str]:
        """A remote lab is never healed by benchlib: nodes that do not answer are named, with what to do."""
        down = self.broken()
        if down:
            raise RemoteLabError(f"{', '.join(down)} of remote lab {self.name} do not answer; benchlib does not "
                                 "restart remote servers", hint="bring them back, check with benchlib lab check "
                                                                "REMOTE_SPEC, then rerun the campaign (it resumes)")
        return []

    # -- status ------------------------------------------------------------------------
    def status(self) -> list[NodeStatus]:
        out = []
        for c in self.spec.clusters:
            system = get_system(self.system(c))
            for i, n in enumerate(self.cluster_nodes(c)):
                detail: dict[str, Any] = {}
                up = True
                try:
                    with self.connect(n.name, timeout=3) as conn:
                        detail = system.node_status(conn, "primary" if i == 0 else "replica")
                except (pymysql.MySQLError, OSError) as exc:
                    up = isinstance(exc, pymysql.MySQLError) and exc.args and exc.args[0] not in (2003, 2013)
                    detail = {"error": str(exc.args[-1] if exc.args else exc)}
                out.append(NodeStatus(n.name, c, self.spec.clusters[c].topology, n.role, None, n.port, None,
                                      bool(up), detail, n.system, n.host))
        return out

    def check(self, *, clients: bool = True):
        """Connectivity, privileges, replication health, clocks and client hosts (``benchlib.remote.check``)."""
        from benchlib.remote.check import check_remote

        return check_remote(self, clients=clients)

    # -- settings ---------------------------------------------------------------------
    def setting_rules(self, cluster: str) -> SettingRules:
        return self.spec.setting_rules(cluster)

    def settings(self, cluster: str) -> dict[str, Any]:
        return dict(self._settings[cluster])

    def set(self, settings: dict[str, Any], *, cluster: str | None = None) -> dict[str, dict[str, Any]]:
        """Apply settings with SET GLOBAL on the nodes of ``cluster`` (every cluster having them when None) by the
        rules every lab shares (``benchlib.systems.settings.plan_settings``), read them back, record them.
        Restart-only settings follow ``allow_restart``."""
        plan = plan_settings(settings, {c: self.setting_rules(c) for c in self.clusters()}, cluster, self.name)
        done: dict[str, dict[str, Any]] = {}
        for c, key, value in plan:
            target = ClusterTarget.of(c, [n.name for n in self.cluster_nodes(c)], lambda name: self.connect(name),
                                      on_restart=self._wait_back,
                                      hint="the account needs SUPER (MariaDB) or SYSTEM_VARIABLES_ADMIN (MySQL 8) "
                                           "to change global variables")
            apply_setting(target, self.setting_rules(c).settings[key], value)
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

    # -- what a run needs ---------------------------------------------------------------
    def heal_report(self) -> list[str]:
        return []

    # -- capabilities: a remote lab's servers are not benchlib's to kill, promote or put a proxy in front of ----------
    def faults(self) -> None:
        return None

    def proxy(self) -> None:
        return None

    def lacks(self, capability: str) -> str:
        return self.spec.lacks(capability)

    def load_driver(self):
        """sysbench on the client hosts together; on this host when the spec has no [clients]."""
        if self.spec.clients:
            from benchlib.remote.load import SSHDriver

            return SSHDriver(self)
        from pathlib import Path

        from benchlib.lab.layout import lab_root
        from benchlib.sysbench.driver import LocalDriver

        return LocalDriver(self.endpoint, Path(lab_root()) / ".remote" / self.name / "loads")

    def extra_probes(self, nodes: list[str], log, clock: Callable[[], float]) -> list:
        """Every server's clock offset from the sampler (``benchlib.sampling.clock.ClockProbe``), and the metrics of
        every host that runs the load (each client host over its SSH connection, or this host without clients) and
        of the run's server hosts that the spec gives SSH access to (``ssh`` on a node)."""
        from benchlib.sampling.clock import ClockProbe
        from benchlib.sampling.host import HostProbe

        hosts = [HostProbe(log, clock, name=name, reader=self._host_reader(name)) for name in self.spec.clients]
        addresses = {self._nodes[n][1].host for n in nodes if n in self._nodes}
        servers = [HostProbe(log, clock, name=name, reader=self._server_host_reader(name))
                   for name, h in self.spec.server_hosts().items() if h.host in addresses]
        if not hosts:  # the load runs here: this host, and what its other processes took from it
            from benchlib.sampling.foreign import ForeignCpuProbe

            # servers of this lab on this very host (a loopback address) are the lab's, not neighbours
            here = any(_is_this_host(a) for a in addresses)
            hosts = [HostProbe(log, clock), ForeignCpuProbe(log, clock, markers=SERVER_COMMANDS if here else ())]
        return [ClockProbe(self.connect, nodes, log, clock), *hosts, *servers]

    def _server_host_reader(self, name: str):
        """/proc files of the server host first named by node ``name``, over an SSH connection opened on first use
        (one that cannot be opened is not tried again by this lab: the probe warns once per run, at once)."""
        from benchlib.sampling.host import shell_command, split_output

        def read(paths: tuple[str, ...]) -> dict[str, str | None]:
            with self._server_ssh_lock:
                if name in self._server_ssh_failed:
                    raise OSError(self._server_ssh_failed[name])
                if self._server_ssh is None:
                    from benchlib.remote.ssh import SSHClients

                    self._server_ssh = SSHClients(self.spec.server_hosts(), kind="server host")
                if name not in self._server_ssh.conns:
                    try:
                        self._server_ssh.open([name], keep=True)
                    except Exception as exc:  # noqa: BLE001 - reported by the probe as a warning
                        self._server_ssh_failed[name] = str(exc).splitlines()[0]
                        raise
            rc, out, err = self._server_ssh.run(name, shell_command(paths), timeout=5)
            return split_output(out, paths)
        return read

    def _host_reader(self, name: str):
        """/proc files of client host ``name``, read with one command over its SSH connection."""
        from benchlib.sampling.host import shell_command, split_output

        def read(paths: tuple[str, ...]) -> dict[str, str | None]:
            rc, out, err = self.ssh.run(name, shell_command(paths), timeout=5)
            return split_output(out, paths)
        return read

    def heartbeat_triggers(self, cluster: str) -> bool:
        return False  # they need privileges a benchmark account should not have

    def facts(self, cluster: str) -> ClusterFacts:
        c = self.spec.clusters[cluster]
        sites = self.spec.sites
        nodes = []
        for n in self.cluster_nodes(cluster):
            site = self.spec.site_of(n.name)
            nodes.append({"name": n.name, "role": n.role, "host": n.host, "port": n.port, "site": site,
                          "rtt_ms": sites[site].rtt_ms if site else (0.0 if sites else None)})
        return ClusterFacts(system=c.system, topology=c.topology, placement="remote", mode=c.mode, nodes=nodes,
                            durability=self._settings[cluster].get("durability"))

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
        """A remote lab is never taken down: this only closes connections."""
        self.close()

    def close(self) -> None:
        """Close the SSH connections and the watch connections; the servers are left as they are."""
        for ssh in (self._ssh, self._server_ssh):
            if ssh is not None:
                ssh.close()
        self._ssh = self._server_ssh = None
        with self._watch_lock:
            for conn in self._watch.values():
                try:
                    conn.close()
                except Exception:  # noqa: BLE001 - closing a dead connection
                    pass
            self._watch.clear()


#: command-line words of the servers a remote lab reaches: when one of its servers is on this host, processes whose
#: command line holds one are the lab's own load, not interference (``ForeignCpuProbe``)
SERVER_COMMANDS = ("mysqld", "mariadbd", "garbd")


def _is_this_host(address: str) -> bool:
    """Whether ``address`` is this machine: a loopback address, localhost, or one of its own names."""
    import ipaddress
    import socket

    if address in ("localhost", socket.gethostname(), socket.getfqdn()):
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False
