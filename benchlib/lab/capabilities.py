"""The embedded lab's capabilities beyond the core ``Lab`` (``benchlib.lab.base``), each holding its ``LocalLab`` (this
module is imported by it).

- The three every lab has: its health (``LocalHealth``: nodes up, what is broken, the heal, status, check), its
  runtime settings (``LocalTuning``: applied by its topologies, kept in its record so a heal applies them again) and
  what a run takes from it (``LocalHooks``: sysbench here, the run's facts and secrets, the process, host and
  foreign-CPU probes).
- The two only some labs have: faults (``benchlib.lab.node_hosts.HostFaults`` over ``LocalHosts``: kill, freeze,
  cut, isolate, promote, rejoin its own servers, as a provisioned lab does over SSH) and a proxy in front of a
  cluster (``LocalProxy``: HAProxy). ``LocalLab.faults()`` and ``LocalLab.proxy()`` give them; a
  remote lab gives None and its spec says why (``lacks``).
"""

from __future__ import annotations

import signal
from typing import Any

import pymysql

from benchlib.errors import BenchlibError, LabError
from benchlib.lab import faults, healing, isolation, procs, sql, state, wan
from benchlib.lab.base import NodeStatus, Progress
from benchlib.lab.base import quiet as _quiet
from benchlib.manifest import ClusterFacts, NodeFacts
from benchlib.systems.settings import SettingRules, plan_settings
from benchlib.schema import Cell

__all__ = ["LocalHealth", "LocalHosts", "LocalHooks", "LocalProxy", "LocalTuning"]


class LocalHealth:
    """``benchlib.lab.base.Health`` of the embedded lab: it restarts its own servers."""

    def __init__(self, lab: Any):
        self.lab = lab
        self._healed_how: list[str] = []  # what the last heal did, in words (heal_report)

    def describe(self) -> str:
        return f"lab {self.lab.name} ({len(self.lab.layout.nodes)} servers on this machine)"

    def is_up(self, node: Any) -> bool:
        return bool(self.lab.is_up(node))

    def status(self) -> list[NodeStatus]:
        lab = self.lab
        out = []
        for node in lab.layout.nodes.values():
            up = lab.is_up(node)
            detail: dict[str, object] = {}
            if up:
                try:
                    with sql.connect(node, lab.creds, timeout=2) as conn:
                        detail = lab.topology(node.cluster).node_status(node, conn)
                except pymysql.err.MySQLError as exc:
                    detail = {"error": str(exc.args[-1] if exc.args else exc)}
            out.append(NodeStatus(node.name, node.cluster, node.topology, node.role, node.site, node.port,
                                  lab.pid(node) if up else None, up, detail, lab.spec.system_of(node.cluster),
                                  node.listen_host))
        return out

    def broken(self) -> list[str]:
        """What heal would repair, cheaply (no connections): nodes not running, WAN links down, clusters whose
        replica a fault run promoted, and why the last heal failed."""
        lab = self.lab
        out = [n.name for n in lab.layout.nodes.values() if not lab.is_up(n)]
        if lab.layout.sites and not wan.is_up(lab.layout, lab.record.shaper, lab.record.link_pid):
            out.append("WAN links")
        if lab.layout.sites and isolation.leftovers(lab.layout):
            out.append("nodes cut off from their cluster")
        out += [f"{c} (promoted {n})" for c, n in lab.record.promoted.items()]
        out += [f"{c} (roles after a rejoin)" for c in lab.record.moved]
        if lab.record.broken:
            out.append(f"the last heal failed: {lab.record.broken}")
        return out

    def heal(self, *, timeout: float = 120.0, progress: Progress = _quiet) -> list[str]:
        """Restart every node that is not running and wait until it has rejoined; give a promoted cluster its
        original primary back. A heal that fails marks the lab broken with the reason (``broken``) until one
        succeeds."""
        try:
            self._healed_how = []
            restarted, self._healed_how = healing.heal(self.lab, timeout, progress)
        except BenchlibError as exc:
            self._mark_broken(exc.message)
            raise
        if self.lab.record.broken:
            self._mark_broken("")
        return restarted

    def _mark_broken(self, reason: str) -> None:
        with state.update(self.lab.dir) as rec:
            rec.broken = reason
        self.lab.record.broken = reason

    def heal_report(self) -> list[str]:
        return list(self._healed_how)

    def check(self) -> Any:
        from benchlib.lab.check import check

        return check(self.lab)


