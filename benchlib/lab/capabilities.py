"""The embedded lab's capabilities beyond the core ``Lab``: faults (``LocalFaults``: kill, freeze, cut, promote, rejoin
its own servers) and a proxy in front of a cluster (``LocalProxy``: HAProxy). ``LocalLab.faults()`` and
``LocalLab.proxy()`` give them; a remote lab gives None and says why (``lacks``)."""

from __future__ import annotations

from typing import Any, Callable

import pymysql

from benchlib.errors import LabError
from benchlib.lab import faults, procs, state
from benchlib.lab.base import Fault, Promotion

__all__ = ["LocalFaults", "LocalProxy"]


class LocalFaults:
    """``benchlib.lab.base.FaultControl`` of the embedded lab."""

    def __init__(self, lab: Any):  # a LocalLab (this module is imported by it)
        self.lab = lab

    def fault_refusal(self, cluster: str, kind: str, nodes: list[str], site: str | None) -> str | None:
        return self.lab.spec.fault_refusal(kind, nodes, site)

    def inject(self, cluster: str, fault: Fault) -> None:
        faults.inject(self.lab.layout, self.lab.record.pids, fault)

    def release(self, cluster: str, fault: Fault) -> None:
        faults.release(self.lab.layout, self.lab.record.pids, fault)

    def promote(self, cluster: str, failed: str, *, timeout: float = 60.0) -> Promotion:
        topo = self.lab.topology(cluster)
        if not hasattr(topo, "point_at"):
            raise LabError(f"{cluster}: a {topo.name} cluster has no primary for the lab to promote")
        done = faults.promote(topo, self.lab.node(failed), self.lab.is_up, timeout)
        with state.update(self.lab.dir) as rec:
            rec.promoted[cluster] = done.primary
        self.lab.record.promoted[cluster] = done.primary
        return done

    def rejoin(self, cluster: str, node: str, *, full: bool = False, timeout: float = 300.0,
               starting: Callable[[], None] | None = None) -> str:
        topo = self.lab.topology(cluster)
        me = self.lab.node(node)
        if self.lab.is_up(me):
            raise LabError(f"{node} is running: there is nothing to rejoin")
        procs.wait_gone([p for p in [self.lab.pid(me)] if p], 30)
        survivors = [n for n in topo.nodes if n is not me and self.lab.is_up(n)]
        topo.before_rejoin(me, survivors, timeout)
        forced = topo.force_full_transfer(me, survivors) if full else ""
        if starting is not None:
            starting()
        self.lab.start_nodes([me])
        self.lab.wait_connectable([me], timeout, "restart")
        topo.after_rejoin(me, timeout)
        self.lab.reapply_settings(topo, [me])
        path = topo.rejoin_path([me])
        if cluster not in self.lab.record.moved:  # the group's primary may have moved with the fault: heal restores it
            with state.update(self.lab.dir) as rec:
                rec.moved.append(cluster)
            self.lab.record.moved.append(cluster)
        return f"{path} ({forced})" if forced else path


class LocalProxy:
    """``benchlib.lab.base.ProxyControl`` of the embedded lab: HAProxy, with the load's account."""

    def __init__(self, lab: Any):  # a LocalLab (this module is imported by it)
        self.lab = lab

    def front(self, cluster: str, serving):
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
