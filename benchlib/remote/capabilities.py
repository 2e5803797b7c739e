"""A remote lab's three capabilities every lab has (``benchlib.lab.base``), each holding its ``RemoteLab`` (this
module is imported by it): its health (``RemoteHealth``: nodes that answer, a heal that refuses and names them,
status, the remote check), its runtime settings (``RemoteTuning``: SET GLOBAL on every node, read back, kept in
memory for the runs' manifests) and what a run takes from it (``RemoteHooks``: sysbench on the client hosts or here,
the run's facts and secrets, server clocks and host metrics over SSH). A remote lab has no faults and no proxy:
its servers are not benchlib's (a provisioned lab's are: ``benchlib.provision.lab``)."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

import pymysql

from benchlib.lab.base import NodeStatus, Progress, quiet
from benchlib.manifest import ClusterFacts, NodeFacts
from benchlib.remote.errors import RemoteLabError
from benchlib.systems.base import get as get_system
from benchlib.systems.settings import ClusterTarget, SettingRules, apply_setting, plan_settings
from benchlib.schema import Cell

__all__ = ["RemoteHealth", "RemoteHooks", "RemoteTuning", "SERVER_COMMANDS"]


class RemoteHealth:
    """``benchlib.lab.base.Health`` of a remote lab: it never restarts a server."""

    def __init__(self, lab: Any):
        self.lab = lab

    def describe(self) -> str:
        where = (f"{', '.join(self.lab.spec.clients)} as client hosts" if self.lab.spec.clients
                 else "sysbench on this host")
        return f"remote lab {self.lab.name} ({len(self.lab.spec.nodes())} servers, {where})"

    def is_up(self, node: Any) -> bool:
        return bool(self.lab.is_up(node))

    def broken(self) -> list[str]:
        return [n for n in self.lab.spec.nodes() if not self.lab.is_up(n)]

    def heal(self, *, timeout: float = 120.0, progress: Progress = quiet) -> list[str]:
        """A remote lab is never healed by benchlib: nodes that do not answer are named, with what to do."""
        down = self.broken()
        if down:
            raise RemoteLabError(f"{', '.join(down)} of remote lab {self.lab.name} do not answer; benchlib does not "
                                 "restart remote servers", hint="bring them back, check with benchlib lab check "
                                                                "REMOTE_SPEC, then rerun the campaign (it resumes)")
        return []

    def heal_report(self) -> list[str]:
        return []

    def status(self) -> list[NodeStatus]:
        lab = self.lab
        out = []
        for c, cluster in lab.spec.clusters.items():
            system = get_system(cluster.system)
            for i, n in enumerate(lab.cluster_nodes(c)):
                detail: dict[str, object] = {}
                up = True
                try:
                    with lab.connect(n.name, timeout=3) as conn:
                        detail = system.node_status(conn, "primary" if i == 0 else "replica")
                except (pymysql.MySQLError, OSError) as exc:
                    up = isinstance(exc, pymysql.MySQLError) and exc.args and exc.args[0] not in (2003, 2013)
                    detail = {"error": str(exc.args[-1] if exc.args else exc)}
                out.append(NodeStatus(n.name, c, cluster.topology, n.role, None, n.port, None, bool(up), detail,
                                      n.system, n.host))
        return out

    def check(self, *, clients: bool = True) -> Any:
        """Connectivity, privileges, replication health, clocks and client hosts (``benchlib.remote.check``)."""
        from benchlib.remote.check import check_remote

        return check_remote(self.lab, clients=clients)


class RemoteTuning:
    """``benchlib.lab.base.Tuning`` of a remote lab: SET GLOBAL on its nodes, read back and kept for the manifests."""

    def __init__(self, lab: Any):
        self.lab = lab
        self._settings: dict[str, dict[str, Cell]] = {c: {} for c in lab.spec.clusters}

    def setting_rules(self, cluster: str) -> SettingRules:
        return self.lab.spec.setting_rules(cluster)

    def settings(self, cluster: str) -> dict[str, Cell]:
        return dict(self._settings[cluster])

    def refresh(self) -> None:
        """Nothing to read again: a remote lab's settings are what this process applied."""

    def set(self, settings: dict[str, Cell], *, cluster: str | None = None) -> dict[str, dict[str, Cell]]:
        """Apply settings with SET GLOBAL on the nodes of ``cluster`` (every cluster having them when None) by the
        rules every lab shares (``benchlib.systems.settings.plan_settings``), read them back, record them.
        Restart-only settings follow ``allow_restart``."""
        lab = self.lab
        plan = plan_settings(settings, {c: self.setting_rules(c) for c in lab.spec.clusters}, cluster, lab.name)
        done: dict[str, dict[str, Cell]] = {}
        for c, key, value in plan:
            target = ClusterTarget.of(c, [n.name for n in lab.cluster_nodes(c)], lambda name: lab.connect(name),
                                      on_restart=self._wait_back,
                                      hint="the account needs SUPER (MariaDB) or SYSTEM_VARIABLES_ADMIN (MySQL 8) "
                                           "to change global variables")
            setting = self.setting_rules(c).settings[key]
            apply_setting(target, setting, value)
            if setting.rejoins:
                self._until_whole(c)
            self._settings[c][key] = value
            done.setdefault(c, {})[key] = value
        return done

    def _until_whole(self, cluster: str, timeout: float = 300) -> None:
        """After a setting that has nodes leave their cluster and join it again: until every node is ready by its
        system's own check (a group member ONLINE in a full group), as a local lab waits."""
        system = get_system(self.lab.spec.system_of(cluster))
        nodes = self.lab.cluster_nodes(cluster)
        deadline = time.monotonic() + timeout
        while True:
            problems: list[str] = []
            for i, n in enumerate(nodes):
                with self.lab.connect(n.name) as conn:
                    problems += system.readiness(conn, i == 0, len(nodes), n.name)
            if not problems:
                return
            if time.monotonic() > deadline:
                raise RemoteLabError(f"{cluster}: not whole again {timeout:g} s after a setting that has its members "
                                     f"rejoin: {problems[0]}", hint="benchlib lab check says what each node lacks")
            time.sleep(0.2)

    def _wait_back(self, node: str, timeout: float = 300) -> None:
        time.sleep(2)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.lab.is_up(node):
                return
            time.sleep(1)
        raise RemoteLabError(f"{node} did not come back within {timeout:g} s after RESTART",
                             hint="RESTART needs a supervisor (systemd, mysqld_safe) that starts the server again")


