"""Bringing a local lab from nothing to ready: what it needs installed, its names and ports, its datadirs, its
first start and the wiring of each cluster (``lab`` is always a ``benchlib.lab.lab.LocalLab``).

``LocalLab.up`` runs these steps; a failure at any of them tears down everything the attempt created (with the
servers' error logs kept aside) and raises one ``BenchlibError``.
"""

from __future__ import annotations

import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchlib.errors import LabError, MissingDependencyError
from benchlib.lab import node as nodeops
from benchlib.lab import procs, secrets, seed, state, wan
from benchlib.lab.layout import Layout, NodePlan, build_layout, busy_ports, pick_base_port, ports_needed
from benchlib.lab.mycnf import render
from benchlib.lab.spec import LabSpec
from benchlib.lab.state import ports_of_other_labs
from benchlib.lab.topology import REGISTRY
from benchlib.servers import find as find_server
from benchlib.lab.base import Progress

__all__ = ["allocate", "build", "check_binaries", "keep_logs", "run_as"]


def run_as() -> str | None:
    """Servers run as 'mysql' when we are root (rsync SST refuses root), else as ourselves."""
    return "mysql" if os.geteuid() == 0 else None


def check_binaries(spec: LabSpec) -> None:
    """Every server and program the spec's clusters need, or one message naming what to install (a server is
    found as ``benchlib.servers.find`` says, which names where to get one)."""
    need: dict[str, str] = {}
    files: dict[str, str] = {}
    for c in spec.clusters.values():
        find_server(c.flavor.server, c.basedir)
        need.update(c.flavor.tools)
        need.update(REGISTRY[c.topology].tools)
        files.update(REGISTRY[c.topology].files)
    if spec.sites:
        need["ip"] = "iproute2"
    missing = sorted({pkg for exe, pkg in need.items() if shutil.which(exe) is None}
                     | {pkg for path, pkg in files.items() if not Path(path).exists()})
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


def allocate(spec: LabSpec, root: Path) -> tuple[Layout, state.LabRecord, secrets.Credentials]:
    """Claim the lab's name, ports and network under the root's lock; write its record and passwords."""
    lab_dir = root / spec.name
    # allocation of names, ports and networks under the root's lock; of ports, under the machine's as well (another
    # root's labs hold theirs: benchlib.lab.state.CLAIMS)
    with state.locked(root / ".lock"), state.claims_lock():
        if state.read(lab_dir) is not None:
            raise LabError(f"lab {spec.name!r} was just brought up by another process",
                           hint=f"benchlib lab status {spec.name}")
        if lab_dir.exists():
            raise LabError(f"{lab_dir} exists but holds no lab record (left by a crashed run)",
                           hint="benchlib lab cleanup removes it")
        taken = ports_of_other_labs(root) | state.claimed_ports()
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
                                 net_index=net_index, run_as=run_as(), shaper=shaper)
        state.write(lab_dir, record)
        state.claim_ports(lab_dir, base_port, base_port + ports_needed(spec))
    return layout, record, creds


def _seeds(lab, pool: ThreadPoolExecutor) -> dict[str, Path]:
    """The datadir every node of each cluster starts from: its flavour's cached template where nodes set their
    passwords at first start, else a seed with the lab's accounts (one per Galera cluster: its own history; one
    per server for the others)."""
    root, owner = lab.dir.parent, lab.record.run_as
    jobs = {}
    seed_of = {}
    for c, cl in lab.spec.clusters.items():
        flavor, server = cl.flavor, lab.server(c)
        group_port = REGISTRY[cl.topology].seed_group_port(lab.layout.cluster_nodes(c)[0])
        if flavor.passwords_at_first_start:
            key = f"template {flavor.name} {server.mysqld}"
        else:
            key = f"seed {c}" if group_port is not None else f"seed {flavor.name} {server.mysqld}"
        seed_of[c] = key
        if key in jobs:
            continue
        if flavor.passwords_at_first_start:
            jobs[key] = pool.submit(seed.template, flavor, server, root, owner)
            continue
        tmpl = seed.template(flavor, server, root, owner)
        dest = lab.dir / ".seeds" / f"{len(jobs)}"
        jobs[key] = pool.submit(seed.make_seed, flavor, server, tmpl, dest, lab.creds, owner, group_port)
    done = {k: f.result() for k, f in jobs.items()}
    return {c: done[k] for c, k in seed_of.items()}


def build(lab, timeout: float, progress: Progress) -> None:
    """Datadirs from seeds (network namespaces meanwhile), first start, then every cluster wired and ready."""
    t0 = time.monotonic()
    owner = lab.record.run_as
    with ThreadPoolExecutor(max_workers=8) as pool:
        net = pool.submit(lab.network_up) if lab.layout.sites else None
        seeds = _seeds(lab, pool)
        progress(f"seeds ready ({time.monotonic() - t0:.1f} s)")

        def place(node: NodePlan) -> None:
            nodeops.prepare_dir(node, render(lab.layout, node, lab.server(node.cluster)), owner)
            nodeops.copy_datadir(seeds[node.cluster], node.datadir)
            if lab.flavor(node.cluster).passwords_at_first_start:
                nodeops.write_private(node.init_file, seed.init_file(lab.creds), owner)

        list(pool.map(place, lab.layout.nodes.values()))
        shutil.rmtree(lab.dir / ".seeds", ignore_errors=True)
        progress(f"datadirs copied ({time.monotonic() - t0:.1f} s)")
        if net is not None:
            net.result()
            progress(f"network ready ({time.monotonic() - t0:.1f} s)")
    topologies = [lab.topology(c) for c in lab.spec.clusters]
    for topo in topologies:
        topo.prepare()
    nodes = list(lab.layout.nodes.values())
    lab.start_nodes(nodes)
    try:
        lab.wait_connectable(nodes, timeout, "start")
    finally:
        for node in nodes:
            node.init_file.unlink(missing_ok=True)  # it holds passwords: gone once the nodes are up
    progress(f"servers started ({time.monotonic() - t0:.1f} s)")
    with ThreadPoolExecutor(max_workers=len(topologies)) as pool:
        for f in [pool.submit(t.form, timeout) for t in topologies]:
            f.result()
    progress(f"lab {lab.name} ready in {time.monotonic() - t0:.1f} s")


def renew(lab, node: NodePlan, timeout: float = 120.0) -> None:
    """Give ``node`` (stopped) a fresh datadir, as at the lab's build, and start it: what an operator re-provisioning
    a server does. Only a flavour whose template takes the lab's passwords at first start can (MySQL)."""
    procs.wait_gone([p for p in [lab.pid(node)] if p], 60)
    owner, flavor = lab.record.run_as, lab.flavor(node.cluster)
    shutil.rmtree(node.datadir, ignore_errors=True)
    nodeops.copy_datadir(seed.template(flavor, lab.server(node.cluster), lab.dir.parent, owner), node.datadir)
    nodeops.write_private(node.init_file, seed.init_file(lab.creds), owner)
    try:
        lab.start_nodes([node])
        lab.wait_connectable([node], timeout, "start on a fresh datadir")
    finally:
        node.init_file.unlink(missing_ok=True)  # it holds passwords


def keep_logs(lab) -> Path | None:
    """Copy every node's error log out of the lab before a failed bring-up removes it."""
    logs = [n.error_log for n in lab.layout.nodes.values() if n.error_log.exists()]
    if not logs:
        return None
    dest = lab.dir.parent / ".failed" / f"{lab.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    dest.mkdir(parents=True, exist_ok=True)
    for log in logs:
        shutil.copy(log, dest / f"{log.parent.name}.error.log")
    return dest
