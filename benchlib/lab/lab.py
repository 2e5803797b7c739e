"""The embedded lab: every cluster of one spec, running on this machine (a ``benchlib.lab.base.Lab``).

``Lab.up(spec)`` brings a lab from nothing to ready; a failure at any step tears
down everything the attempt created and raises one ``BenchlibError``.
``Lab.open(name)`` attaches to a running lab for status, settings, heal and down.
Machine-wide housekeeping (labs left by crashed runs) is ``benchlib.lab.cleanup``.
"""

from __future__ import annotations

import os
import shutil
import time
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any


import pymysql

from benchlib.errors import BenchlibError, LabError, MissingDependencyError, NodeStartError, SettingError
from benchlib.lab import wan
from benchlib.lab import node as nodeops
from benchlib.lab import procs, secrets, seed, sql, state
from benchlib.lab.layout import Layout, NodePlan, build_layout, busy_ports, lab_root, pick_base_port, ports_needed
from benchlib.lab.mycnf import GALERA_PROVIDER, render
from benchlib.lab.spec import LabSpec, load_spec
from benchlib.lab.base import NodeInfo, NodeStatus, Progress
from benchlib.lab.base import quiet as _quiet
from benchlib.lab.state import list_labs, ports_of_other_labs
from benchlib.lab.topology import RESTART_ONLY, ClusterContext, Topology, for_cluster
from benchlib.servers import Server
from benchlib.servers import find as find_server
from benchlib.systems.settings import SettingRules


def _run_as() -> str | None:
    """mariadbd runs as 'mysql' when we are root (rsync SST refuses root), else as ourselves."""
    return "mysql" if os.geteuid() == 0 else None


def check_binaries(spec: LabSpec) -> None:
    """Every binary the spec's clusters need, or one message naming what to install (MySQL servers:
    ``benchlib.servers.find`` says where to get one)."""
    for c in spec.clusters.values():
        if c.system == "mysql":
            find_server("mysql", c.basedir)
    need = {}
    if any(c.system == "mariadb" for c in spec.clusters.values()):
        need = {"mariadbd": "mariadb-server", "mariadb-install-db": "mariadb-server"}
    topologies = {c.topology for c in spec.clusters.values()}
    if "galera" in topologies:
        need.update({"rsync": "rsync", "wsrep_sst_rsync": "mariadb-server"})
    if spec.sites:
        need["ip"] = "iproute2"
    missing = sorted({pkg for exe, pkg in need.items() if shutil.which(exe) is None})
    if "galera" in topologies and not Path(GALERA_PROVIDER).exists():
        missing.append("galera-4")
    if missing:
        raise MissingDependencyError(
            f"missing system packages for this lab: {', '.join(missing)}",
            hint=f"apt-get install -y {' '.join(missing)} (or run ./scripts/demo as root; `benchlib doctor` checks everything)",
        )
    if os.geteuid() == 0:
        import pwd

        try:
            pwd.getpwnam("mysql")
        except KeyError:
            raise MissingDependencyError("no 'mysql' system user to run the servers as",
                                         hint="apt-get install -y mariadb-server creates it") from None
    if spec.sites:
        wan.check_capable()


