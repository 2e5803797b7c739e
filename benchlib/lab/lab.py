"""The embedded lab: every cluster of one spec, running on this machine (a ``benchlib.lab.base.Lab``).

``LocalLab.up(spec)`` brings a lab from nothing to ready (``benchlib.lab.build``); a failure at any
step tears down everything the attempt created and raises one ``BenchlibError``.
``LocalLab.open(name)`` attaches to a running lab for status, settings, heal and down.
Machine-wide housekeeping (labs left by crashed runs) is ``benchlib.lab.cleanup``.

Its capabilities are in ``benchlib.lab.capabilities``: ``health``, ``tuning`` and ``hooks``, which every lab has,
and ``faults()`` and ``proxy()``, which only some have.
"""

from __future__ import annotations

import os
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import pymysql

from benchlib.errors import BenchlibError, LabError, LabSpecMismatch, NodeStartError
from benchlib.lab import build, flavors, procs, secrets, sql, state, wan
from benchlib.lab import node as nodeops
from benchlib.lab.base import NodeInfo, Progress
from benchlib.lab.base import quiet as _quiet
from benchlib.lab.layout import Layout, NodePlan, build_layout, lab_root
from benchlib.lab.capabilities import LocalHealth, LocalHooks, LocalHosts, LocalProxy, LocalTuning
from benchlib.lab.node_hosts import HostFaults, reapply
from benchlib.lab.spec import LabSpec, load_spec
from benchlib.lab.state import list_labs
from benchlib.lab.topology import ClusterContext, Topology, for_cluster
from benchlib.servers import Server
from benchlib.servers import find as find_server


__all__ = ["LocalLab"]


