"""Everything sampled during a run on a local lab: heartbeats, cluster state, processes.

``for_lab(lab)`` builds, per cluster, a heartbeat (writer on node 1, a reader on every
other node, the apply trigger on MariaDB replicas) and the status probe its topology
registers in ``STATUS_PROBES``, plus one process probe for every local node.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import pandas as pd

from benchlib.sampling.heartbeat import Heartbeat
from benchlib.sampling.probe import Probe, Sampler
from benchlib.sampling.status import GaleraProbe, MariaDBReplicationProbe, ProcessProbe, StatusLog

if TYPE_CHECKING:
    from benchlib.lab.lab import Lab

StatusFactory = Callable[["Lab", list[str], StatusLog, Callable[[], float]], Probe]


def _replication(lab: "Lab", nodes: list[str], log: StatusLog, clock) -> Probe:
    return MariaDBReplicationProbe(lab.connect, nodes[0], nodes[1:], log, clock)


def _galera(lab: "Lab", nodes: list[str], log: StatusLog, clock) -> Probe:
    return GaleraProbe(lab.connect, nodes, log, clock)


#: topology -> status probe of one of its clusters (a topology without an entry gets none)
STATUS_PROBES: dict[str, StatusFactory] = {"async": _replication, "semisync": _replication, "galera": _galera}
#: topologies whose non-writer nodes apply replicated row events with triggers (MariaDB replicas)
APPLY_TRIGGER = {"async", "semisync"}


@dataclass
class LabSampling:
    heartbeats: dict[str, Heartbeat]
    status: StatusLog
    sampler: Sampler
    clocks: Any = None  # remote labs: the ClockProbe estimating every server's clock offset

    def offsets(self) -> dict[str, dict[str, float]]:
        """Every remote server's clock offset from the sampler ({} on a local lab: one clock)."""
        if self.clocks is None:
            return {}
        return {n: o.as_dict() for n, o in self.clocks.offsets().items()}

    def start(self) -> "LabSampling":
        for hb in self.heartbeats.values():
            hb.prepare()
        self.sampler.start()
        return self

    @property
    def warnings(self) -> list[str]:
        return [w for hb in self.heartbeats.values() for w in hb.warnings]

    def stop(self) -> None:
        self.sampler.stop()

    def caught_up(self) -> bool:
        return all(hb.caught_up() for hb in self.heartbeats.values())

    def wait_caught_up(self, timeout: float) -> float | None:
        """Seconds until every node has seen the last heartbeat (None: not within ``timeout``)."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if self.caught_up():
                return time.monotonic() - t0
            time.sleep(0.01)
        return None

    def wait_catch_up(self, end: float, timeout: float) -> tuple[float, float] | None:
        """After a load that ended at ``end`` (time.monotonic): (low, high) bounds of the time every node
        took to apply everything, from heartbeats around ``end`` (None: not within ``timeout``)."""
        while time.monotonic() - end < timeout:
            bounds = [hb.catch_up_bounds(end) for hb in self.heartbeats.values()]
            if all(b is not None for b in bounds):
                return (max((b[0] for b in bounds), default=0.0), max((b[1] for b in bounds), default=0.0))
            time.sleep(0.01)
        return None

    def current_lag_ms(self) -> float | None:
        """The worst live lag over the sampled clusters (None: no cluster has replicas)."""
        return max((hb.current_lag_ms() for hb in self.heartbeats.values()), default=None)

    def lag_frame(self) -> pd.DataFrame:
        frames = [hb.frame(self.sampler.t0) for hb in self.heartbeats.values()]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def cluster_frame(self) -> pd.DataFrame:
        return self.status.frame(self.sampler.t0)


def for_lab(lab: "Lab", clusters: list[str] | None = None, *, write_every: float = 0.1,
            read_every: float = 0.02) -> LabSampling:
    if getattr(lab, "remote", False):
        from benchlib.sampling.remote import for_remote_lab

        return for_remote_lab(lab, clusters, write_every=write_every, read_every=read_every)
    clock = time.monotonic
    log = StatusLog()
    heartbeats: dict[str, Heartbeat] = {}
    probes: list[Probe] = []
    pids: dict[str, int] = {}
    for cluster in clusters or list(lab.spec.clusters):
        topology = lab.spec.clusters[cluster].topology
        nodes = [n.name for n in lab.layout.cluster_nodes(cluster)]
        if len(nodes) > 1:
            trigger = set(nodes[1:]) if topology in APPLY_TRIGGER else set()
            hb = Heartbeat(lab.connect, nodes[0], nodes[1:], trigger_on=trigger, write_every=write_every,
                           read_every=read_every, clock=clock)
            heartbeats[cluster] = hb
            probes += hb.probes
        if topology in STATUS_PROBES:
            probes.append(STATUS_PROBES[topology](lab, nodes, log, clock))
        pids.update({n: lab.pid(n) for n in nodes if lab.pid(n)})
    probes.append(ProcessProbe(pids, log, clock))
    return LabSampling(heartbeats, log, Sampler(probes))
