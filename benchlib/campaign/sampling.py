"""Everything sampled during a run, on any lab: heartbeats, each system's status probe, liveness, extras.

``build_sampling(lab, clusters)`` builds, per cluster (``sample(lab, targets)`` for clusters whose nodes and system a
run has already resolved: ``Target``), a heartbeat (writer on the cluster's
write node, a reader on every other node; the apply-time trigger where the lab allows it)
the status probe its *system* registers in ``STATUS_PROBES`` and the system's server counters; one liveness probe per
node; and the probes the lab's placement adds (``Lab.extra_probes``: local processes, or
remote server clocks). ``LabSampling`` is the session a run drives: start, wait in sync,
watch, wait for catch-up, stop, frames.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import pandas as pd

from benchlib.sampling.clock import ClockProbe
from benchlib.sampling.heartbeat import Heartbeat
from benchlib.sampling.probe import Connect
from benchlib.sampling.mysql import AuroraProbe, GroupReplicationProbe, MySQLReplicationProbe
from benchlib.sampling.probe import Probe, Sampler
from benchlib.systems import base as systems
from benchlib.sampling.status import (GaleraProbe, LivenessProbe, MariaDBReplicationProbe, ServerCountersProbe,
                                      StatusLog)

if TYPE_CHECKING:
    from benchlib.lab.base import Lab

__all__ = ["STATUS_PROBES", "LabSampling", "Target", "build_sampling", "sample"]

#: (connect, nodes writer first, log, clock, clocks or None) -> the cluster's status probe (None: none)
StatusFactory = Callable[[Connect, list[str], StatusLog, Callable[[], float], "ClockProbe | None"], "Probe | None"]

#: a system's status probe (``benchlib.catalogue.SystemFacts.status_probe``) -> the probe of one of its clusters
STATUS_PROBES: dict[str, StatusFactory] = {
    "mariadb": lambda c, nodes, log, clock, clocks: (MariaDBReplicationProbe(c, nodes[0], nodes[1:], log, clock)
                                                     if len(nodes) > 1 else None),
    "galera": lambda c, nodes, log, clock, clocks: GaleraProbe(c, nodes, log, clock),
    "pxc": lambda c, nodes, log, clock, clocks: GaleraProbe(c, nodes, log, clock, show_status=True),
    "mysql": lambda c, nodes, log, clock, clocks: (MySQLReplicationProbe(c, nodes[0], nodes[1:], log, clock, clocks)
                                                   if len(nodes) > 1 else None),
    "group_replication": lambda c, nodes, log, clock, clocks: GroupReplicationProbe(c, nodes, log, clock, clocks),
    "aurora": lambda c, nodes, log, clock, clocks: AuroraProbe(c, nodes[0], log, clock),
}


@dataclass(frozen=True)
class Target:
    """One cluster to sample: its name, its nodes (the write node first) and its system."""

    cluster: str
    nodes: list[str]
    system: systems.System


@dataclass
class LabSampling:
    heartbeats: dict[str, Heartbeat]
    status: StatusLog
    sampler: Sampler
    clocks: ClockProbe | None = None  # remote labs: every server's clock offset
    liveness: list[LivenessProbe] = field(default_factory=list)

    def now(self) -> float:
        """Seconds on the sampler's clock (0: when sampling started)."""
        return self.sampler.now()

    @property
    def origin(self) -> float:
        """The sampler's start on ``time.monotonic``."""
        return self.sampler.t0

    def errors(self) -> list[str]:
        """Probes that failed, each with its error (the probe was dropped, the rest went on)."""
        return [f"{name}: {exc}" for name, _, exc in self.sampler.errors]

    def skipped(self) -> dict[str, int]:
        """Ticks each probe missed because it fell behind."""
        return dict(self.sampler.skipped)

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
        probes = [w for p in self.sampler.probes for w in getattr(p, "warnings", [])]  # e.g. a host without PSI
        return [w for hb in self.heartbeats.values() for w in hb.warnings] + probes

    def stop(self) -> None:
        self.sampler.stop()

    def unresponsive(self, stall_s: float) -> str | None:
        """A reason naming the nodes that have not answered for ``stall_s`` seconds (None: all answer)."""
        silent = sorted(((p.silent_s(), p.node) for p in self.liveness if p.silent_s() > stall_s), reverse=True)
        if not silent:
            return None
        return ", ".join(f"{node} stopped answering (no reply for {s:.0f} s)" for s, node in silent)

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

    def wait_catch_up(self, end: float, timeout: float,
                      give_up: Callable[[], str | None] | None = None) -> tuple[float, float] | str | None:
        """After a load that ended at ``end`` (time.monotonic): (low, high) bounds of the time every node
        took to apply everything, from heartbeats around ``end``; None when not within ``timeout``; the
        reason ``give_up()`` returns (checked twice a second), e.g. a node that stopped answering."""
        next_check = time.monotonic()
        while time.monotonic() - end < timeout:
            found = [hb.catch_up_bounds(end) for hb in self.heartbeats.values()]
            bounds = [b for b in found if b is not None]
            if len(bounds) == len(found):
                return (max((b[0] for b in bounds), default=0.0), max((b[1] for b in bounds), default=0.0))
            if give_up is not None and time.monotonic() >= next_check:
                next_check = time.monotonic() + 0.5
                reason = give_up()
                if reason:
                    return reason
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