class Lab:
    """A lab this machine runs (see the module docstring and ``benchlib.lab.base.Lab``)."""

    kind = "local"

    def __init__(self, layout: Layout, record: state.LabRecord, creds: secrets.Credentials):
        self.layout = layout
        self.record = record
        self.creds = creds
        self._servers: dict[str, Server] = {}

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
    def open(cls, name: str | None = None, root: Path | None = None) -> "Lab":
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

    def refresh(self) -> None:
        self.record = state.read(self.dir) or self.record

    def server(self, cluster: str) -> Server | None:
        """The MySQL server a cluster runs (None: MariaDB's mariadbd from the system)."""
        c = self.spec.clusters[cluster]
        if c.system != "mysql":
            return None
        if cluster not in self._servers:
            self._servers[cluster] = find_server("mysql", c.basedir)
        return self._servers[cluster]

    # -- connections ----------------------------------------------------------------------
    def node(self, name: str) -> NodePlan:
        try:
            return self.layout.nodes[name]
        except KeyError:
            raise LabError(f"no node {name!r} in lab {self.name}",
                           hint=f"nodes: {', '.join(self.layout.nodes)}") from None

    def _plan(self, node: NodePlan | NodeInfo | str) -> NodePlan:
        return node if isinstance(node, NodePlan) else self.node(node if isinstance(node, str) else node.name)

    def clusters(self) -> list[str]:
        return list(self.spec.clusters)

    def describe(self) -> str:
        return f"lab {self.name} ({len(self.layout.nodes)} servers on this machine)"

    def cluster_nodes(self, cluster: str) -> list[NodeInfo]:
        system = self.system(cluster)
        return [NodeInfo(n.name, n.cluster, n.role, system, n.listen_host, n.port)
                for n in self.layout.cluster_nodes(cluster)]

    def system(self, cluster: str) -> str:
        return self.spec.system_of(cluster)

    def setting_rules(self, cluster: str) -> SettingRules:
        return self.spec.setting_rules(cluster)

    def connect(self, node: NodePlan | NodeInfo | str, *, user: str = "root", tcp: bool = False,
                database: str | None = None, read_timeout: float = 60.0):
        node = self._plan(node)
        try:
            return sql.connect(node, self.creds, user=user, tcp=tcp, database=database, read_timeout=read_timeout)
        except pymysql.err.OperationalError as exc:
            raise LabError(f"cannot connect to {node.name} ({exc.args[-1] if exc.args else exc})",
                           hint="benchlib lab status shows which nodes are down; benchlib lab heal restarts them") from None

    def topology(self, cluster: str) -> Topology:
        return for_cluster(ClusterContext(cluster, self.spec.clusters[cluster], self.layout.cluster_nodes(cluster),
                                          self.connect, lambda: self.settings(cluster), self.creds.password,
                                          self.setting_rules(cluster), self._restart))

    def _restart(self, nodes: list[NodePlan], timeout: float = 120.0) -> None:
        """Start ``nodes`` that stopped on their own (e.g. a GR member after a clone), once their old process is gone."""
        procs.wait_gone([p for n in nodes if (p := self.pid(n))], 60)
        self._start_nodes(nodes)
        self._wait_connectable(nodes, timeout, "restart")

    def settings(self, cluster: str) -> dict[str, Any]:
        return dict(self.record.settings.get(cluster, {}))

    def pid(self, node: NodePlan | NodeInfo | str) -> int | None:
        name = node if isinstance(node, str) else node.name
        return self.record.pids.get(name)

    def is_up(self, node: NodePlan | NodeInfo | str) -> bool:
        node = self._plan(node)
        return nodeops.is_up(node, self.pid(node))

    def secrets(self) -> list[str]:
        return list(self.creds.passwords.values())

    def load_driver(self):
        """sysbench on this machine, as the lab's ``bench`` account over TCP."""
        from benchlib.sysbench.driver import Endpoint, LocalDriver

        def endpoint(name: str) -> Endpoint:
            n = self.node(name)
            return Endpoint(n.listen_host, n.port, "bench", self.creds.password("bench"))

        return LocalDriver(endpoint, self.dir / "loads")

    def extra_probes(self, nodes: list[str], log, clock) -> list:
        """Every local server process (CPU, context switches, storage I/O, threads, memory) and this host (CPU per
        core, load, pressure, disks, network)."""
        from benchlib.sampling.host import HostProbe, ProcessProbe

        return [ProcessProbe({n: p for n in nodes if (p := self.pid(n))}, log, clock), HostProbe(log, clock)]

    def heartbeat_triggers(self, cluster: str) -> bool:
        return self.system(cluster) == "mariadb"  # MariaDB replicas run triggers for row events (mycnf)

    def facts(self, cluster: str) -> dict[str, Any]:
        c = self.spec.clusters[cluster]
        s = self.spec.settings_for(cluster)
        nodes = []
        for n in self.layout.cluster_nodes(cluster):
            site = self.layout.sites.get(n.site) if n.site else None
            nodes.append({"name": n.name, "role": n.role, "host": n.listen_host, "port": n.port, "site": n.site,
                          "rtt_ms": site.rtt_ms if site else 0.0})
        server = self.server(cluster)
        return {"system": self.system(cluster), "topology": c.topology, "placement": "local", "nodes": nodes,
                "durability": s.durability, "binlog": bool(getattr(c, "binlog", True)),
                "server": server.label if server else "MariaDB"}

    def close(self) -> None:
        """Nothing to release: the servers keep running until ``down``."""

    def check(self):
        from benchlib.lab.check import check

        return check(self)

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
           progress: Progress = _quiet) -> "Lab":
        """Bring a lab up from nothing, or heal it when the same spec is already up."""
        if not isinstance(spec, LabSpec):
            spec = load_spec(spec)
        root = (root or lab_root()).absolute()
        check_binaries(spec)
        root.mkdir(parents=True, exist_ok=True)
        os.chmod(root, 0o755)  # mysqld runs as 'mysql' and must traverse it
        lab_dir = root / spec.name
        existing = state.read(lab_dir)
        if existing is not None:
            if existing.lab_spec() != spec:
                raise LabError(
                    f"lab {spec.name!r} is already up with a different spec",
                    hint=f"benchlib lab down {spec.name}, then up again (or give the lab another name)",
                )
            lab = cls.open(spec.name, root)
            progress(f"lab {spec.name} exists: healing")
            lab.heal(timeout=timeout, progress=progress)
            return lab
        with state.locked(root / ".lock"):  # allocation of names, ports and networks
            if state.read(lab_dir) is not None:
                raise LabError(f"lab {spec.name!r} was just brought up by another process",
                               hint=f"benchlib lab status {spec.name}")
            if lab_dir.exists():
                raise LabError(f"{lab_dir} exists but holds no lab record (left by a crashed run)",
                               hint="benchlib lab cleanup removes it")
            taken = ports_of_other_labs(root)
            if spec.base_port is not None:
                base_port = spec.base_port
                clash = taken.intersection(range(base_port, base_port + ports_needed(spec)))
                if clash:
                    raise LabError(f"base_port {base_port}: ports {min(clash)}.. belong to another lab",
                                   hint="choose another base_port in the spec, or omit it to pick free ports")
            else:
                base_port = pick_base_port(spec, taken)
            net_index = wan.allocate_index(root) if spec.sites else None
            shaper = wan.resolve_shaper(spec.shaper) if spec.sites else None
            layout = build_layout(spec, root, base_port, net_index)
            busy = busy_ports(layout)
            if busy:
                port, what = busy[0]
                more = f" (and {len(busy) - 1} more)" if len(busy) > 1 else ""
                raise LabError(
                    f"port {port} ({what}) is already in use{more}",
                    hint="stop what holds it (ss -ltnp), choose another base_port in the spec, or omit base_port",
                )
            lab_dir.mkdir()
            os.chmod(lab_dir, 0o755)
            creds = secrets.create(lab_dir)
            record = state.LabRecord(name=spec.name, spec=spec.model_dump(mode="json"), base_port=base_port,
                                     net_index=net_index, run_as=_run_as(), shaper=shaper)
            state.write(lab_dir, record)
        lab = cls(layout, record, creds)
        try:
            lab._build(timeout, progress)
        except BaseException as exc:
            progress("bring-up failed: removing everything it created")
            kept = lab._keep_logs()
            lab._destroy()
            if isinstance(exc, BenchlibError) and kept:
                exc.hint = (f"{exc.hint}; " if exc.hint else "") + f"the servers' error logs are kept in {kept}"
            if isinstance(exc, (BenchlibError, KeyboardInterrupt, SystemExit)):
                raise
            raise LabError(f"lab {spec.name} failed to come up: {exc.__class__.__name__}: {exc}") from exc
        return lab

    def _build(self, timeout: float, progress: Progress) -> None:
        t0 = time.monotonic()
        run_as = self.record.run_as
        seeds_dir = self.dir / ".seeds"
        # one seed per Galera cluster (its own history), one shared by the other MariaDB clusters, one per
        # MySQL server ('_' is never in a cluster name)
        seed_of: dict[str, str] = {}
        for c, cl in self.spec.clusters.items():
            server = self.server(c)
            seed_of[c] = c if cl.topology == "galera" else (f"_mysql:{server.mysqld}" if server else "_plain")
        with ThreadPoolExecutor(max_workers=8) as pool:
            net = pool.submit(self._network_up) if self.layout.sites else None
            jobs = {}
            for c, key in seed_of.items():
                if key in jobs:
                    continue
                server = self.server(c)
                if server is not None:  # MySQL: the cached template is the seed; nodes set passwords at first start
                    jobs[key] = pool.submit(seed.template, self.layout.dir.parent, run_as, server)
                    continue
                tmpl = seed.template(self.layout.dir.parent, run_as)
                galera = self.layout.cluster_nodes(c)[0].galera_port if key == c else None
                jobs[key] = pool.submit(seed.make_seed, tmpl, seeds_dir / key.strip("_"), self.creds, run_as, galera)
            seeds = {k: f.result() for k, f in jobs.items()}
            progress(f"seeds ready ({time.monotonic() - t0:.1f} s)")

            def place(node: NodePlan) -> None:
                nodeops.prepare_dir(node, render(self.layout, node, self.server(node.cluster)), run_as)
                nodeops.copy_datadir(seeds[seed_of[node.cluster]], node.datadir)
                if node.server == "mysql":
                    nodeops.write_private(node.init_file, seed.mysql_init_file(self.creds), run_as)

            list(pool.map(place, self.layout.nodes.values()))
            shutil.rmtree(seeds_dir, ignore_errors=True)
            progress(f"datadirs copied ({time.monotonic() - t0:.1f} s)")
            if net is not None:
                net.result()
                progress(f"network ready ({time.monotonic() - t0:.1f} s)")
        topologies = [self.topology(c) for c in self.spec.clusters]
        for topo in topologies:
            topo.prepare()
        self._start_nodes(list(self.layout.nodes.values()))
        try:
            self._wait_connectable(list(self.layout.nodes.values()), timeout, "start")
        finally:
            for node in self.layout.nodes.values():
                node.init_file.unlink(missing_ok=True)  # it holds passwords: gone once the nodes are up
        progress(f"servers started ({time.monotonic() - t0:.1f} s)")
        with ThreadPoolExecutor(max_workers=len(topologies)) as pool:
            for f in [pool.submit(t.form, timeout) for t in topologies]:
                f.result()
        progress(f"lab {self.name} ready in {time.monotonic() - t0:.1f} s")

    def _network_up(self) -> None:
        pid = wan.up(self.layout, self.record.shaper)
        with state.update(self.dir) as rec:
            rec.link_pid = pid
        self.record.link_pid = pid

    def _relink(self) -> None:
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

    def _start_nodes(self, nodes: list[NodePlan]) -> None:
        """Start ``nodes``; a topology with a group port (Galera) has its nodes started one after
        another, each once the previous one listens, so no node dials a peer that is not there yet."""
        pids = {}
        try:
            ordered = sorted(nodes, key=lambda n: self.topology(n.cluster).group_port(n) is not None)
            with ThreadPoolExecutor(max_workers=max(1, len(ordered))) as pool:  # e.g. wsrep-recover, in parallel
                args = dict(zip([n.name for n in ordered], pool.map(
                    lambda n: self.topology(n.cluster).start_args(n, self.record.run_as), ordered)))
            for n in ordered:
                if n.init_file.exists():  # a MySQL node's first start
                    args[n.name] = (*args[n.name], f"--init-file={n.init_file}")
            for node in ordered:
                topo = self.topology(node.cluster)
                pids[node.name] = nodeops.start(node, self.record.run_as, *args[node.name],
                                                server=self.server(node.cluster))
                port = topo.group_port(node)
                if port is not None:
                    nodeops.wait_listening(node, pids[node.name], node.listen_host, port)
        finally:
            with state.update(self.dir) as rec:
                rec.pids.update(pids)
            self.record.pids.update(pids)

    def _wait_connectable(self, nodes: list[NodePlan], timeout: float, what: str) -> None:
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

    # -- status ----------------------------------------------------------------------------
    def status(self) -> list[NodeStatus]:
        out = []
        for node in self.layout.nodes.values():
            up = self.is_up(node)
            detail: dict[str, Any] = {}
            if up:
                try:
                    with sql.connect(node, self.creds, timeout=2) as conn:
                        detail = self.topology(node.cluster).node_status(node, conn)
                except pymysql.err.MySQLError as exc:
                    detail = {"error": str(exc.args[-1] if exc.args else exc)}
            out.append(NodeStatus(node.name, node.cluster, node.topology, node.role, node.site, node.port,
                                  self.pid(node) if up else None, up, detail, self.system(node.cluster),
                                  node.listen_host))
        return out

    # -- heal ---------------------------------------------------------------------------------
    def broken(self) -> list[str]:
        """What heal would repair, cheaply (no connections): nodes not running, WAN links down."""
        out = [n.name for n in self.layout.nodes.values() if not self.is_up(n)]
        if self.layout.sites and not wan.is_up(self.layout, self.record.shaper, self.record.link_pid):
            out.append("WAN links")
        return out

    def heal(self, *, timeout: float = 120.0, progress: Progress = _quiet) -> list[str]:
        """Restart every node that is not running and wait until it has rejoined."""
        if self.layout.sites and not wan.is_up(self.layout, self.record.shaper, self.record.link_pid):
            progress("WAN links are down: restoring them")
            self._relink()
        restarted: list[str] = []
        for cluster in self.spec.clusters:
            topo = self.topology(cluster)
            dead = [n for n in topo.nodes if not self.is_up(n)]
            if not dead:
                continue
            # a node killed a moment ago may still hold its port and socket: wait until it is gone
            procs.wait_gone([p for n in dead if (p := self.pid(n))], 30)
            for group in topo.restart_order(dead):
                if not group:
                    continue
                progress(f"restarting {', '.join(n.name for n in group)}")
                self._start_nodes(group)
                self._wait_connectable(group, timeout, "restart")
                topo.after_group(group, timeout)
            try:
                self._reapply_settings(topo, dead)
                topo.after_heal(dead, timeout)
            except pymysql.err.MySQLError as exc:
                raise LabError(f"{cluster}: heal failed: {exc.args[-1] if exc.args else exc}",
                               hint="benchlib lab status; if a node cannot rejoin: benchlib lab down, then up") from None
            restarted += [n.name for n in dead]
        return restarted

    def _reapply_settings(self, topo: Topology, nodes: list[NodePlan]) -> None:
        for key, value in self.settings(topo.cluster).items():
            topo.apply_setting(key, value, nodes if key != "semisync" else topo.nodes)

    # -- runtime settings ------------------------------------------------------------------------
    def set(self, settings: dict[str, Any], *, cluster: str | None = None) -> dict[str, dict[str, Any]]:
        """Apply runtime settings to every cluster that has them (or to ``cluster``), without restart.

        Returns {cluster: {setting: value}} of what was applied. Unknown settings,
        bad values and settings that need a restart raise ``SettingError``.
        """
        clusters = [cluster] if cluster else list(self.spec.clusters)
        if cluster and cluster not in self.spec.clusters:
            raise SettingError(f"no cluster {cluster!r} in lab {self.name}", hint=f"clusters: {', '.join(self.spec.clusters)}")
        applied: dict[str, dict[str, Any]] = {}
        plan = []
        for key, raw in settings.items():
            targets = [c for c in clusters if key in self.setting_rules(c)]
            if not targets and key in RESTART_ONLY:
                hint = {"wait_point": "semisync_wait_point", "timeout_ms": "semisync_timeout_ms"}.get(key)
                raise SettingError(
                    f"{key!r} cannot change on a running lab (it needs a server restart or a new build)",
                    hint=f"use the runtime setting {hint}" if hint else
                    "change it in the spec, then: benchlib lab down, benchlib lab up SPEC",
                )
            if not targets:
                known = sorted({k for c in clusters for k in self.setting_rules(c).names})
                raise SettingError(f"{key!r} is not a runtime setting of {' or '.join(clusters)}",
                                   hint=f"runtime settings here: {', '.join(known)}; other server options need a new lab")
            for c in targets:
                plan.append((c, key, self.setting_rules(c).parse(key, raw)))
        for c, key, value in plan:
            topo = self.topology(c)
            topo.apply_setting(key, value, topo.nodes)
            applied.setdefault(c, {})[key] = value
            with state.update(self.dir) as rec:
                _record_setting(rec.settings, c, key, value)
            _record_setting(self.record.settings, c, key, value)
        return applied

    # -- teardown -------------------------------------------------------------------------------
    def down(self) -> None:
        """Stop every process of the lab, remove its network and its directory."""
        self._destroy()

    def _keep_logs(self) -> Path | None:
        """Copy every node's error log out of the lab before a failed bring-up removes it."""
        logs = [n.error_log for n in self.layout.nodes.values() if n.error_log.exists()]
        if not logs:
            return None
        dest = self.dir.parent / ".failed" / f"{self.name}-{time.strftime('%Y%m%d-%H%M%S')}"
        dest.mkdir(parents=True, exist_ok=True)
        for log in logs:
            shutil.copy(log, dest / f"{log.parent.name}.error.log")
        return dest

    def _destroy(self) -> None:
        procs.kill_lab_processes(self.dir, self.record.pids, self.layout)
        wan.down(self.layout, self.record.shaper, self.record.link_pid)
        shutil.rmtree(self.dir, ignore_errors=True)


def _record_setting(settings: dict[str, dict[str, Any]], cluster: str, key: str, value: Any) -> None:
    """Remember a setting last in order: heal re-applies settings in the order they were made, so a
    later ``sync_binlog`` still wins over an earlier ``durability`` and the other way round."""
    mine = settings.setdefault(cluster, {})
    mine.pop(key, None)
    mine[key] = value
