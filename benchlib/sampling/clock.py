"""Clock offsets of remote servers and client hosts, estimated by the sampler (probes.md, "Cross-host
timestamps").

Each sample is a query of the remote clock (``SELECT UNIX_TIMESTAMP(SYSDATE(6))``, or ``date +%s.%N``
over SSH) bracketed by the sampler's own clock: sent at ``t_send``, answered at ``t_recv``. The remote
clock read ``remote`` somewhere in between, so ``offset = remote - (t_send + t_recv) / 2`` with an error
of at most half the round trip. Over a window the sample with the lowest round trip is the best
estimate. Offsets are recorded in the manifest and applied to cross-host timestamps; a negative lag
after correction is kept as it is (a skew signal), never clamped to zero.

``ClockProbe`` samples every node of a remote lab once a second and logs the estimate as the
``clock_offset_ms`` metric; the run's manifest records the estimates.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable

from benchlib.sampling.probe import Connect
from benchlib.sampling.probe import Probe
from benchlib.sampling.status import StatusLog

SERVER_NOW = "SELECT UNIX_TIMESTAMP(SYSDATE(6)) AS now"


@dataclass(frozen=True)
class Offset:
    offset_s: float  # remote clock minus the sampler's clock
    error_s: float  # at most half the round trip of the sample it comes from
    rtt_s: float
    samples: int

    def to_local(self, remote_time_s: float) -> float:
        """A remote timestamp on the sampler's clock."""
        return remote_time_s - self.offset_s

    def as_dict(self) -> dict[str, float | int]:
        return {"offset_s": self.offset_s, "error_s": self.error_s, "rtt_s": self.rtt_s, "samples": self.samples}


class OffsetEstimator:
    """Keeps the last ``window`` samples of one remote clock; ``estimate()`` takes the lowest round trip."""

    def __init__(self, window: int = 64):
        self._samples: deque[tuple[float, float, float]] = deque(maxlen=window)
        self.count = 0

    def add(self, t_send: float, remote: float, t_recv: float) -> None:
        if t_recv < t_send:
            raise ValueError(f"a sample answered before it was sent ({t_send} > {t_recv})")
        self._samples.append((t_send, remote, t_recv))
        self.count += 1

    def estimate(self) -> Offset | None:
        if not self._samples:
            return None
        t_send, remote, t_recv = min(self._samples, key=lambda s: s[2] - s[0])
        rtt = t_recv - t_send
        return Offset(remote - (t_send + t_recv) / 2, rtt / 2, rtt, self.count)


def corrected_lag_s(applied_remote_s: float, committed_remote_s: float, applied_offset: Offset,
                    committed_offset: Offset) -> float:
    """Lag between a commit timestamp from one host's clock and an apply timestamp from another's, both
    moved to the sampler's clock. Negative values are returned as they are: clamping would hide skew."""
    return applied_offset.to_local(applied_remote_s) - committed_offset.to_local(committed_remote_s)


def sample_server_clock(cur: Any, wall: Callable[[], float] = time.time) -> tuple[float, float, float]:
    """One sample of a server's clock through a cursor: (t_send, the server's clock, t_recv)."""
    t_send = wall()
    cur.execute(SERVER_NOW)
    remote = float(cur.fetchone()["now"])
    return t_send, remote, wall()


def server_offset(conn: Any, samples: int = 5, pause_s: float = 0.0) -> Offset:
    """A server's clock offset from ``samples`` queries on one connection (lowest round trip)."""
    est = OffsetEstimator(window=samples)
    with conn.cursor() as cur:
        for k in range(samples):
            if k and pause_s:
                time.sleep(pause_s)
            est.add(*sample_server_clock(cur))
    found = est.estimate()
    assert found is not None  # samples >= 1
    return found


class ClockProbe(Probe):
    """Every node's clock offset from the sampler's wall clock, lowest round trip in a 60-sample window."""

    def __init__(self, connect: Connect, nodes: list[str], log: StatusLog, clock: Callable[[], float],
                 interval_s: float = 1.0, wall: Callable[[], float] = time.time):
        self.name, self.connect, self.nodes, self.log, self.clock = "clocks", connect, nodes, log, clock
        self.interval_s, self.wall, self.lane = interval_s, wall, "clocks"
        self.estimators = {n: OffsetEstimator(window=60) for n in nodes}
        self.conns: dict[str, Any] = {}

    def setup(self) -> None:
        self.conns = {n: self.connect(n) for n in self.nodes}
        for _ in range(3):  # a first estimate before the load starts
            self.sample(0.0)

    def sample(self, t: float) -> None:
        for n, conn in self.conns.items():
            with conn.cursor() as cur:
                self.estimators[n].add(*sample_server_clock(cur, self.wall))
            best = self.estimators[n].estimate()
            if best is not None:
                self.log.add(self.clock(), n, "clock_offset_ms", best.offset_s * 1000)

    def offsets(self) -> dict[str, Offset]:
        found = {n: e.estimate() for n, e in self.estimators.items()}
        return {n: o for n, o in found.items() if o is not None}

    def close(self) -> None:
        for c in self.conns.values():
            c.close()
