"""Where a lab's nodes run, as its faults and its heal see them: one interface, and the layer written once over it.

``NodeHosts`` is what a lab does to the servers and hosts of its nodes: send a server a signal (kill, freeze, thaw),
cut a node off from its cluster and let it back, take a site's link down and up, stop servers cleanly and start them
(until they accept connections), copy one stopped node's data over another's. The embedded lab gives it over its own
processes and network namespaces (``LocalHosts``, ``benchlib.lab.capabilities``); a provisioned lab over SSH to the
hosts it built (``benchlib.provision.lab``). Written once over it, for both kinds:

- ``HostFaults``, the ``benchlib.lab.base.FaultControl`` both labs give: a fault injected and released by its kind, the
  promotion of an async or semi-sync cluster's most advanced replica (``benchlib.lab.faults.promote``), one killed
  node started again under the load (``rejoin``);
- ``restore``: a promoted cluster's original primary given its role back from a copy of the promoted node's data;
- ``reapply``: the lab's runtime settings applied again to restarted nodes.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Protocol

import pymysql

from benchlib.errors import LabError
from benchlib.lab import faults
from benchlib.lab.base import Fault, Promotion
from benchlib.lab.layout import NodePlan
from benchlib.schema import Cell

__all__ = ["HostFaults", "NodeHosts", "reapply", "restore"]


class NodeHosts(Protocol):
    """What a lab does to its nodes' servers and hosts (see the module docstring)."""

    #: the nodes' datadirs and logs are on this machine: a topology's rejoin reads and changes them (a Galera node's
    #: grastate.dat removed for a full state transfer, an error log read for how it came back)
    local_files: bool

    def refusal(self, cluster: str, kind: str, nodes: list[str], site: str | None) -> str | None:
        """Why these hosts cannot have this fault (None: they can), beyond what the lab's spec refuses."""

    def signal(self, node: str, what: str) -> bool:
        """``kill``, ``freeze`` or ``thaw`` the server of ``node``; False when it is not running."""

    def isolate(self, node: str) -> None:
        """Cut ``node`` off from the other nodes of its cluster (its clients still reach it)."""

    def let_back(self, node: str) -> None:
        """Undo ``isolate`` (a node killed meanwhile too: a lost host)."""

    def link(self, site: str, up: bool) -> None:
        """Take a site's link down or bring it up again."""

    def stop(self, nodes: list[NodePlan], timeout: float) -> None:
        """Stop the servers of ``nodes`` cleanly, until they are gone."""

    def start(self, nodes: list[NodePlan], timeout: float) -> None:
        """Start the servers of ``nodes``, until each accepts connections."""

    def gone(self, node: NodePlan, timeout: float) -> None:
        """Until a server just killed has exited (it may hold its port and socket a moment)."""

    def copy(self, src: NodePlan, dst: NodePlan) -> None:
        """Replace stopped ``dst``'s data by a copy of stopped ``src``'s, without what is ``src``'s own."""

    def is_up(self, node: NodePlan | str) -> bool:
        """Whether the server of ``node`` runs and answers."""


def inject(hosts: NodeHosts, fault: Fault) -> None:
    """A fault, by its kind: a node cut off from its cluster, a site's link down, or a signal to servers."""
    if fault.kind == "isolate":
        for name in fault.nodes:
            hosts.isolate(name)
    elif fault.kind == "cut":
        hosts.link(fault.site or "", up=False)
    else:
        for name in fault.nodes:
            if not hosts.signal(name, fault.kind):
                raise LabError(f"{name} is not running: there is nothing to {fault.kind}",
                               hint="benchlib lab heal restarts it")


def release(hosts: NodeHosts, fault: Fault) -> None:
    """The end of a fault that holds (a cut, an isolation, a freeze); a kill is not released (the heal restarts)."""
    if fault.kind == "isolate":
        for name in fault.nodes:
            hosts.let_back(name)
    elif fault.kind == "cut":
        hosts.link(fault.site or "", up=True)
    elif fault.kind == "freeze":
        for name in fault.nodes:
            hosts.signal(name, "thaw")


def reapply(topo: Any, settings: dict[str, Cell], nodes: list[NodePlan]) -> None:
    """The lab's runtime settings of ``topo``'s cluster applied again to ``nodes`` (restarted: they start from their
    configuration files), in the order they were made; a whole-cluster applier (semi-sync on or off) on every node."""
    for key, value in settings.items():
        whole = topo.ctx.rules.settings[key].apply is not None
        topo.apply_setting(key, value, topo.nodes if whole else nodes)


def restore(topo: Any, promoted: NodePlan, hosts: NodeHosts, timeout: float) -> str:
    """Give a promoted cluster's original write node its role back (``benchlib.lab.faults.restore``: both stopped,
    the promoted node's data copied over the old primary's, both started, every replica following it); returns how."""
    return faults.restore(topo, promoted, lambda nodes: hosts.stop(nodes, timeout),
                          lambda nodes: hosts.start(nodes, timeout), hosts.copy, timeout)