class LocalLab:
    """A lab this machine runs (see the module docstring and ``benchlib.lab.base.Lab``)."""

    health: LocalHealth
    tuning: LocalTuning
    hooks: LocalHooks

    def __init__(self, layout: Layout, record: state.LabRecord, creds: secrets.Credentials):
        self.layout = layout
        self.record = record
        self.creds = creds
        self._servers: dict[str, Server] = {}
        self.health = LocalHealth(self)
        self.tuning = LocalTuning(self)
        self.hooks = LocalHooks(self)

    # -- attach -------------------------------------------------------------------------
    @property
    def spec(self) -> LabSpec:
        return self.layout.spec

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def dir(self) -> Path:
        return self.layout.dir

    @classmethod
    def open(cls, name: str | None = None, root: Path | None = None) -> "LocalLab":
        root = root or lab_root()
        if name is None:
            names = list_labs(root)
            if len(names) != 1:
                raise LabError(
                    "no lab is up" if not names else f"several labs are up ({', '.join(names)}): name one",
                    hint="benchlib lab up SPEC" if not names else "benchlib lab status NAME",
                )
            name = names[0]
        lab_dir = root / name
        record = state.read(lab_dir)
        if record is None:
            raise LabError(f"no lab named {name!r} under {root}", hint="benchlib lab list shows the labs that are up")
        spec = record.lab_spec()
        layout = build_layout(spec, root, record.base_port, record.net_index)
        return cls(layout, record, secrets.load(lab_dir))

    def flavor(self, cluster: str) -> flavors.Flavor:
        """The server flavour a cluster runs (its spec's ``system``)."""
        return self.spec.clusters[cluster].flavor

    def server(self, cluster: str) -> Server:
        """The server binaries a cluster runs (its spec's ``basedir``, or the one benchlib finds)."""
        if cluster not in self._servers:
            c = self.spec.clusters[cluster]
            self._servers[cluster] = find_server(c.flavor.server, c.basedir)
        return self._servers[cluster]

    # -- connections ----------------------------------------------------------------------
    def node(self, name: str) -> NodePlan:
        try:
            return self.layout.nodes[name]
        except KeyError:
            raise LabError(f"no node {name!r} in lab {self.name}",
                           hint=f"nodes: {', '.join(self.layout.nodes)}") from None

    def _node_of(self, node: NodePlan | NodeInfo | str) -> NodePlan:
        return node if isinstance(node, NodePlan) else self.node(node if isinstance(node, str) else node.name)

    def cluster_nodes(self, cluster: str) -> list[NodeInfo]:
        system = self.spec.system_of(cluster)
        return [NodeInfo(n.name, n.cluster, n.role, system, n.listen_host, n.port)
                for n in self.layout.cluster_nodes(cluster)]

    def connect(self, node: NodePlan | NodeInfo | str, *, user: str = "root", tcp: bool = False,
                database: str | None = None, read_timeout: float = 60.0, timeout: float = 5.0):
        node = self._node_of(node)
        try:
            return sql.connect(node, self.creds, user=user, tcp=tcp, database=database, read_timeout=read_timeout,
                               timeout=timeout)
        except pymysql.err.OperationalError as exc:
            raise LabError(f"cannot connect to {node.name} ({exc.args[-1] if exc.args else exc})",
                           hint="benchlib lab status shows which nodes are down; benchlib lab heal restarts them") from None

    def topology(self, cluster: str) -> Topology:
        return for_cluster(ClusterContext(cluster, self.spec.clusters[cluster], self.layout.cluster_nodes(cluster),
                                          self.connect, lambda: self.tuning.settings(cluster), self.creds.password,
                                          self.spec.setting_rules(cluster), self.flavor(cluster), self.server(cluster),
                                          self._restart,
                                          (lambda node: build.renew(self, node))
                                          if self.flavor(cluster).passwords_at_first_start else None))

    def _restart(self, nodes: list[NodePlan], timeout: float = 120.0) -> None:
        """Start ``nodes`` that stopped on their own (e.g. a GR member after a clone), once their old process is gone."""
        procs.wait_gone([p for n in nodes if (p := self.pid(n))], 60)
        self.start_nodes(nodes)
        self.wait_connectable(nodes, timeout, "restart")

    def pid(self, node: NodePlan | NodeInfo | str) -> int | None:
        name = node if isinstance(node, str) else node.name
        return self.record.pids.get(name)

    def is_up(self, node: NodePlan | NodeInfo | str) -> bool:
        node = self._node_of(node)
        return nodeops.is_up(node, self.pid(node))

    def close(self, *, down: bool = False) -> None:
        """Nothing to release: the servers keep running; ``down``: stop every process of the lab, remove its network
        and its directory."""
        if down:
            self._destroy()

    def client_option_file(self, user: str) -> Path:
        """A mode-600 [client] option file holding ``user``'s password (for mariadb, sysbench and other clients)."""
        if user not in secrets.ACCOUNTS:
            raise LabError(f"no account {user!r} in a lab", hint=f"accounts: {', '.join(secrets.ACCOUNTS)}")
        path = self.dir / "client" / f"{user}.cnf"
        if not path.exists():
            path.parent.mkdir(mode=0o700, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(f"[client]\nuser = {user}\npassword = {self.creds.password(user)}\n")
        return path

    def client_args(self, node: NodePlan, user: str) -> list[str]:
        """Where a command-line client reaches ``node``: root over its socket, others over TCP."""
        if user == "root":
            return [f"--socket={node.socket}"]
        return [f"--host={node.listen_host}", f"--port={node.port}", "--protocol=TCP"]

    # -- bring-up ---------------------------------------------------------------------------
    @classmethod
    def up(cls, spec: LabSpec | str | Path, *, root: Path | None = None, timeout: float = 120.0,
           progress: Progress = _quiet) -> "LocalLab":
        """Bring a lab up from nothing, or heal it when the same spec is already up."""
        if not isinstance(spec, LabSpec):
            spec = load_spec(spec)
        root = (root or lab_root()).absolute()
        build.check_binaries(spec)
        root.mkdir(parents=True, exist_ok=True)
        os.chmod(root, 0o755)  # the servers run as 'mysql' and must traverse it
        existing = state.read(root / spec.name)
        if existing is not None:
            if existing.lab_spec() != spec:
                raise LabSpecMismatch(
                    f"lab {spec.name!r} is already up with a different spec",
                    hint=f"benchlib lab down {spec.name}, then up again (or give the lab another name)",
                )
            lab = cls.open(spec.name, root)
            progress(f"lab {spec.name} exists: healing")
            lab.health.heal(timeout=timeout, progress=progress)
            return lab
        lab = cls(*build.allocate(spec, root))
        try:
            build.build(lab, timeout, progress)
        except BaseException as exc:
            progress("bring-up failed: removing everything it created")
            kept = build.keep_logs(lab)
            lab._destroy()
            if isinstance(exc, BenchlibError) and kept:
                exc.hint = (f"{exc.hint}; " if exc.hint else "") + f"the servers' error logs are kept in {kept}"
            if isinstance(exc, (BenchlibError, KeyboardInterrupt, SystemExit)):
                raise
            raise LabError(f"lab {spec.name} failed to come up: {exc.__class__.__name__}: {exc}") from exc
        return lab

    def network_up(self) -> None:
        pid = wan.up(self.layout, self.record.shaper)
        with state.update(self.dir) as rec:
            rec.link_pid = pid
        self.record.link_pid = pid

    def relink(self) -> None:
        """Restore the links in the namespaces there are; namespaces that are gone are made anew (their nodes
        died with them and are restarted by heal)."""
        present = set(wan.list_namespaces())
        if all(s.netns in present for s in self.layout.sites.values()):
            pid = wan.relink(self.layout, self.record.shaper, self.record.link_pid)
        else:
            wan.down(self.layout, self.record.shaper, self.record.link_pid)
            pid = wan.up(self.layout, self.record.shaper)
        with state.update(self.dir) as rec:
            rec.link_pid = pid
        self.record.link_pid = pid

    def start_nodes(self, nodes: list[NodePlan]) -> None:
        """Start ``nodes``; a topology with a group port (Galera) has its nodes started one after
        another, each once the previous one listens, so no node dials a peer that is not there yet."""
        pids = {}
        try:
            ordered = sorted(nodes, key=lambda n: self.topology(n.cluster).group_port(n) is not None)
            with ThreadPoolExecutor(max_workers=max(1, len(ordered))) as pool:  # e.g. wsrep-recover, in parallel
                args = dict(zip([n.name for n in ordered], pool.map(
                    lambda n: self.topology(n.cluster).start_args(n, self.record.run_as), ordered)))
            for n in ordered:
                if n.init_file.exists():  # a node's first start that sets the lab's passwords
                    args[n.name] = (*args[n.name], f"--init-file={n.init_file}")
            for node in ordered:
                topo = self.topology(node.cluster)
                pids[node.name] = nodeops.start(node, self.server(node.cluster), self.record.run_as, *args[node.name])
                port = topo.group_port(node)
                if port is not None:
                    nodeops.wait_listening(node, pids[node.name], node.listen_host, port)
        finally:
            with state.update(self.dir) as rec:
                rec.pids.update(pids)
            self.record.pids.update(pids)

    def wait_connectable(self, nodes: list[NodePlan], timeout: float, what: str) -> None:
        """Wait until every node accepts connections; on the first failure stop waiting for the rest."""
        abort = threading.Event()
        with ThreadPoolExecutor(max_workers=max(1, len(nodes))) as pool:
            futures = [pool.submit(nodeops.wait_connectable, n, self.pid(n), self.creds, timeout, what=what, abort=abort)
                       for n in nodes]
            for f in as_completed(futures):
                try:
                    f.result().close()
                except NodeStartError:
                    abort.set()
                    raise

    # -- capabilities: the embedded lab runs its servers, so it has every one ----------------------------------------
    def faults(self) -> HostFaults:
        """Its faults (``benchlib.lab.base.FaultControl``): this lab kills, freezes, isolates and cuts its own servers,
        promotes a replica and starts a killed node again (``benchlib.lab.node_hosts`` over ``LocalHosts``)."""
        return HostFaults(self, self.hosts())

    def hosts(self) -> LocalHosts:
        """Its nodes' servers and hosts, as its faults and its heal act on them (``benchlib.lab.node_hosts``)."""
        return LocalHosts(self)

    def record_promotion(self, cluster: str, node: str | None) -> None:
        """``cluster``'s primary moved to ``node`` by a promotion (None: given back); the heal gives it back."""
        with state.update(self.dir) as rec:
            if node is None:
                rec.promoted.pop(cluster, None)
            else:
                rec.promoted[cluster] = node
        if node is None:
            self.record.promoted.pop(cluster, None)
        else:
            self.record.promoted[cluster] = node

    def record_moved(self, cluster: str) -> None:
        """A node of ``cluster`` rejoined under load: its roles may have moved; the heal restores them."""
        if cluster not in self.record.moved:
            with state.update(self.dir) as rec:
                rec.moved.append(cluster)
            self.record.moved.append(cluster)

    def proxy(self) -> "LocalProxy":
        """Its proxy (``benchlib.lab.base.ProxyControl``): HAProxy in front of a cluster."""
        return LocalProxy(self)

    def reapply_settings(self, topo: Topology, nodes: list[NodePlan]) -> None:
        reapply(topo, self.tuning.settings(topo.cluster), nodes)

    # -- teardown -------------------------------------------------------------------------------
    def _destroy(self) -> None:
        procs.kill_lab_processes(self.dir, self.record.pids, self.layout)
        wan.down(self.layout, self.record.shaper, self.record.link_pid)
        state.release_ports(self.dir)
        shutil.rmtree(self.dir, ignore_errors=True)