class LocalTuning:
    """``benchlib.lab.base.Tuning`` of the embedded lab: settings applied by its topologies and kept in its record,
    so a heal applies them again."""

    def __init__(self, lab: Any):
        self.lab = lab

    def setting_rules(self, cluster: str) -> SettingRules:
        return self.lab.spec.setting_rules(cluster)

    def settings(self, cluster: str) -> dict[str, Cell]:
        return dict(self.lab.record.settings.get(cluster, {}))

    def refresh(self) -> None:
        self.lab.record = state.read(self.lab.dir) or self.lab.record

    def set(self, settings: dict[str, Cell], *, cluster: str | None = None) -> dict[str, dict[str, Cell]]:
        """Apply runtime settings to every cluster that has them (or to ``cluster``), without restart, by the rules
        every lab shares (``benchlib.systems.settings.plan_settings``); each is read back and recorded, so heal
        applies it again. Returns {cluster: {setting: value}}."""
        lab = self.lab
        plan = plan_settings(settings, {c: self.setting_rules(c) for c in lab.spec.clusters}, cluster, lab.name)
        applied: dict[str, dict[str, Cell]] = {}
        for c, key, value in plan:
            topo = lab.topology(c)
            topo.apply_setting(key, value, topo.nodes)
            applied.setdefault(c, {})[key] = value
            with state.update(lab.dir) as rec:
                _record_setting(rec.settings, c, key, value)
            _record_setting(lab.record.settings, c, key, value)
        return applied


def _record_setting(settings: dict[str, dict[str, Cell]], cluster: str, key: str, value: Cell) -> None:
    """Remember a setting last in order: heal re-applies settings in the order they were made, so a
    later ``sync_binlog`` still wins over an earlier ``durability`` and the other way round."""
    mine = settings.setdefault(cluster, {})
    mine.pop(key, None)
    mine[key] = value


class LocalHooks:
    """``benchlib.lab.base.RunHooks`` of the embedded lab."""

    def __init__(self, lab: Any):
        self.lab = lab

    def secrets(self) -> list[str]:
        return list(self.lab.creds.passwords.values())

    def load_driver(self) -> Any:
        """sysbench on this machine, as the lab's ``bench`` account over TCP."""
        from benchlib.sysbench.driver import Endpoint, LocalDriver

        lab = self.lab

        def endpoint(name: str) -> Endpoint:
            n = lab.node(name)
            return Endpoint(n.listen_host, n.port, "bench", lab.creds.password("bench"))

        return LocalDriver(endpoint, lab.dir / "loads", cpus=lambda node: lab.node(node).cpus)

    def extra_probes(self, nodes: list[str], log, clock) -> list:
        """Every local server process (CPU, context switches, storage I/O, threads, memory), this host (CPU per
        core, load, pressure, disks, network) and the CPU its other processes took (``ForeignCpuProbe``: neither
        the lab's, whose command lines hold the lab directory, nor benchlib's own)."""
        from benchlib.sampling.foreign import ForeignCpuProbe
        from benchlib.sampling.host import HostProbe, ProcessProbe

        return [ProcessProbe({n: p for n in nodes if (p := self.lab.pid(n))}, log, clock), HostProbe(log, clock),
                ForeignCpuProbe(log, clock, markers=(str(self.lab.dir),))]

    def heartbeat_triggers(self, cluster: str) -> bool:
        return bool(self.lab.topology(cluster).heartbeat_triggers())

    def client_connect(self):
        lab = self.lab
        return lambda node, **kw: lab.connect(node, user="bench", tcp=True, **kw)

    def facts(self, cluster: str) -> ClusterFacts:
        lab = self.lab
        c = lab.spec.clusters[cluster]
        nodes = []
        for n in lab.layout.cluster_nodes(cluster):
            site = lab.layout.sites.get(n.site) if n.site else None
            nodes.append(NodeFacts(name=n.name, role=n.role, host=n.listen_host, port=n.port, site=n.site,
                                   rtt_ms=site.rtt_ms if site else 0.0))
        return ClusterFacts(system=lab.spec.system_of(cluster), topology=c.topology, placement="local", nodes=nodes,
                            durability=lab.spec.settings_for(cluster).durability,
                            binlog=bool(getattr(c, "binlog", True)), server=lab.server(cluster).label,
                            cpus=lab.layout.cluster_nodes(cluster)[0].cpus)