class RemoteHooks:
    """``benchlib.lab.base.RunHooks`` of a remote lab."""

    def __init__(self, lab: Any):
        self.lab = lab
        self._server_ssh: Any = None  # connections to the server hosts with ssh access (host metrics only)
        self._server_ssh_failed: dict[str, str] = {}  # host -> why it cannot be reached (tried once per lab)
        self._server_ssh_lock = threading.Lock()

    def close(self) -> None:
        """Close the connections to the server hosts (the lab closes its own)."""
        with self._server_ssh_lock:
            if self._server_ssh is not None:
                self._server_ssh.close()
            self._server_ssh = None

    def secrets(self) -> list[str]:
        """Every cluster's password, read now from the environment (an unset variable raises here)."""
        return sorted({self.lab.password(c)[1] for c in self.lab.spec.clusters})

    def load_driver(self) -> Any:
        """sysbench on the client hosts together; on this host when the spec has no [clients]."""
        if self.lab.spec.clients:
            from benchlib.remote.load import SSHDriver

            return SSHDriver(self.lab)
        from pathlib import Path

        from benchlib.lab.layout import lab_root
        from benchlib.sysbench.driver import LocalDriver

        return LocalDriver(self.lab.endpoint, Path(lab_root()) / ".remote" / self.lab.name / "loads")

    def extra_probes(self, nodes: list[str], log, clock: Callable[[], float]) -> list:
        """Every server's clock offset from the sampler (``benchlib.sampling.clock.ClockProbe``), and the metrics of
        every host that runs the load (each client host over its SSH connection, or this host without clients) and
        of the run's server hosts that the spec gives SSH access to (``ssh`` on a node)."""
        from benchlib.sampling.clock import ClockProbe
        from benchlib.sampling.host import HostProbe
        from benchlib.sampling.probe import Probe

        lab = self.lab
        hosts: list[Probe] = [HostProbe(log, clock, name=name, reader=self._host_reader(name))
                              for name in lab.spec.clients]
        addresses = {lab.node(n).host for n in nodes if n in lab.spec.nodes()}
        servers = [HostProbe(log, clock, name=name, reader=self._server_host_reader(name))
                   for name, h in lab.spec.server_hosts().items() if h.host in addresses]
        if not hosts:  # the load runs here: this host, and what its other processes took from it
            from benchlib.sampling.foreign import ForeignCpuProbe

            # servers of this lab on this very host (a loopback address) are the lab's, not neighbours
            here = any(_is_this_host(a) for a in addresses)
            hosts = [HostProbe(log, clock), ForeignCpuProbe(log, clock, markers=SERVER_COMMANDS if here else ())]
        return [ClockProbe(lab.connect, nodes, log, clock), *hosts, *servers]

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

                    self._server_ssh = SSHClients(self.lab.spec.server_hosts(), kind="server host")
                if name not in self._server_ssh.conns:
                    try:
                        self._server_ssh.open([name], keep=True)
                    except Exception as exc:  # noqa: BLE001 - reported by the probe as a warning
                        self._server_ssh_failed[name] = str(exc).splitlines()[0]
                        raise
                ssh = self._server_ssh
            rc, out, err = ssh.run(name, shell_command(paths), timeout=5)
            return split_output(out, paths)
        return read

    def _host_reader(self, name: str):
        """/proc files of client host ``name``, read with one command over its SSH connection."""
        from benchlib.sampling.host import shell_command, split_output

        def read(paths: tuple[str, ...]) -> dict[str, str | None]:
            rc, out, err = self.lab.ssh.run(name, shell_command(paths), timeout=5)
            return split_output(out, paths)
        return read

    def heartbeat_triggers(self, cluster: str) -> bool:
        return False  # they need privileges a benchmark account should not have

    def client_connect(self):
        return self.lab.connect  # the lab's account is the benchmark's already

    def facts(self, cluster: str) -> ClusterFacts:
        spec = self.lab.spec
        c = spec.clusters[cluster]
        sites = spec.sites
        nodes = []
        for n in self.lab.cluster_nodes(cluster):
            site = spec.site_of(n.name)
            nodes.append(NodeFacts(name=n.name, role=n.role, host=n.host, port=n.port, site=site,
                                   rtt_ms=sites[site].rtt_ms if site else (0.0 if sites else None)))
        return ClusterFacts(system=c.system, topology=c.topology, placement="remote", mode=c.mode, nodes=nodes,
                            durability=self.lab.tuning.settings(cluster).get("durability"))


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