def build_sampling(lab: "Lab", clusters: list[str] | None = None, *, write_every: float = 0.1,
                   read_every: float = 0.02, extra: list[Probe] | None = None) -> LabSampling:
    """The sampling of ``clusters`` (default: all), their nodes and systems as the lab has them: see ``sample``."""
    targets = [Target(c, [n.name for n in lab.cluster_nodes(c)], systems.get(lab.spec.system_of(c)))
               for c in clusters or list(lab.spec.clusters)]
    return sample(lab, targets, write_every=write_every, read_every=read_every, extra=extra)


def sample(lab: "Lab", targets: list[Target], *, write_every: float = 0.1, read_every: float = 0.02,
           extra: list[Probe] | None = None) -> LabSampling:
    """The sampling of ``targets``; ``extra``: probes of the run's axes (the stale-read probe, ...:
    ``benchlib.axis.AxisRun.probes``), prepared."""
    clock = time.monotonic
    log = StatusLog()
    heartbeats: dict[str, Heartbeat] = {}
    probes: list[Probe] = []
    every = [n for t in targets for n in t.nodes]
    extras = lab.hooks.extra_probes(every, log, clock)
    clocks = next((p for p in extras if isinstance(p, ClockProbe)), None)
    for t in targets:
        nodes = t.nodes
        if len(nodes) > 1:
            trigger = set(nodes[1:]) if lab.hooks.heartbeat_triggers(t.cluster) else set()
            hb = Heartbeat(lab.connect, nodes[0], nodes[1:], trigger_on=trigger, write_every=write_every,
                           read_every=read_every, clock=clock, write_connect=lab.hooks.client_connect())
            heartbeats[t.cluster] = hb
            probes += hb.probes
        factory = STATUS_PROBES.get(t.system.facts.status_probe)
        status = factory(lab.connect, nodes, log, clock, clocks) if factory else None
        if status is not None:
            probes.append(status)
        wanted = list(dict.fromkeys([*t.system.status_counters, *lab.spec.counters]))
        probes.append(ServerCountersProbe(lab.connect, nodes, wanted, systems.GAUGES, log, clock))
    liveness = [LivenessProbe(lab.connect, n, clock, log=log) for n in every]
    probes += list(extra or [])  # the run's axes' probes
    return LabSampling(heartbeats, log, Sampler([*probes, *extras, *liveness]), clocks, liveness)