class LocalHosts:
    """``benchlib.lab.node_hosts.NodeHosts`` of the embedded lab: its own server processes (signalled once their
    command line is checked), its sites' network namespaces and links, its datadirs."""

    local_files = True

    def __init__(self, lab: Any):  # a LocalLab (this module is imported by it)
        self.lab = lab

    def refusal(self, cluster: str, kind: str, nodes: list[str], site: str | None) -> str | None:
        return None  # what this lab cannot do, its spec says (a node on loopback has no link to cut)

    def signal(self, node: str, what: str) -> bool:
        sig = {"kill": signal.SIGKILL, "freeze": signal.SIGSTOP, "thaw": signal.SIGCONT}[what]
        pid = self.lab.record.pids.get(node)
        return bool(pid) and procs.signal_if_ours(pid, self.lab.layout.nodes[node].marker, sig)

    def isolate(self, node: str) -> None:
        isolation.isolate(self.lab.layout, node)

    def let_back(self, node: str) -> None:
        layout, pid = self.lab.layout, self.lab.record.pids.get(node)
        if not procs.is_running(pid, layout.nodes[node].marker):  # killed while cut off: a lost host
            isolation.forget(layout, node)
        isolation.release(layout, node)

    def link(self, site: str, up: bool) -> None:
        faults.set_site_link(self.lab.layout, site, up=up)

    def stop(self, nodes: list[Any], timeout: float) -> None:
        lab = self.lab
        running = [(p, n.marker) for n in nodes if (p := lab.pid(n)) and lab.is_up(n)]
        procs.stop(running, graceful=True, timeout=timeout)
        procs.wait_gone([p for n in nodes if (p := lab.pid(n))], 30)

    def start(self, nodes: list[Any], timeout: float) -> None:
        self.lab.start_nodes(nodes)
        self.lab.wait_connectable(nodes, timeout, "restart")

    def gone(self, node: Any, timeout: float) -> None:
        procs.wait_gone([p for p in [self.lab.pid(node)] if p], timeout)

    def copy(self, src: Any, dst: Any) -> None:
        faults.copy_data(src, dst, self.lab.record.run_as)

    def is_up(self, node: Any) -> bool:
        return bool(self.lab.is_up(node))


class LocalProxy:
    """``benchlib.lab.base.ProxyControl`` of the embedded lab: HAProxy, with the load's account."""

    def __init__(self, lab: Any):  # a LocalLab (this module is imported by it)
        self.lab = lab

    def front(self, cluster: str, serving, kind: str = "haproxy"):
        if kind == "router":  # the group's own Router (benchlib.lab.router): it follows the group by itself
            from benchlib.lab.router import RouterLease, front_of

            router = front_of(self.lab.topology(cluster))
            if router is None or not router.running():
                raise LabError(f"no MySQL Router runs in front of {cluster}",
                               hint="router = true on the cluster in the lab spec; benchlib lab heal starts it again")
            return RouterLease(router)
        from benchlib.lab.proxy import HAProxyFront

        nodes = [(n.name, n.listen_host, n.port) for n in self.lab.layout.cluster_nodes(cluster)]
        front = HAProxyFront(self.lab.dir / "proxy", cluster, nodes, serving).start()
        creds = self.lab.creds

        def connect(timeout: float = 1.0):
            return pymysql.connect(host=front.host, port=front.port, user="bench", password=creds.password("bench"),
                                   connect_timeout=timeout, read_timeout=60, write_timeout=60, autocommit=True,
                                   cursorclass=pymysql.cursors.DictCursor)

        front.connect = connect
        return front
