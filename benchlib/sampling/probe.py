"""Probes and the sampler that runs them.

A probe is one small object with a period: ``setup()`` once, ``sample(t)`` every
``interval_s`` seconds (first after ``offset_s``), ``close()`` at the end. Probes
run in *lanes*: one thread per lane, taking its probes in due order on a
drift-free schedule (ticks that fall behind are skipped and counted, not bunched).
Probes that may block (a heartbeat commit waiting a WAN round trip for a semi-sync
ack) get a lane of their own; quick polls share one, which costs a fraction of a
thread each (measured: one lane polling four nodes at 50 Hz uses less than half
the CPU of four threads doing the same). A probe may also schedule itself
(``next_due``) and be woken early by another probe (``wake``): heartbeat readers poll
right after each commit instead of at a fixed rate. A probe whose ``sample`` raises
is recorded in ``errors`` and dropped; the rest of its lane goes on.
Probes for other systems (MySQL 8, Group Replication, Aurora) are more subclasses.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any, Callable

#: how a probe reaches a node: node name -> a new connection (pymysql, DictCursor, autocommit)
Connect = Callable[..., Any]  # (node, *, timeout=...) -> a connection


class Probe:
    name: str = "probe"
    interval_s: float = 1.0
    offset_s: float = 0.0  # phase: first tick this long after the sampler starts
    lane: str | None = None  # probes with the same lane share a thread; None: a thread of its own

    def setup(self) -> None:
        """Open connections, create what the probe needs. Runs on the probe's lane."""

    def next_due(self, last_due: float, now: float) -> float | None:
        """When to sample next (sampler time); None: not until woken. Default: every ``interval_s``
        after the last due time (drift-free)."""
        return last_due + self.interval_s

    def bind_wake(self, wake) -> None:
        """Receives the function that wakes this probe's lane (for probes woken by others)."""

    def sample(self, t: float) -> None:
        """Take one sample at sampler time ``t`` (seconds)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release connections. Runs on the probe's lane."""


class Sampler:
    def __init__(self, probes: list[Probe]):
        self.probes = probes
        self.t0 = time.monotonic()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        lanes: dict[str, list[Probe]] = defaultdict(list)
        for p in probes:
            lanes[p.lane or f"own:{p.name}:{id(p)}"].append(p)
        self.lanes = dict(lanes)
        self._ready = threading.Barrier(len(self.lanes) + 1)
        self._wakes: list[threading.Event] = []
        self.errors: list[tuple[str, float, BaseException]] = []
        self.skipped: dict[str, int] = {p.name: 0 for p in probes}

    def now(self) -> float:
        return time.monotonic() - self.t0

    def start(self) -> "Sampler":
        for lane, probes in self.lanes.items():
            th = threading.Thread(target=self._run, args=(probes,), name=f"lane-{lane}", daemon=True)
            th.start()
            self._threads.append(th)
        self._ready.wait()  # every probe is set up before the caller starts the load
        if self.errors:
            self.stop()
            name, _, exc = self.errors[0]
            raise RuntimeError(f"probe {name} failed to set up: {exc}") from exc
        return self

    def _run(self, probes: list[Probe]) -> None:
        wake = threading.Event()
        self._wakes.append(wake)  # stop() wakes the lane at once
        ready = []
        for p in probes:
            try:
                p.bind_wake(wake.set)
                p.setup()
                ready.append(p)
            except BaseException as exc:  # reported by start()
                self.errors.append((p.name, self.now(), exc))
        self._ready.wait()
        start = self.now()
        due: dict[int, float | None] = {i: start + p.offset_s for i, p in enumerate(ready)}

        def rearm() -> None:  # woken: probes that were idle say when they want to run now
            wake.clear()
            for j, d in due.items():
                if d is None:
                    due[j] = ready[j].next_due(self.now(), self.now())

        try:
            while due and not self._stop.is_set():
                pending = {i: d for i, d in due.items() if d is not None}
                if not pending:
                    wake.wait(0.5)  # until another probe wakes us (or a periodic re-check)
                    rearm()
                    continue
                i = min(pending, key=lambda k: pending[k])
                wait = pending[i] - self.now()
                if wait > 0 and wake.wait(wait):
                    rearm()
                    continue
                if self._stop.is_set():
                    break
                p = ready[i]
                t = self.now()
                try:
                    p.sample(t)
                except Exception as exc:
                    self.errors.append((p.name, t, exc))
                    del due[i]  # dropped from the lane
                    continue
                nxt = p.next_due(pending[i], self.now())
                if nxt is not None and nxt < self.now() - p.interval_s:  # fell behind: skip missed ticks
                    missed = int((self.now() - nxt) // p.interval_s)
                    self.skipped[p.name] += missed
                    nxt += missed * p.interval_s
                due[i] = nxt
        finally:
            for p in ready:
                try:
                    p.close()
                except Exception:
                    pass

    def stop(self, timeout: float = 5.0) -> None:
        """Stop every lane; wait at most ``timeout`` seconds in all (a lane blocked on a node that stopped
        answering is left behind as a daemon thread: it ends when the node answers or goes away)."""
        self._stop.set()
        for wake in self._wakes:
            wake.set()
        deadline = time.monotonic() + timeout
        for th in self._threads:
            th.join(timeout=max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> "Sampler":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
