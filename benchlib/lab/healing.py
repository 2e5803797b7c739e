"""How the embedded lab heals: WAN links up again, cuts between sites removed, frozen nodes thawed, roles restored after a rejoin, a promoted
cluster's original primary given its role back, dead nodes restarted in their topology's order and rejoined, the
runtime settings applied again (``LocalLab.heal`` calls ``heal``)."""

from __future__ import annotations

import signal
import subprocess
from typing import Any

import pymysql

from benchlib.errors import LabError
from benchlib.lab import faults, isolation, node_hosts, procs, state, wan
from benchlib.lab.base import Progress
from benchlib.lab.layout import NodePlan

__all__ = ["heal"]


def heal(lab: Any, timeout: float, progress: Progress) -> tuple[list[str], list[str]]:
    """Heal ``lab`` (a ``LocalLab``): links up, frozen nodes thawed, roles restored, a promoted cluster's primary back,
    dead nodes restarted and rejoined; returns (the nodes restarted, what was done, in words)."""
    how: list[str] = []
    if lab.layout.sites and not wan.is_up(lab.layout, lab.record.shaper, lab.record.link_pid):
        progress("WAN links are down: restoring them")
        lab.relink()
    for site in lab.layout.sites.values():  # a cut a run did not release
        if _link_down(lab, site.name):
            faults.set_site_link(lab.layout, site.name, up=True)
            how.append(f"site {site.name}'s link up again")
    cuts = isolation.leftovers(lab.layout)  # a node a run did not let back into its cluster
    if cuts:
        isolation.remove(cuts)
        how.append(f"{len(cuts)} cut route{'s' if len(cuts) > 1 else ''} between sites removed")
    for name, pid in lab.record.pids.items():  # a freeze a run did not release
        if pid and (info := procs.proc_info(pid)) is not None and info.state == "T":
            procs.signal_if_ours(pid, lab.layout.nodes[name].marker, signal.SIGCONT)
            how.append(f"{name} thawed (SIGCONT)")
    restarted: list[str] = []
    for cluster in list(lab.record.moved):
        lab.topology(cluster).after_heal([], timeout)  # every node back in its role (GR: node 1 primary again)
        with state.update(lab.dir) as rec:
            rec.moved = [c for c in rec.moved if c != cluster]
        lab.record.moved = [c for c in lab.record.moved if c != cluster]
        how.append(f"{cluster}: roles restored")
    for cluster, promoted in list(lab.record.promoted.items()):
        progress(f"{cluster}: giving {lab.topology(cluster).nodes[0].name} its primary role back")
        how.append(_restore(lab, cluster, lab.node(promoted), timeout))
        restarted.append(lab.topology(cluster).nodes[0].name)
    for cluster in lab.spec.clusters:
        topo = lab.topology(cluster)
        dead = [n for n in topo.nodes if not lab.health.is_up(n)]
        if not dead:
            if (done := topo.ensure_front(timeout)) is not None:
                how.append(f"{cluster}: {done}")
            continue
        # a node killed a moment ago may still hold its port and socket: wait until it is gone
        procs.wait_gone([p for n in dead if (p := lab.pid(n))], 30)
        topo.before_restart(dead, timeout)
        for group in topo.restart_order(dead):
            if not group:
                continue
            progress(f"restarting {', '.join(n.name for n in group)}")
            lab.start_nodes(group)
            lab.wait_connectable(group, timeout, "restart")
            topo.after_group(group, timeout)
        try:
            lab.reapply_settings(topo, dead)
            topo.after_heal(dead, timeout)
        except pymysql.err.MySQLError as exc:
            raise LabError(f"{cluster}: heal failed: {exc.args[-1] if exc.args else exc}",
                           hint="benchlib lab status; if a node cannot rejoin: benchlib lab down, then up") from None
        restarted += [n.name for n in dead]
        how.append(f"restarted {', '.join(n.name for n in dead)}: "
                                + topo.rejoin_path(dead))
    return restarted, how


def _link_down(lab: Any, site: str) -> bool:
    s = lab.layout.sites[site]
    res = subprocess.run(["ip", "-n", s.netns, "-o", "link", "show", s.tun], capture_output=True, text=True)
    flags = res.stdout.partition("<")[2].partition(">")[0].split(",")
    return res.returncode == 0 and "UP" not in flags


def _restore(lab: Any, cluster: str, promoted: NodePlan, timeout: float) -> str:
    topo = lab.topology(cluster)
    how = node_hosts.restore(topo, promoted, lab.hosts(), timeout)
    lab.reapply_settings(topo, topo.nodes)
    lab.record_promotion(cluster, None)
    return how