class HostFaults:
    """``benchlib.lab.base.FaultControl`` of a lab whose nodes' hosts it reaches (``NodeHosts``): the embedded lab and
    a provisioned one alike. ``lab`` gives its spec (what it refuses), its topologies, its runtime settings
    (``tuning``), and ``record_promotion`` and ``record_moved`` (what its heal undoes)."""

    def __init__(self, lab: Any, hosts: NodeHosts):
        self.lab, self.hosts = lab, hosts

    def _node(self, topo: Any, name: str) -> NodePlan:
        return next(n for n in topo.nodes if n.name == name)

    def fault_refusal(self, cluster: str, kind: str, nodes: list[str], site: str | None) -> str | None:
        return self.lab.spec.fault_refusal(kind, nodes, site) or self.hosts.refusal(cluster, kind, nodes, site)

    def inject(self, cluster: str, fault: Fault) -> None:
        inject(self.hosts, fault)

    def release(self, cluster: str, fault: Fault) -> None:
        release(self.hosts, fault)

    def promote(self, cluster: str, failed: str, *, timeout: float = 60.0, discard: bool = False) -> Promotion:
        topo = self.lab.topology(cluster)
        if not hasattr(topo, "point_at"):
            raise LabError(f"{cluster}: a {topo.name} cluster has no primary for the lab to promote")
        done = faults.promote(topo, self._node(topo, failed), self.hosts.is_up, timeout, discard=discard)
        self.lab.record_promotion(cluster, done.primary)
        return done

    def switchover(self, cluster: str, *, timeout: float = 60.0, wait_s: float = 15.0) -> Promotion:
        """A planned change of primary (``benchlib.lab.faults.switchover``, Group Replication's own for a group);
        the heal gives the original write node its role back."""
        topo = self.lab.topology(cluster)
        if hasattr(topo, "point_at"):
            done = faults.switchover(topo, timeout, wait_s=wait_s)
            self.lab.record_promotion(cluster, done.primary)
        elif hasattr(topo, "switchover"):
            done = topo.switchover(timeout, wait_s=wait_s)
            self.lab.record_moved(cluster)
        else:
            raise LabError(f"{cluster}: a {topo.name} cluster has no primary role to move")
        return done

    def errant(self, cluster: str, old: str, new: str, *, timeout: float = 60.0) -> dict[str, Any]:
        """What the old primary ``old`` of a promoted ``cluster`` holds that the promoted ``new`` lacks: started
        again (crash recovery commits what its binary log holds) when it is down, counted, stopped again (the heal
        rebuilds it). ``count``, ``gtids`` (in GTID words), ``restarted``, ``s``."""
        topo = self.lab.topology(cluster)
        o, n = self._node(topo, old), self._node(topo, new)
        t0 = time.monotonic()
        restarted = not self.hosts.is_up(o)
        if restarted:
            self.hosts.gone(o, 30)
            self.hosts.start([o], timeout)
        try:
            with topo.connect(o) as oc, topo.connect(n) as nc:
                count, gtids = faults.errant(topo, oc, nc)
        except pymysql.MySQLError as exc:
            raise LabError(f"{cluster}: could not compare {old}'s transactions with {new}'s: "
                           f"{exc.args[-1] if exc.args else exc}") from None
        finally:
            if restarted:
                self.hosts.stop([o], timeout)
        return {"node": old, "against": new, "count": count, "gtids": gtids, "restarted": restarted,
                "s": time.monotonic() - t0}

    def rejoin(self, cluster: str, node: str, *, full: bool = False, timeout: float = 300.0,
               starting: Callable[[], None] | None = None) -> str:
        """Start the killed ``node`` again while its cluster works on (with ``full``: by its cluster's full path,
        a state transfer or a clone); returns how it came back."""
        if not self.hosts.local_files:
            raise LabError(f"{cluster}: rejoin under load runs on the embedded lab only so far (it reads and changes "
                           "the node's files, which are on its host here)")
        topo = self.lab.topology(cluster)
        me = self._node(topo, node)
        if self.hosts.is_up(me):
            raise LabError(f"{node} is running: there is nothing to rejoin")
        self.hosts.gone(me, 30)
        survivors = [n for n in topo.nodes if n is not me and self.hosts.is_up(n)]
        topo.before_rejoin(me, survivors, timeout)
        forced = topo.force_full_transfer(me, survivors) if full else ""
        if starting is not None:
            starting()
        self.hosts.start([me], timeout)
        topo.after_rejoin(me, timeout)
        reapply(topo, self.lab.tuning.settings(cluster), [me])
        path = topo.rejoin_path([me])
        self.lab.record_moved(cluster)  # the group's primary may have moved with the fault: the heal restores it
        return f"{path} ({forced})" if forced else path
